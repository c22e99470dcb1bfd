package embeddedetcd

import (
	"net"
	"net/url"
	"testing"
	"time"
)

// TestSecondServerOnADirInUseFails: etcd would wait for ever on the first
// server's lock of its bbolt file; Start says the directory is in use
// instead (once the lock has stayed held for lockGrace, 2 s), and the first
// server goes on serving.
func TestSecondServerOnADirInUseFails(t *testing.T) {
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

// TestStartRetriesWhenAPortIsTaken: a port found free can be taken by another
// process before etcd binds it (the test suite starts many servers at once).
// Start picks new ports and starts, instead of failing with "address already
// in use".
func TestStartRetriesWhenAPortIsTaken(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	picks := 0
	pickLoopbackURL = func() (url.URL, error) {
		picks++
		if picks == 1 {
			return url.URL{Scheme: "http", Host: taken.Addr().String()}, nil
		}
		return freeLoopbackURL()
	}
	defer func() { pickLoopbackURL = freeLoopbackURL }()

	s, err := Start(Config{})
	if err != nil {
		t.Fatalf("Start with the first client port taken: %v", err)
	}
	defer s.Close()
	if s.Endpoint == "http://"+taken.Addr().String() {
		t.Fatalf("etcd reports the taken port %s as its endpoint", s.Endpoint)
	}
	if picks < 4 {
		t.Fatalf("ports picked: %d, want a second pair after the taken one", picks)
	}
	if _, err := s.Client.Put(t.Context(), "k", "v"); err != nil {
		t.Fatalf("put after the retry: %v", err)
	}
}
