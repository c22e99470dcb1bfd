//go:build unix

package embeddedetcd

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// lockGrace is how long dirInUse waits for a lock that a child process may
// hold for a moment (see dirInUse) before it calls the directory in use.
const lockGrace = 2 * time.Second

// dirInUse tells whether another etcd (in this process or another) has the
// data directory dir open: whether its bbolt file, member/snap/db, stays
// locked. bbolt locks that file with flock(2) (LOCK_EX, retried while it is
// held), so we ask for the same lock without waiting and let it go at once.
// A directory with no db yet is not in use.
//
// "Stays": a lock can outlive, by a moment, the etcd of this process that
// held it (a restart on the same directory). flock(2) locks belong to the
// open file, and a child process being started (os/exec: a script's curl or
// kubectl) holds a copy of every open file of this process from its fork
// until its exec closes them: milliseconds, on a busy machine tens of them.
// etcd itself locks its WAL without waiting (`openWALFiles`,
// go.etcd.io/etcd/server/v3@v3.7.0/storage/wal/wal.go:419-430) and ends the
// process when it cannot (`openWALFromSnapshot`,
// go.etcd.io/etcd/server/v3@v3.7.0/etcdserver/bootstrap.go:628-638). So a
// held lock is asked for again until lockGrace has passed; only then is the
// directory in use. (A stopping etcd closes its WAL, in `s.r.stop`, before
// its bbolt file, in `Cleanup`
// (go.etcd.io/etcd/server/v3@v3.7.0/etcdserver/server.go:829-831), and a
// child's exec lets go of both at once: once the db is free, so is the WAL.)
func dirInUse(dir string) (bool, error) {
	deadline := time.Now().Add(lockGrace)
	for {
		locked, err := dbLocked(dir)
		if err != nil || !locked {
			return false, err
		}
		if time.Now().After(deadline) {
			return true, nil
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// dbLocked tells whether dir's bbolt file is locked now.
func dbLocked(dir string) (bool, error) {
	f, err := os.Open(filepath.Join(dir, "member", "snap", "db"))
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer f.Close()
	switch err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); {
	case err == nil:
		return false, syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	case errors.Is(err, syscall.EWOULDBLOCK):
		return true, nil
	default:
		return false, err
	}
}
