//go:build !unix

package clusterstate

import "os"

// Alive tells whether process pid runs. Off unix (labcluster itself does not
// run there) finding the process is the best available answer.
func Alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	p.Release()
	return true
}
