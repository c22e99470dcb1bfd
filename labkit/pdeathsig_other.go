//go:build !linux

package labkit

import "os/exec"

// dieWithParent does nothing off Linux (macOS has no PR_SET_PDEATHSIG): the
// supervisor StartEmbedded starts exits on its own within 200ms of its
// parent's death (labcluster run without --detached watches its parent), and
// takes its components with it.
func dieWithParent(cmd *exec.Cmd) {}
