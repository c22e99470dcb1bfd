package main

import (
	"os/exec"
	"syscall"
)

// dieWithParent asks the kernel to SIGKILL cmd when this process dies
// (prctl PR_SET_PDEATHSIG, Linux only). The kernel ties it to the OS thread
// that forked, not the process; exitWhenOrphaned in the child covers that gap,
// and is the whole guarantee where this does not exist.
func dieWithParent(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}
