//go:build !exercise

// Upstream: k8s.io/apiserver@v0.37.0/pkg/storage/cacher/cacher.go
// (Cacher.dispatchEvent) and cache_watcher.go (cacheWatcher.nonblockingAdd,
// `cacheWatcher.add`: a watcher that cannot take an event within the dispatch
// budget is stopped, k8s.io/apiserver@v0.37.0/pkg/storage/cacher/cache_watcher.go:180-230).
//
// This is the solution of the exercise slow-watcher-cutoff (README: "Write it
// yourself"); dispatch_exercise.go is the stub built with -tags exercise.
// Simplified: upstream first waits up to a shared time budget (`dispatchTimeoutBudget`,
// k8s.io/apiserver@v0.37.0/pkg/storage/cacher/cacher.go:1033-1047)
// for blocked watchers; we cut a full watcher off at once.

package memstorage

// dispatchLocked offers ev to one watcher without ever blocking: the storage
// holds its lock here, so a watcher whose client reads slowly must not hold
// up writes or the other watchers. When w's buffer is full, w is terminated
// (forgetLocked closes its input; its stream ends and its client re-watches
// from the last RV it got, which the history can usually replay). Dropping
// the event and carrying on would be worse: the client would never know it
// missed one.
func (s *Storage) dispatchLocked(w *watcher, ev *event) {
	select {
	case w.input <- ev:
	default:
		s.forgetLocked(w)
	}
}
