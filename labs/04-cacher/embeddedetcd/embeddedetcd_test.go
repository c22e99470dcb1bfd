package embeddedetcd

import (
	"testing"
	"time"
)

// TestSecondServerOnADirInUseFailsAtOnce: etcd would wait for ever on the
// first server's lock of its bbolt file; Start says the directory is in use
// instead, and the first server goes on serving.
func TestSecondServerOnADirInUseFailsAtOnce(t *testing.T) {
	dir := t.TempDir()
	first, err := Start(Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()

	type result struct {
		s   *Server
		err error
	}
	done := make(chan result, 1)
	go func() {
		s, err := Start(Config{Dir: dir})
		done <- result{s, err}
	}()
	select {
	case r := <-done:
		if r.err == nil {
			r.s.Close()
			t.Fatal("a second etcd started on a directory in use")
		}
		if want := "etcd dir " + dir + " is in use (another miniapiserver?)"; r.err.Error() != want {
			t.Fatalf("error %q, want %q", r.err, want)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the second Start still waits after 20s: it is waiting for the lock")
	}
	if _, err := first.Client.Put(t.Context(), "/still", "serving"); err != nil {
		t.Errorf("the first server after the refused second: %v", err)
	}
}
