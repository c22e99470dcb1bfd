//go:build unix

package clusterstate

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"syscall"
)

// Alive tells whether process pid runs. A process that has exited but not
// been reaped (a zombie: a detached supervisor's parent is init, which may
// take its time) still answers signal 0, so where /proc exists (Linux) its
// state is checked too.
func Alive(pid int) bool {
	if pid <= 0 || syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true // no /proc (macOS): trust the signal
	}
	// "pid (comm) STATE ...": comm may contain spaces, so look after the last ')'.
	fields := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	return len(fields) == 0 || fields[0] != "Z"
}
