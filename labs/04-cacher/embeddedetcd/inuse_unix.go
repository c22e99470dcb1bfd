//go:build unix

package embeddedetcd

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
)

// dirInUse tells whether another etcd (in this process or another) has the
// data directory dir open: whether its bbolt file, member/snap/db, is
// locked. bbolt locks that file with flock(2) (LOCK_EX, retried while it is
// held), so we ask for the same lock without waiting and let it go at once.
// A directory with no db yet is not in use.
func dirInUse(dir string) (bool, error) {
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
