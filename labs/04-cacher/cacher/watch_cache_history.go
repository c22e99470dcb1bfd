package cacher

// watchCacheHistory: the ring of recent events.
//
// Upstream twin: k8s.io/apiserver@v0.37.0/pkg/storage/cacher/watch_cache_history.go,
// new in 1.37: the ring's fields and methods moved there out of the
// watchCache (`updateCache`, `resizeCacheLocked`, `doCacheResizeLocked`,
// `GetIntervalLocked`, `suggestedWatchChannelSize`,
// k8s.io/apiserver@v0.37.0/pkg/storage/cacher/watch_cache_history.go:106-250).
// The sizing rules did not change.
//
// Events live in cache[i % capacity] for startIndex <= i < endIndex.
// Indices only grow, so a position names one event forever. The
// watchCache's lock guards every field.
//
// Left out: upstream's lazy ring interval (`historyCacheIntervalSource`,
// k8s.io/apiserver@v0.37.0/pkg/storage/cacher/watch_cache_interval.go:152-246),
// which copies 100 events at a time under the lock and, if the ring wraps
// past it first, ends the watcher with no ERROR (the client learns the 410
// when it watches again). Our GetIntervalLocked copies every event the
// watcher needs at once, under the lock: simpler, never cut off that way,
// one allocation per new watch; so the interval needs no
// `isIndexValidLocked` to ask whether the ring wrapped past it. The Prometheus capacity gauge
// (`WatchCacheCapacity`) is the resizes counter and Capacity here.

import (
	"fmt"
	"math"
	"sort"
	"time"

	"k8s.io/apimachinery/pkg/api/errors"
)

const (
	// defaultLowerBoundCapacity and defaultUpperBoundCapacity bound the
	// ring (upstream: the same `defaultLowerBoundCapacity` and
	// `defaultUpperBoundCapacity`, k8s.io/apiserver@v0.37.0/pkg/storage/cacher/watch_cache_history.go:31-38).
	defaultLowerBoundCapacity = 100
	defaultUpperBoundCapacity = 100 * 1024

	// Watch channel sizes (upstream: `minWatchChanSize` and the three max*
	// constants, k8s.io/apiserver@v0.37.0/pkg/storage/cacher/watch_cache_history.go:173-189).
	minWatchChanSize                        = 10
	maxWatchChanSizeWithIndexAndTrigger     = 10
	maxWatchChanSizeWithIndexWithoutTrigger = 1000
	maxWatchChanSizeWithoutIndex            = 100
)

type watchCacheHistory struct {
	capacity           int
	upperBoundCapacity int
	lowerBoundCapacity int

	cache      []*watchCacheEvent
	startIndex int
	endIndex   int
	// removedEventSinceRelist says the ring dropped an event since the last
	// relist. Until it does, the ring holds every event after the list, so a
	// watch from the list's RV can still be served.
	removedEventSinceRelist bool

	// eventFreshDuration is the history the ring keeps at least.
	eventFreshDuration time.Duration

	// resizes counts doCacheResizeLocked calls (for the live view; upstream
	// counts them in `watch_cache_capacity_increase_total` and
	// `..._decrease_total`).
	resizes int64
}

func newWatchCacheHistory(eventFreshDuration time.Duration) *watchCacheHistory {
	return &watchCacheHistory{
		capacity:           defaultLowerBoundCapacity,
		cache:              make([]*watchCacheEvent, defaultLowerBoundCapacity),
		lowerBoundCapacity: defaultLowerBoundCapacity,
		upperBoundCapacity: capacityUpperBound(eventFreshDuration),
		eventFreshDuration: eventFreshDuration,
	}
}

// capacityUpperBound is the ring's cap for a history window: 102,400
// events for the default window, and for a longer one the same cap times
// window/default rounded up to a power of two (the ring only doubles), so
// that a busy resource still keeps the whole window (upstream: the same
// `capacityUpperBound`, k8s.io/apiserver@v0.37.0/pkg/storage/cacher/watch_cache_history.go:57-77,
// which caps the exponent so the result fits in 32 bits: at 14, a window
// 16,384 times the default, as ours does).
func capacityUpperBound(eventFreshDuration time.Duration) int {
	if eventFreshDuration <= DefaultEventFreshDuration {
		return defaultUpperBoundCapacity
	}
	exponent := int(math.Ceil(math.Log2(eventFreshDuration.Seconds() / DefaultEventFreshDuration.Seconds())))
	return defaultUpperBoundCapacity << min(exponent, 14)
}

// updateCache appends to the ring, first resizing it, then dropping the
// oldest event if it is full. Caller holds the write lock.
func (w *watchCacheHistory) updateCache(event *watchCacheEvent) {
	w.resizeCacheLocked(event.RecordTime)
	if w.isCacheFullLocked() {
		w.startIndex++
		w.removedEventSinceRelist = true
	}
	w.cache[w.endIndex%w.capacity] = event
	w.endIndex++
}

