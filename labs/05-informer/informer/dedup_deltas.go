//go:build !exercise

// Upstream: k8s.io/client-go@v0.37.0/tools/cache/delta_fifo.go (dedupDeltas,
// isDeletionDup).
//
// This is the solution of the exercise dedup-deletes (README: "Write it
// yourself"); dedup_deltas_exercise.go is the stub built with -tags exercise.

package informer

// dedupDeltas collapses the two newest deltas of one object into one when
// both are Deleted: an object cannot be deleted twice, and a handler told
// twice would run its clean-up twice. Of the two, the one that knows the
// object's final state is kept; a DeletedFinalStateUnknown (a relist's guess)
// is kept only if both are guesses. Only the last pair needs a look: the
// queue runs this on every append, so no older pair can be a duplicate.
func dedupDeltas(deltas Deltas) Deltas {
	n := len(deltas)
	if n < 2 || deltas[n-1].Type != Deleted || deltas[n-2].Type != Deleted {
		return deltas
	}
	if _, unknown := deltas[n-2].Object.(DeletedFinalStateUnknown); unknown {
		deltas[n-2] = deltas[n-1]
	}
	return deltas[:n-1]
}
