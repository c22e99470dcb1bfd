package main

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// cpuTime returns the CPU time (user + system) process pid has used so far,
// from /proc/PID/stat; ok is false where there is no /proc (macOS). Unlike
// wall time it does not depend on what else the machine is busy with, so it
// is the figure to compare when cutting the apiserver's start-up work.
func cpuTime(pid int) (d time.Duration, ok bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	// "pid (comm) state ppid ...": after the last ')', utime and stime are the
	// 12th and 13th fields, in clock ticks (USER_HZ, 100 on Linux).
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(f) < 13 {
		return 0, false
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond, true
}

// cpuNote is "1.23s CPU" for a running child, or "" where unknown.
func (sv *supervisor) cpuNote(name string) string {
	c, ok := sv.children[name]
	if !ok {
		return ""
	}
	d, ok := cpuTime(c.cmd.Process.Pid)
	if !ok {
		return ""
	}
	return fmt.Sprintf("%.2fs CPU", d.Seconds())
}

// detail is " (a, b)" for the non-empty parts, or "".
func detail(parts ...string) string {
	var out []string
	for _, p := range parts {
		if p != "" {
			out = append(out, p)
		}
	}
	if len(out) == 0 {
		return ""
	}
	return " (" + strings.Join(out, ", ") + ")"
}
