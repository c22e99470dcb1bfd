//go:build unix

package embeddedetcd

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"testing/synctest"
	"time"
)

// TestALockLetGoWithinTheGraceIsNotInUse: a child process being started
// holds a copy of this process's open files, and so their flock(2) locks,
// until its exec: an etcd that has just stopped here may look locked for
// that moment, and a restart on its directory must not be refused (nor
// reach etcd's own WAL lock, which would end the process). dirInUse waits
// out a lock let go within lockGrace, and calls one held longer in use. On
// fake time (synctest): the waits take no wall-clock time.
func TestALockLetGoWithinTheGraceIsNotInUse(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		db := filepath.Join(dir, "member", "snap", "db")
		if err := os.MkdirAll(filepath.Dir(db), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(db, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		lock := func() *os.File {
			t.Helper()
			f, err := os.Open(db)
			if err != nil {
				t.Fatal(err)
			}
			if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
				t.Fatal(err)
			}
			return f
		}

		// Held by "a child" that lets go halfway through the grace.
		child := lock()
		time.AfterFunc(lockGrace/2, func() { child.Close() }) // on the bubble's fake clock
		start := time.Now()
		if inUse, err := dirInUse(dir); err != nil || inUse {
			t.Fatalf("a lock let go after %v: in use %v, %v; want free once it is let go", lockGrace/2, inUse, err)
		}
		if waited := time.Since(start); waited < lockGrace/2 || waited >= lockGrace {
			t.Errorf("free after %v, want just after the lock was let go (%v)", waited, lockGrace/2)
		}

		// Held by another etcd: in use, once the grace has passed.
		other := lock()
		defer other.Close()
		start = time.Now()
		if inUse, err := dirInUse(dir); err != nil || !inUse {
			t.Fatalf("a lock held throughout: in use %v, %v; want in use", inUse, err)
		}
		if waited := time.Since(start); waited < lockGrace {
			t.Errorf("in use after %v, before the grace (%v) had passed", waited, lockGrace)
		}
	})
}
