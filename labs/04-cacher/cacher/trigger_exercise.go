//go:build exercise

// Exercise trigger-values: the stub of trigger.go, built with -tags exercise.
// README: "Write it yourself", trigger-values. Check: scripts/labs check 04 trigger-values.

package cacher

// triggeredWatchersLocked is called by watchersFor, with c.mu held, after
// it has collected the unindexed watchers into buf. c.triggerFunc(obj) is an
// object's trigger value (a pod's spec.nodeName); c.watchers.byValue[v] are
// the watchers that watch exactly value v.
//
// TODO(exercise trigger-values): Goal: an event is offered to every indexed
// watcher whose client must see it, a pod moving away from a node included,
// and to no other, each watcher once.
//
// As shipped, this stub offers events to no indexed watcher: a kubelet
// watching its own node's pods never hears of one.
// TestTriggeredWatchersOfOldAndNewValue says how many times each node's
// watcher was offered a pod's move.
func (c *Cacher) triggeredWatchersLocked(ev *watchCacheEvent, buf []*cacheWatcher) []*cacheWatcher {
	return buf
}
