//go:build exercise

// Exercise slow-watcher-cutoff: the stub of dispatch.go, built with -tags exercise.
// README: "Write it yourself", slow-watcher-cutoff. Check: scripts/labs check 03 slow-watcher-cutoff.

package memstorage

// dispatchLocked offers ev to the watcher w. It runs with the storage's lock
// held, once per watcher per write (recordLocked).
//
// TODO(exercise slow-watcher-cutoff): Goal: a watcher that cannot keep up
// never makes the storage wait, and never misses an event without knowing
// it.
//
// As shipped, this stub never blocks, but when a watcher's buffer is full it
// silently drops the event: that watcher's client misses it and never learns
// it. TestSlowWatcherIsTerminatedNotWaitedFor finds the slow watcher still
// open long after its buffers filled.
func (s *Storage) dispatchLocked(w *watcher, ev *event) {
	select {
	case w.input <- ev:
	default: // dropped: see the TODO
	}
}
