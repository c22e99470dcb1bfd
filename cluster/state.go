package main

// A cluster's state: the on-disk layout and state.json belong to
// github.com/listwatch-labs/listwatch-labs/clusterstate, shared with labkit, so
// the format is written down once. What is left here is labcluster's own.

import (
	"net"

	"github.com/listwatch-labs/listwatch-labs/clusterstate"
)

// State is state.json (clusterstate.State).
type State = clusterstate.State

// freePort asks the kernel for an unused loopback port. Another process could
// take it before we bind it again; on a lab machine that race is rare, and a
// clash shows up as a clear "address already in use" in the component's log.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
