package labkit

import (
	"os/exec"
	"syscall"
)

// dieWithParent asks the kernel to SIGKILL cmd when this test binary dies
// (prctl PR_SET_PDEATHSIG, Linux only), even on SIGKILL. Off Linux the
// supervisor's own watch on its parent (it exits when orphaned) is the
// guarantee; here it is a second one.
func dieWithParent(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}
