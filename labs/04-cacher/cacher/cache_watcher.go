package cacher

// cacheWatcher: one client's watch, fed by the dispatcher.
//
// Upstream twin: the `cacheWatcher` type of
// k8s.io/apiserver@v0.37.0/pkg/storage/cacher/cache_watcher.go:55-92
// (nonblockingAdd, add, nextBookmarkTime, convertToWatchEvent,
// sendWatchCacheEvent, processInterval, process).
//
// Two channels and a goroutine: the dispatcher puts *watchCacheEvent on
// input (a small buffer, sized by suggestedWatchChannelSize); the
// watcher's own goroutine takes them off, filters them for this watch's
// selector and puts watch.Events on result, which the client reads. The
// filtering runs on the watcher's goroutine, not the dispatcher's, so N
// watchers filter in parallel and the dispatcher only copies pointers.
//
// The objects a watcher delivers are shared with every other watcher (live
// events carry a cachingObject, initial events the cache's own object):
// consumers must not modify them. The watcher copies an object only when it
// changes it: the DELETED made from a selector change. That is stricter than
// upstream, which gives each watcher its own copy of an initial event's
// object with `getMutableObject`
// (k8s.io/apiserver@v0.37.0/pkg/storage/cacher/cache_watcher.go:357-365):
// our choice, since every consumer in this course only reads.
//
// Both send the initial-events-end bookmark at the same point: right after
// the last initial event, on the watcher's goroutine (upstream's
// `processInterval`, k8s.io/apiserver@v0.37.0/pkg/storage/cacher/cache_watcher.go:450-530).
// Left out: what upstream does when it cuts a watcher off. If the watcher
// already holds, in its input, a bookmark at or after the RV it must
// report (`cacheWatcherBookmarkReceived`,
// k8s.io/apiserver@v0.37.0/pkg/storage/cacher/cache_watcher.go:38-51),
// `add` ends it gracefully: it goes on delivering what it holds, that
// bookmark included, so its client can resume from there
// (k8s.io/apiserver@v0.37.0/pkg/storage/cacher/cache_watcher.go:180-231).
// Ours stops at once and sends nothing more: a streaming-list watcher cut
// off during its initial events never sends its bookmark, and its client
// starts again.

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/utils/clock"
)

// filterFunc says whether an object (by key, labels, fields) is one this
// watch selects.
type filterFunc func(key string, l labels.Set, f fields.Set) bool

type cacheWatcher struct {
	input  chan *watchCacheEvent
	result chan watch.Event
	// done is closed once, by stop; the goroutine then closes result.
	done     chan struct{}
	stopOnce sync.Once
	// forget removes the watcher from the Cacher's maps.
	forget func()

	filter    filterFunc
	versioner storage.Versioner
	newFunc   func() runtime.Object

	// deadline is the watch request's deadline (zero if none): the last
	// bookmark goes out 2 s before it.
	deadline            time.Time
	allowWatchBookmarks bool
	// nextBookmark is when the dispatcher should offer the next periodic
	// bookmark (zero: none). Guarded by the Cacher's mutex.
	nextBookmark time.Time

	// initialEventsEndRV, if non-zero, is the RV of the initial-events-end
	// bookmark this watcher sends after its initial events.
	initialEventsEndRV uint64

	// clock and dispatchDurations time each delivered live event (the
	// Cacher's clock and histograms; nil: not timed).
	clock             clock.PassiveClock
	dispatchDurations *[numDispatchStages]durationHistogram

	// What the course's live view shows (state.go); upstream's
	// cacheWatcher keeps none of it. Counting costs two atomic adds per
	// delivery and allocates nothing.
	info      WatcherState // the request: set once by Cacher.Watch
	sent      atomic.Int64
	bookmarks atomic.Int64
	lastRV    atomic.Uint64
	endReason atomic.Pointer[string]
}

