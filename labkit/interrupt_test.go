package labkit

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// TestInterruptedTestBinaryRemovesItsCluster: a test binary that started a
// cluster of its own (none was up) and is stopped by Ctrl-C (SIGINT to its
// process group, as a terminal sends it) or by SIGTERM stops that cluster
// and removes its directory ($TMPDIR/labcluster-NNN: an etcd of ~100 MB and
// the CA's key), says so in one line, and leaves no process behind.
func TestInterruptedTestBinaryRemovesItsCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	if os.Getenv("LABKIT_HELPER") == "block" {
		t.Skip("the helper's own run")
	}
	t.Parallel()
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			// Each helper has its own process group, $TMPDIR and cluster.
			t.Parallel()
			tmp := t.TempDir()
			cmd := exec.Command(os.Args[0], "-test.run", "^TestHelperBlocks$", "-test.v")
			cmd.Env = append(cleanEnv(), envPrivateCluster+"=1", "LABKIT_HELPER=block", "TMPDIR="+tmp)
			var out lockedBuffer
			cmd.Stdout, cmd.Stderr = &out, &out
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			defer func() {
				syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
				<-exited
			}()
			// The helper test prints "blocking" once Main's cluster is up.
			err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 3*time.Minute, true, func(context.Context) (bool, error) {
				return strings.Contains(out.String(), "blocking"), nil
			})
			if err != nil {
				t.Fatalf("the helper did not start its cluster: %v\n%s", err, out.String())
			}
			// The cluster's directory; its supervisor may also put its socket
			// beside it (labcluster-PID.sock) when the directory's path is
			// too long for a unix socket, as t.TempDir's are.
			var dirs []string
			entries, _ := filepath.Glob(filepath.Join(tmp, "labcluster-*"))
			for _, e := range entries {
				if fi, err := os.Stat(e); err == nil && fi.IsDir() {
					dirs = append(dirs, e)
				}
			}
			if len(dirs) != 1 {
				t.Fatalf("cluster dirs in $TMPDIR: %v, want one", dirs)
			}
			target := cmd.Process.Pid // SIGTERM: to the test binary alone
			if sig == syscall.SIGINT {
				target = -target // Ctrl-C: to the whole process group
			}
			syscall.Kill(target, sig)
			select {
			case <-exited:
				exited <- nil // for the deferred kill
			case <-time.After(time.Minute):
				t.Fatalf("the test binary still runs a minute after %v\n%s", sig, out.String())
			}
			if left, _ := filepath.Glob(filepath.Join(tmp, "labcluster-*")); len(left) != 0 {
				t.Errorf("left in $TMPDIR after %v: %v", sig, left)
			}
			want := "labkit: " + sig.String() + ": stopped this test binary's cluster and removed " + dirs[0] + "\n"
			if !strings.Contains(out.String(), want) {
				t.Errorf("output lacks %q:\n%s", want, out.String())
			}
			noProcessNames(t, dirs[0]) // the supervisor and its components name it
		})
	}
}

// TestHelperBlocks is the test binary TestInterruptedTestBinaryRemovesItsCluster
// interrupts; it runs only there.
func TestHelperBlocks(t *testing.T) {
	if os.Getenv("LABKIT_HELPER") != "block" {
		t.Skip("run by TestInterruptedTestBinaryRemovesItsCluster")
	}
	os.Stdout.WriteString("blocking\n")
	<-time.After(2 * time.Minute) // the signal ends the process before this
}

// noProcessNames waits (up to 10s: a stopped component may take a moment to
// exit) until no process has s on its command line, and reports any left.
func noProcessNames(t *testing.T, s string) {
	t.Helper()
	var left []string
	wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		ps, err := exec.Command("ps", "-eo", "pid=,args=").Output()
		if err != nil {
			return false, err
		}
		left = nil
		for _, l := range strings.Split(string(ps), "\n") {
			if strings.Contains(l, s) {
				left = append(left, strings.TrimSpace(l))
			}
		}
		return len(left) == 0, nil
	})
	for _, l := range left {
		t.Errorf("still running: %s", l)
	}
}
