//go:build !exercise

// Upstream: k8s.io/apiserver@v0.36.4/pkg/storage/cacher/cacher.go
// (Cacher.triggerValuesThreadUnsafe and the valueWatchers of
// indexedWatchers: a watcher of one trigger value, a kubelet's
// spec.nodeName=node-1, is offered only the events of its value).
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