func newCacheWatcher(chanSize int, filter filterFunc, versioner storage.Versioner, newFunc func() runtime.Object,
	deadline time.Time, allowWatchBookmarks bool) *cacheWatcher {
	return &cacheWatcher{
		// Both channels hold chanSize events, as upstream's `newCacheWatcher`
		// makes them (k8s.io/apiserver@v0.37.0/pkg/storage/cacher/cache_watcher.go:94-112):
		// input the dispatcher's side, result the client's.
		input:               make(chan *watchCacheEvent, chanSize),
		result:              make(chan watch.Event, chanSize),
		done:                make(chan struct{}),
		filter:              filter,
		versioner:           versioner,
		newFunc:             newFunc,
		deadline:            deadline,
		allowWatchBookmarks: allowWatchBookmarks,
	}
}

// ResultChan implements watch.Interface.
func (c *cacheWatcher) ResultChan() <-chan watch.Event { return c.result }

// Stop implements watch.Interface: the client is gone.
func (c *cacheWatcher) Stop() { c.stopWith(EndClientStopped) }

// stopWith is stop, first recording why (for the live view; the first
// reason given wins).
func (c *cacheWatcher) stopWith(reason string) {
	c.endReason.CompareAndSwap(nil, &reason)
	c.stop()
}

// stop removes the watcher from the Cacher and ends its goroutine, which
// closes result: the client sees a clean end of stream, with no ERROR. It
// never closes input, so a dispatcher still holding this watcher can send
// (it selects on done too) without panicking.
func (c *cacheWatcher) stop() {
	c.stopOnce.Do(func() {
		if c.forget != nil {
			c.forget()
		}
		close(c.done)
	})
}

// nonblockingAdd offers an event without waiting; false if input is full.
// A stopped watcher counts as delivered: there is no one to deliver to.
func (c *cacheWatcher) nonblockingAdd(ev *watchCacheEvent) bool {
	select {
	case c.input <- ev:
		return true
	case <-c.done:
		return true
	default:
		return false
	}
}

// add waits until input has room or the timer fires; a watcher still full
// when the budget ran out is terminated, and add returns false.
func (c *cacheWatcher) add(ev *watchCacheEvent, timer <-chan time.Time) bool {
	// Room now? Then no waiting, even if the timer has already fired.
	if c.nonblockingAdd(ev) {
		return true
	}
	select {
	case c.input <- ev:
		return true
	case <-c.done:
		return true
	case <-timer:
		c.stopWith(EndTooSlow)
		return false
	}
}

// nextBookmarkTime: about every bookmarkFrequency, and the last one 2 s
// before the watch's deadline so the client learns the newest RV just
// before the server closes the watch. If that moment has already passed,
// there is no bookmark to schedule.
func (c *cacheWatcher) nextBookmarkTime(now time.Time, bookmarkFrequency time.Duration) (time.Time, bool) {
	next := now.Add(bookmarkFrequency)
	if c.deadline.IsZero() {
		return next, true
	}
	if preDeadline := c.deadline.Add(-2 * time.Second); preDeadline.Before(next) {
		next = preDeadline
	}
	if next.Before(now) {
		return time.Time{}, false
	}
	return next, true
}

// convertToWatchEvent: convert.go (the exercise cache-watcher-convert).

// send puts an event on result unless the watcher was stopped. Once done is
// closed, it sends nothing more, so a client never sees an event after a gap.
func (c *cacheWatcher) send(ev watch.Event) bool {
	select {
	case <-c.done:
		return false
	default:
	}
	select {
	case c.result <- ev:
		return true
	case <-c.done:
		return false
	}
}

