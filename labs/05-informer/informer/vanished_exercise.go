//go:build exercise

// Exercise relist-final-state-unknown: the stub of vanished.go, built with
// -tags exercise. README: "Write it yourself", relist-final-state-unknown.
// Check: scripts/labs check 05 relist-final-state-unknown.

package informer

// vanished is called when a relist (after a 410, or a watch that ended in
// another error) replaces the cache: listed holds the keys of
// the objects in the new list, cache still holds the old state.
//
// TODO(exercise relist-final-state-unknown): Goal: every object deleted
// while the watch was down still reaches the handlers' OnDelete after the
// relist, with the last state the cache knew of it, in key order.
//
// As shipped, this stub finds nothing: an object deleted while the watch was
// down silently leaves the cache, and no handler hears OnDelete.
// TestRelistDeletesWithFinalStateUnknown shows the handler calls as a diff
// from the expected ones.
func vanished(cache *Indexer, listed map[string]bool) []DeletedFinalStateUnknown {
	return nil
}
