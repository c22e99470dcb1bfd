//go:build exercise

// Exercise trigger-values: the stub of trigger.go, built with -tags exercise.
// README: "Write it yourself", trigger-values. Check: scripts/labs check 04 trigger-values.

package cacher

// triggeredWatchersLocked is called by watchersFor, with c.mu held, after
// it has collected the unindexed watchers into buf. c.triggerFunc(obj) is an
// object's trigger value (a pod's spec.nodeName); c.watchers.byValue[v] are
// the watchers that watch exactly value v.
//
// TODO(exercise trigger-values): this stub offers events to no indexed
// watcher, so a kubelet watching its own node's pods never hears of one.
// Append the watchers of the object's value; and when ev.PrevObject had a
// different value (the pod moved), the watchers of that value too, so they
// see it leave. Never the same watcher twice.
func (c *Cacher) triggeredWatchersLocked(ev *watchCacheEvent, buf []*cacheWatcher) []*cacheWatcher {
	return buf
}
