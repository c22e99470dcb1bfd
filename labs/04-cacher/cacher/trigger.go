//go:build !exercise

// Upstream: `triggerValuesThreadUnsafe`, which reads the trigger value of
// an event's object and of its previous state
// (k8s.io/apiserver@v0.37.0/pkg/storage/cacher/cacher.go:879-894), and the
// `valueWatchers` of indexedWatchers
// (k8s.io/apiserver@v0.37.0/pkg/storage/cacher/cacher.go:143-146): a
// watcher of one trigger value, a kubelet's spec.nodeName=node-1, is
// offered only the events of its value. Upstream uses the trigger only when
// the request's predicate names the field in `IndexFields`
// (k8s.io/apiserver@v0.37.0/pkg/storage/cacher/cacher.go:555-565); ours
// whenever the field selector requires one exact value of it.
//
// This is the solution of the exercise trigger-values (README: "Write it
// yourself"); trigger_exercise.go is the stub built with -tags exercise.

package cacher

// triggeredWatchersLocked appends to buf the indexed watchers ev must be
// offered to: those watching the trigger value of the object now, and,
// if the change moved the object from another value (a pod rescheduled to
// another node), those watching the value it had before: they must see it
// leave (a DELETED, from convertToWatchEvent). Each watcher once. c.mu is
// held.
func (c *Cacher) triggeredWatchersLocked(ev *watchCacheEvent, buf []*cacheWatcher) []*cacheWatcher {
	v := c.triggerFunc(ev.Object)
	for _, w := range c.watchers.byValue[v] {
		buf = append(buf, w)
	}
	if ev.PrevObject != nil {
		if pv := c.triggerFunc(ev.PrevObject); pv != v {
			for _, w := range c.watchers.byValue[pv] {
				buf = append(buf, w)
			}
		}
	}
	return buf
}
