package informer

import "syscall"

// syscallECONNREFUSED makes errConnectionRefused look like a refused dial
// to utilnet.IsConnectionRefused, as a stopped apiserver's does.
const syscallECONNREFUSED = syscall.ECONNREFUSED
