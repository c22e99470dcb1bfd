//go:build unix

package clusterstate

import (
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// TestAliveZombieAndReaped: a process that exited is not alive, whether or
// not its parent has reaped it yet.
func TestAliveZombieAndReaped(t *testing.T) {
	cmd := exec.Command("sh", "-c", "exit 0")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	if _, err := os.Stat("/proc"); err == nil {
		// Linux: until Wait reaps it, the exited child is a zombie, which
		// still answers signal 0; Alive must look past that.
		deadline := time.After(10 * time.Second)
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for Alive(pid) {
			select {
			case <-deadline:
				t.Fatalf("pid %d: an exited, unreaped child still reported alive", pid)
			case <-tick.C: // look again
			}
		}
		if err := syscall.Kill(pid, 0); err != nil {
			t.Fatalf("pid %d was reaped already (%v): the zombie case went untested", pid, err)
		}
	}
	cmd.Wait()
	if Alive(pid) {
		t.Errorf("pid %d alive after being reaped", pid)
	}
	if !Alive(os.Getpid()) {
		t.Errorf("our own pid is not alive")
	}
	if Alive(0) || Alive(-1) {
		t.Errorf("non-pids reported alive")
	}
}
