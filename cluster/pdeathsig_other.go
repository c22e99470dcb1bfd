//go:build !linux

package main

import "os/exec"

// dieWithParent does nothing off Linux (macOS has no PR_SET_PDEATHSIG): each
// component runs exitWhenOrphaned, which notices within 200ms that its
// parent is gone and exits.
func dieWithParent(cmd *exec.Cmd) {}
