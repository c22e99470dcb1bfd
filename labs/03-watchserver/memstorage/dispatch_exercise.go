//go:build exercise

// Exercise slow-watcher-cutoff: the stub of dispatch.go, built with -tags exercise.
// README: "Write it yourself", slow-watcher-cutoff. Check: scripts/labs check 03 slow-watcher-cutoff.

package memstorage

// dispatchLocked offers ev to the watcher w. It runs with the storage's lock
// held, once per watcher per write (recordLocked).
//
// TODO(exercise slow-watcher-cutoff): this stub never blocks, but when w's
// buffer (w.input) is full it silently drops ev, so that watcher's client
// misses an event and never learns it. Keep never blocking, and end such a
// watcher instead: its stream closes, and the client re-watches from the
// last resourceVersion it saw. Look at what Stop and Close do to a watcher.
func (s *Storage) dispatchLocked(w *watcher, ev *event) {
	select {
	case w.input <- ev:
	default: // dropped: see the TODO
	}
}
