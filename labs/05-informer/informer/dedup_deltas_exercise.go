//go:build exercise

// Exercise dedup-deletes: the stub of dedup_deltas.go, built with -tags exercise.
// README: "Write it yourself", dedup-deletes. Check: scripts/labs check 05 dedup-deletes.

package informer

// dedupDeltas is called by the DeltaFIFO each time it appends a delta to an
// object's Deltas (oldest first), and returns what to keep.
//
// TODO(exercise dedup-deletes): Goal: one deletion reaches the handlers
// once, with the best state known of the deleted object.
//
// As shipped, this stub keeps everything, so an object can reach the
// handlers as "Deleted, Deleted": once from the watch's DELETED event, still
// queued, and once more from a relist that no longer lists it (a
// DeletedFinalStateUnknown queued behind it).
// TestDeltaFIFOCollapsesDeletes shows the deltas the queue kept for one
// object, as a diff from the expected ones.
func dedupDeltas(deltas Deltas) Deltas {
	return deltas
}
