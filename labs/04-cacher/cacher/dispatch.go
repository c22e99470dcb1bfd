package cacher

// Dispatch: one goroutine fans every event out to the watchers.
//
// Upstream twin: `dispatchEvents` and `dispatchEvent`
// (k8s.io/apiserver@v0.37.0/pkg/storage/cacher/cacher.go:904-1062),
// `startDispatching` and `startDispatchingBookmarkEventsLocked`
// (k8s.io/apiserver@v0.37.0/pkg/storage/cacher/cacher.go:1065-1153), and
// the `watcherBookmarkTimeBuckets` type
// (k8s.io/apiserver@v0.37.0/pkg/storage/cacher/cacher.go:200-251).
//
// The loop:
//   - an event from the watchCache: pick the watchers that may want it
//     (all unindexed ones, plus the indexed ones whose trigger value the
//     object has, before or after), offer it to each without blocking, and
//     then, only to the ones whose input was full, offer it again, waiting
//     at most the time budget (time_budget.go) for all of them together;
//     a watcher still full then is terminated;
//   - a bookmark from the watchCache (a progress notification): remember
//     its RV, send nothing (upstream: `dispatchEvents` skips storage
//     bookmarks, k8s.io/apiserver@v0.37.0/pkg/storage/cacher/cacher.go:904-946,
//     and counts them in events_dispatched_total, which ours does not);
//   - a tick of the bookmark timer (about every second): offer a bookmark
//     at the last RV to every watcher that asked for bookmarks and whose
//     next bookmark time has come.
//
// Left out: the time buckets for bookmark watchers (we scan the bookmark
// watchers on each tick, which is O(watchers) per second instead of O(due
// ones)); the timer reuse (we make a timer only when some watcher is
// blocked); the jitter of the bookmark timer (a fixed 1 s tick).

import (
	"time"

	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/clock"
)

// bookmarkTick is how often the dispatcher looks for due bookmarks
// (upstream: a `bookmarkTimer` of 1 s with 25% jitter,
// k8s.io/apiserver@v0.37.0/pkg/storage/cacher/cacher.go:906-948).
const bookmarkTick = time.Second

// dispatchEvents is the dispatcher goroutine. The bookmark ticker is made by
// NewCacherFromConfig, so that a fake clock has it before a test moves time.
func (c *Cacher) dispatchEvents(ticker clock.Ticker) {
	defer c.wg.Done()
	defer ticker.Stop()
	// Wait for the first list: a bookmark needs a resourceVersion.
	select {
	case <-c.watchCache.initialized:
	case <-c.stopCh:
		return
	}
	c.watchCache.RLock()
	lastRV := c.watchCache.resourceVersion
	c.watchCache.RUnlock()
	for {
		select {
		case ev := <-c.incoming:
			if ev.Type != watch.Bookmark {
				c.dispatchEvent(ev)
				c.metrics.eventsDispatched.Add(1)
			}
			lastRV = ev.ResourceVersion
		case <-ticker.C():
			c.dispatchBookmarks(lastRV)
		case <-c.stopCh:
			return
		}
	}
}

// dispatchEvent offers one event to the watchers that may want it, its
// object wrapped so that they all share one encoding (caching_object.go).
func (c *Cacher) dispatchEvent(ev *watchCacheEvent) {
	watchers := c.watchersFor(ev)
	ev = setCachingObjects(ev)
	blocked := c.blockedWatchers[:0]
	for _, w := range watchers {
		if !w.nonblockingAdd(ev) {
			blocked = append(blocked, w)
		}
	}
	if len(blocked) > 0 {
		start := c.clock.Now()
		budget := c.dispatchTimeoutBudget.takeAvailable()
		timer := c.clock.NewTimer(budget)
		// Counted once the timer exists: a test on fake time may move
		// the clock as soon as it sees this.
		c.metrics.blockedDispatches.Add(1)
		c.metrics.dispatchWaiting.Store(true)
		fired := timer.C()
		for _, w := range blocked {
			if !w.add(ev, fired) {
				c.metrics.watchersTerminated.Add(1)
				// The timer fired and its value is consumed: every
				// further blocked watcher is terminated at once unless
				// its input has room right now.
				fired = closedTimeChan
			}
		}
		timer.Stop()
		c.metrics.dispatchWaiting.Store(false)
		c.dispatchTimeoutBudget.returnUnused(budget - c.clock.Since(start))
	}
	// Keep the slices for the next event, without holding watchers alive.
	clear(blocked)
	c.blockedWatchers = blocked[:0]
	clear(watchers)
	c.watchersBuffer = watchers[:0]
}

// closedTimeChan is a timer that has already fired.
var closedTimeChan = func() <-chan time.Time {
	ch := make(chan time.Time)
	close(ch)
	return ch
}()

// watchersFor collects, under the Cacher's mutex, the watchers an event
// must be offered to. An indexed watcher (one watching a single trigger
// value, like a kubelet's spec.nodeName=node-1) is offered only events
// whose object has that value before or after the change.
func (c *Cacher) watchersFor(ev *watchCacheEvent) []*cacheWatcher {
	c.mu.Lock()
	defer c.mu.Unlock()
	buf := c.watchersBuffer[:0]
	for _, w := range c.watchers.all {
		buf = append(buf, w)
	}
	if c.triggerFunc == nil {
		return buf
	}
	return c.triggeredWatchersLocked(ev, buf) // trigger.go
}

// dispatchBookmarks offers a bookmark at rv to every watcher whose next
// bookmark is due, and schedules its next one. Bookmarks never block the
// dispatcher: a watcher with a full input simply misses this one (it is
// busy receiving events, which carry RVs anyway).
func (c *Cacher) dispatchBookmarks(rv uint64) {
	if rv == 0 {
		return
	}
	now := c.clock.Now()
	c.mu.Lock()
	due := c.watchersBuffer[:0]
	for _, w := range c.watchers.bookmark {
		if !w.nextBookmark.IsZero() && !w.nextBookmark.After(now) {
			due = append(due, w)
			if next, ok := w.nextBookmarkTime(now, bookmarkFrequency); ok && next.After(now) {
				w.nextBookmark = next
			} else {
				w.nextBookmark = time.Time{} // the pre-deadline one was the last
			}
		}
	}
	c.mu.Unlock()
	if len(due) == 0 {
		c.watchersBuffer = due
		return
	}
	obj := c.newFunc()
	_ = c.versioner.UpdateObject(obj, rv)
	ev := &watchCacheEvent{Type: watch.Bookmark, Object: obj, ResourceVersion: rv}
	for _, w := range due {
		if w.nonblockingAdd(ev) {
			c.metrics.bookmarksSent.Add(1)
		}
	}
	clear(due)
	c.watchersBuffer = due[:0]
}
