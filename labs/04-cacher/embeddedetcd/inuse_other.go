//go:build !unix

package embeddedetcd

// dirInUse cannot tell without flock(2): Start goes ahead, and a second etcd
// on a directory in use waits for the first to let go of it.
func dirInUse(dir string) (bool, error) { return false, nil }