// processInterval is the watcher's goroutine: first the initial events
// (the ring's events after the watch's RV, or the current objects), taken
// from the interval one Next at a time, then the initial-events-end
// bookmark if the client asked for one, then live events newer than
// startRV, the RV the initial events brought it to (upstream: the same
// `processInterval`, k8s.io/apiserver@v0.37.0/pkg/storage/cacher/cache_watcher.go:450-530).
// An interval over a snapshot walks it at the first Next, here, on this
// goroutine, with no lock held.
func (c *cacheWatcher) processInterval(ctx context.Context, interval *watchCacheInterval, startRV uint64) {
	defer close(c.result)
	defer c.stop()
	for {
		ev, err := interval.Next()
		if err != nil {
			// As upstream: end the stream with no ERROR; the client
			// watches again and learns what went wrong then.
			c.endReason.CompareAndSwap(nil, ptr(EndIntervalFailed))
			return
		}
		if ev == nil {
			break
		}
		if we, ok := c.convertToWatchEvent(ev); ok {
			if !c.send(we) {
				return
			}
			c.delivered(ev)
		}
	}
	if c.initialEventsEndRV != 0 {
		obj := c.newFunc()
		_ = c.versioner.UpdateObject(obj, c.initialEventsEndRV)
		_ = storage.AnnotateInitialEventsEndBookmark(obj)
		if !c.send(watch.Event{Type: watch.Bookmark, Object: obj}) {
			return
		}
	}
	for {
		select {
		case ev := <-c.input:
			if ev.ResourceVersion <= startRV {
				// Already part of the initial events.
				continue
			}
			if we, ok := c.convertToWatchEvent(ev); ok {
				builtAt := c.now()
				if !c.send(we) {
					return
				}
				c.observeDispatchMetrics(ev, builtAt, c.now())
				c.delivered(ev)
			}
		case <-c.done:
			return
		case <-ctx.Done():
			c.endReason.CompareAndSwap(nil, ptr(EndRequestEnded))
			return
		}
	}
}

func (c *cacheWatcher) now() time.Time {
	if c.clock == nil {
		return time.Time{}
	}
	return c.clock.Now()
}

// observeDispatchMetrics records how long a delivered live event took, in
// three stages, as upstream's `observeDispatchMetrics` does
// (k8s.io/apiserver@v0.37.0/pkg/storage/cacher/cache_watcher.go:562-571):
// storage_to_cache from RecordTime to CacheReceived, cache_to_watcher from
// the watch event built to it put on result, total from RecordTime to put
// on result. Not for bookmarks, and not for initial events.
func (c *cacheWatcher) observeDispatchMetrics(ev *watchCacheEvent, builtAt, sentAt time.Time) {
	if c.dispatchDurations == nil || ev.Type == watch.Bookmark || sentAt.IsZero() || ev.RecordTime.IsZero() {
		return
	}
	if !ev.CacheReceived.IsZero() {
		c.dispatchDurations[stageStorageToCache].observe(ev.CacheReceived.Sub(ev.RecordTime))
	}
	c.dispatchDurations[stageCacheToWatcher].observe(sentAt.Sub(builtAt))
	c.dispatchDurations[stageTotal].observe(sentAt.Sub(ev.RecordTime))
}

// errWatcher is a watch that is one ERROR event and then closed: the answer
// to a watch from a resourceVersion the cache no longer has (upstream:
// `errWatcher`, k8s.io/apiserver@v0.37.0/pkg/storage/cacher/cacher.go:1396-1424).
type errWatcher struct{ result chan watch.Event }

func newErrWatcher(status runtime.Object) *errWatcher {
	w := &errWatcher{result: make(chan watch.Event, 1)}
	w.result <- watch.Event{Type: watch.Error, Object: status}
	close(w.result)
	return w
}

func (w *errWatcher) ResultChan() <-chan watch.Event { return w.result }
func (w *errWatcher) Stop()                          {}

// bookmarkFrequency: periodic bookmarks about once a minute (upstream:
// `defaultBookmarkFrequency`, k8s.io/apiserver@v0.37.0/pkg/storage/cacher/cacher.go:78).
const bookmarkFrequency = time.Minute