// resizeCacheLocked is the sizing rule: the ring must hold at least
// eventFreshDuration of history, and no more than it needs.
//   - Full, and its oldest event is younger than eventFreshDuration:
//     dropping it would lose fresh history, so double (up to the upper
//     bound).
//   - Full, and even the newest quarter reaches back further than
//     eventFreshDuration: three quarters are more than the window needs,
//     so halve (down to the lower bound). Looking at a quarter, not at the
//     oldest event, keeps the ring from flapping between two sizes.
//
// Events are never dropped for being old, only when the ring is full. Ages
// are measured between RecordTimes: the time storage saw each event where
// the storage says (watch_cache.go, processEvent).
func (w *watchCacheHistory) resizeCacheLocked(eventTime time.Time) {
	if !w.isCacheFullLocked() {
		return
	}
	if eventTime.Sub(w.cache[w.startIndex%w.capacity].RecordTime) < w.eventFreshDuration {
		if c := min(w.capacity*2, w.upperBoundCapacity); c > w.capacity {
			w.doCacheResizeLocked(c)
		}
		return
	}
	if eventTime.Sub(w.cache[(w.endIndex-w.capacity/4)%w.capacity].RecordTime) > w.eventFreshDuration {
		if c := max(w.capacity/2, w.lowerBoundCapacity); c < w.capacity {
			w.doCacheResizeLocked(c)
		}
	}
}

func (w *watchCacheHistory) isCacheFullLocked() bool {
	return w.endIndex == w.startIndex+w.capacity
}

// doCacheResizeLocked moves the newest events into a ring of the new
// capacity, keeping each event's index.
func (w *watchCacheHistory) doCacheResizeLocked(capacity int) {
	ring := make([]*watchCacheEvent, capacity)
	if capacity < w.capacity {
		// Shrinking drops the oldest events that no longer fit. Upstream's
		// `doCacheResizeLocked` does not set removedEventSinceRelist
		// (k8s.io/apiserver@v0.37.0/pkg/storage/cacher/watch_cache_history.go:145-157),
		// and needs not: it resizes only inside updateCache, which, the
		// ring then full, drops one more event and sets the flag under the
		// same lock. We set it here too, defensively; the outcome is the same.
		w.startIndex = w.endIndex - capacity
		w.removedEventSinceRelist = true
	}
	for i := w.startIndex; i < w.endIndex; i++ {
		ring[i%capacity] = w.cache[i%w.capacity]
	}
	w.cache = ring
	w.capacity = capacity
	w.resizes++
}

// ResetLocked empties the ring for a relist: startIndex jumps to endIndex,
// so no old position is reused. Caller holds the write lock.
func (w *watchCacheHistory) ResetLocked() {
	w.startIndex = w.endIndex
	w.removedEventSinceRelist = false
	clear(w.cache)
}

// suggestedWatchChannelSize: a watcher's input channel should hold about
// one second of events, estimated as capacity / history window, within
// [10, max] where max depends on whether the resource has a trigger index
// and the watch uses it (a kubelet's pod watch is offered only its node's
// events, so 10 suffice). Caller holds the lock.
func (w *watchCacheHistory) suggestedWatchChannelSize(indexExists, triggerUsed bool) int {
	size := int(math.Ceil(float64(w.capacity) / w.eventFreshDuration.Seconds()))
	size = max(size, minWatchChanSize)
	var maxSize int
	switch {
	case indexExists && triggerUsed:
		maxSize = maxWatchChanSizeWithIndexAndTrigger
	case indexExists:
		maxSize = maxWatchChanSizeWithIndexWithoutTrigger
	default:
		maxSize = maxWatchChanSizeWithoutIndex
	}
	return min(size, maxSize)
}

// GetIntervalLocked returns the ring's events after resourceVersion, as an
// interval, or 410 Expired if the ring no longer reaches back to it.
// Caller holds the lock (read).
func (w *watchCacheHistory) GetIntervalLocked(resourceVersion, listResourceVersion uint64) (*watchCacheInterval, error) {
	size := w.endIndex - w.startIndex
	var oldest uint64
	switch {
	case listResourceVersion > 0 && !w.removedEventSinceRelist:
		// The ring holds everything since the relist.
		oldest = listResourceVersion + 1
	case size > 0:
		oldest = w.cache[w.startIndex%w.capacity].ResourceVersion
	default:
		return nil, fmt.Errorf("watch cache isn't correctly initialized")
	}
	if resourceVersion < oldest-1 {
		// The same words as upstream's: clients and tests look for them.
		return nil, errors.NewResourceExpired(fmt.Sprintf("too old resource version: %d (%d)", resourceVersion, oldest-1))
	}
	// Events are in RV order: binary search the first one after
	// resourceVersion.
	first := sort.Search(size, func(i int) bool {
		return w.cache[(w.startIndex+i)%w.capacity].ResourceVersion > resourceVersion
	})
	events := make([]*watchCacheEvent, 0, size-first)
	for i := first; i < size; i++ {
		events = append(events, w.cache[(w.startIndex+i)%w.capacity])
	}
	return newCacheIntervalFromEvents(resourceVersion, events), nil
}

// OldestResourceVersionLocked is the RV of the ring's oldest event.
func (w *watchCacheHistory) OldestResourceVersionLocked() uint64 {
	return w.cache[w.startIndex%w.capacity].ResourceVersion
}

// Capacity is the ring's size now. Caller holds the lock.
func (w *watchCacheHistory) Capacity() int { return w.capacity }
