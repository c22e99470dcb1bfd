package main

// A cluster's state: the on-disk layout and state.json belong to
// github.com/listwatch-labs/listwatch-labs/clusterstate, shared with labkit, so
// the format is written down once. What is left here is labcluster's own.

import (
	"github.com/listwatch-labs/listwatch-labs/clusterstate"
)

// State is state.json (clusterstate.State).
type State = clusterstate.State

// freePort is clusterstate.FreeLoopbackPort: a loopback port outside the
// range outgoing connections use, so none of the suite's many clients can
// take it between this check and the component's bind.
func freePort() (int, error) { return clusterstate.FreeLoopbackPort() }
