package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// How labs stops what it started when it is stopped itself. main turns
// SIGINT, SIGTERM and SIGPIPE into the end of ctx; a signal may reach labs
// alone (kill PID from a supervisor or a test harness), not its process
// group as a terminal's Ctrl-C does, so every child has to be stopped by
// labs through ctx, and so do the children of that child.

// groupCommand is exec.CommandContext for a command that starts others: go
// test runs the test binary, go run the program, go build the compiler, a
// script its commands. exec.CommandContext alone kills only the command it
// started when ctx ends, and that command's children run on, reparented
// (go test's binary, with the embedded cluster labkit started for it). So
// the command runs in a process group of its own, and when ctx ends the
// whole group gets SIGINT, as from Ctrl-C in a terminal: go itself waits
// for its child, a labkit test binary stops its cluster and removes its
// files, learn/trace stops its stack. What still runs groupGrace later
// gets SIGKILL.
//
// A group of its own is also outside the terminal's foreground group, so
// Ctrl-C reaches labs alone, which passes it on: the child gets one
// signal either way. Only the foreground group may read the terminal; none
// of these commands does (their stdin is /dev/null).
func groupCommand(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		pgid := cmd.Process.Pid // the group's leader: Setpgid made its pid the group's id
		if err := syscall.Kill(-pgid, syscall.SIGINT); err != nil {
			if err == syscall.ESRCH {
				return os.ErrProcessDone // it ended on its own as ctx did
			}
			return err
		}
		go killGroupAfter(pgid, groupGrace)
		return nil
	}
	return cmd
}

// groupGrace is how long a group has to stop after SIGINT: a test binary
// stopping its embedded cluster takes a few seconds.
const groupGrace = 15 * time.Second

// killGroupAfter sends SIGKILL to process group pgid if any process of it
// still runs after grace. It polls: a process can wait only for its own
// children, not for a group. It returns as soon as the group is gone (its
// id could then be reused by another group, which must not be killed).
func killGroupAfter(pgid int, grace time.Duration) {
	deadline := time.Now().Add(grace)
	for syscall.Kill(-pgid, 0) == nil {
		if time.Now().After(deadline) {
			syscall.Kill(-pgid, syscall.SIGKILL)
			return
		}
		time.Sleep(100 * time.Millisecond) // polling the group: there is nothing to wait on
	}
}

// interruptedCmd says that a signal (or the closing of our output) stopped
// the command, which has stopped its children; 130 is a shell's status for
// a command stopped by Ctrl-C (128 + SIGINT).
func interruptedCmd(u *ui) int {
	fmt.Fprintln(u.err, "labs: interrupted")
	return 130
}
