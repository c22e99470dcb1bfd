package cacher

// The watchCache: what the Cacher knows about one resource.
//
// Upstream twin: the `watchCache` type of
// k8s.io/apiserver@v0.37.0/pkg/storage/cacher/watch_cache.go:80-127
// (processEvent, updateCache, resizeCacheLocked, getAllEventsSinceLocked,
// Replace, UpdateResourceVersion, waitUntilFreshAndBlock,
// suggestedWatchChannelSize).
//
// It holds three things, all guarded by one RWMutex:
//   - the store: every object of the resource as of resourceVersion, by key;
//   - the ring: the most recent events, oldest first, sized by capacity;
//   - resourceVersion: how far the cache has seen etcd's history. Events
//     move it, and so do etcd's progress notifications, which say "nothing
//     for you up to revision N".
//
// Left out: the indexers of the store (the store here is a plain map,
// listed in key order on demand; upstream's is a B-tree, `NewIndexer`
// with `BtreeWatchCache`, k8s.io/apiserver@v0.37.0/pkg/storage/cacher/store/store.go:81-83,
// and keeps snapshots of it for exact-RV and continue lists), and the
// `watchCacheInterval` (k8s.io/apiserver@v0.37.0/pkg/storage/cacher/watch_cache_interval.go:35-57):
// upstream hands a new watcher a lazy iterator over the ring, which
// copies 100 events at a time and, if the ring wraps past it first, ends
// the watcher with no ERROR (the client learns the 410 when it watches
// again). We copy every event the watcher needs when it starts, under mu:
// simpler, never cut off that way, one allocation per new watch.

import (
	"context"
	"fmt"
	"math"
	"sort"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/utils/clock"
)

const (
	// lowerBoundCapacity and upperBoundCapacity bound the ring (upstream:
	// `defaultLowerBoundCapacity` and `defaultUpperBoundCapacity`,
	// k8s.io/apiserver@v0.37.0/pkg/storage/cacher/watch_cache.go:54).
	lowerBoundCapacity = 100
	upperBoundCapacity = 100 * 1024

	// blockTimeout is how long a read that needs a newer resourceVersion
	// than the cache has waits for the cache to catch up (upstream: the
	// same `blockTimeout`, k8s.io/apiserver@v0.37.0/pkg/storage/cacher/watch_cache.go:49).
	blockTimeout = 3 * time.Second

	// Watch channel sizes (upstream: `minWatchChanSize` and the three max*
	// constants, k8s.io/apiserver@v0.37.0/pkg/storage/cacher/watch_cache.go:641).
	minWatchChanSize                        = 10
	maxWatchChanSizeWithIndexAndTrigger     = 10
	maxWatchChanSizeWithIndexWithoutTrigger = 1000
	maxWatchChanSizeWithoutIndex            = 100
)

// watchCacheEvent is one change, with what a watcher needs to filter it
// without looking into the object: its key, labels and fields, before and
// after. Computed once, used by every watcher.
type watchCacheEvent struct {
	Type            watch.EventType
	Object          runtime.Object
	ObjLabels       labels.Set
	ObjFields       fields.Set
	PrevObject      runtime.Object // nil for a creation
	PrevObjLabels   labels.Set
	PrevObjFields   fields.Set
	Key             string
	ResourceVersion uint64
	// RecordTime is when the cache received the event; the ring's sizing
	// rule reads it.
	RecordTime time.Time
}

// storeElement is one current object with its precomputed attributes.
type storeElement struct {
	Key    string
	Object runtime.Object
	Labels labels.Set
	Fields fields.Set
}

type watchCache struct {
	// mu guards every field below it.
	mu sync.RWMutex

	// The ring: events live in cache[i % capacity] for startIndex <= i <
	// endIndex. Indices only grow, so a position names one event forever.
	capacity   int
	cache      []*watchCacheEvent
	startIndex int
	endIndex   int
	// removedEventSinceRelist says the ring dropped an event since the last
	// relist. Until it does, the ring holds every event after the list, so a
	// watch from the list's RV can still be served.
	removedEventSinceRelist bool

	store map[string]*storeElement

	// resizes counts doCacheResizeLocked calls (for the live view).
	resizes int64

	// resourceVersion is the RV the cache is current to; listResourceVersion
	// the RV of the last relist.
	resourceVersion     uint64
	listResourceVersion uint64
	// freshness is closed and replaced whenever resourceVersion moves, to
	// wake readers waiting for a newer one (upstream's `cond` is a sync.Cond,
	// k8s.io/apiserver@v0.37.0/pkg/storage/cacher/watch_cache.go:85).
	freshness chan struct{}
	// initialized is closed by the first Replace.
	initialized chan struct{}

	// eventFreshDuration is the history the ring keeps at least, and
	// upperBound the most events it may hold (capacityUpperBound).
	eventFreshDuration time.Duration
	upperBound         int
	clock              clock.Clock
	keyFunc            func(runtime.Object) (string, error)
	getAttrsFunc       func(runtime.Object) (labels.Set, fields.Set, error)
	versioner          storage.Versioner

	// eventHandler receives every event after it entered the ring, and the
	// bookmarks that progress notifications turn into; it is called outside
	// mu, by the one goroutine (the reflector) that writes the cache.
	eventHandler func(*watchCacheEvent)
	// onReplace runs inside Replace, with mu held for writing.
	onReplace func()
}

func newWatchCache(keyFunc func(runtime.Object) (string, error),
	getAttrsFunc func(runtime.Object) (labels.Set, fields.Set, error),
	versioner storage.Versioner, clk clock.Clock, eventFreshDuration time.Duration,
	eventHandler func(*watchCacheEvent)) *watchCache {
	return &watchCache{
		capacity:           lowerBoundCapacity,
		cache:              make([]*watchCacheEvent, lowerBoundCapacity),
		store:              map[string]*storeElement{},
		freshness:          make(chan struct{}),
		initialized:        make(chan struct{}),
		eventFreshDuration: eventFreshDuration,
		upperBound:         capacityUpperBound(eventFreshDuration),
		clock:              clk,
		keyFunc:            keyFunc,
		getAttrsFunc:       getAttrsFunc,
		versioner:          versioner,
		eventHandler:       eventHandler,
	}
}

// processEvent applies one event from storage: store, ring, resourceVersion,
// then hands it to the dispatcher. The order matters: a new watcher that
// reads the ring under mu either sees the event there or is registered
// before the dispatcher offers it (see Cacher.Watch).
func (w *watchCache) processEvent(ev watch.Event) error {
	key, err := w.keyFunc(ev.Object)
	if err != nil {
		return fmt.Errorf("couldn't compute key: %w", err)
	}
	rv, err := w.versioner.ObjectResourceVersion(ev.Object)
	if err != nil {
		return err
	}
	objLabels, objFields, err := w.getAttrsFunc(ev.Object)
	if err != nil {
		return err
	}
	wcEvent := &watchCacheEvent{
		Type:            ev.Type,
		Object:          ev.Object,
		ObjLabels:       objLabels,
		ObjFields:       objFields,
		Key:             key,
		ResourceVersion: rv,
		RecordTime:      w.clock.Now(),
	}
	w.mu.Lock()
	if prev, ok := w.store[key]; ok {
		wcEvent.PrevObject = prev.Object
		wcEvent.PrevObjLabels = prev.Labels
		wcEvent.PrevObjFields = prev.Fields
	}
	if ev.Type == watch.Deleted {
		delete(w.store, key)
	} else {
		w.store[key] = &storeElement{Key: key, Object: ev.Object, Labels: objLabels, Fields: objFields}
	}
	w.updateCacheLocked(wcEvent)
	w.setResourceVersionLocked(rv)
	w.mu.Unlock()
	w.eventHandler(wcEvent)
	return nil
}

// UpdateResourceVersion records a progress notification: etcd has sent us
// everything up to rv. Readers waiting for rv wake up; the dispatcher gets a
// bookmark event, which it only uses to know the RV for the next periodic
// bookmark: no client receives etcd's progress notifications.
func (w *watchCache) UpdateResourceVersion(rv uint64) {
	w.mu.Lock()
	if rv <= w.resourceVersion {
		w.mu.Unlock()
		return
	}
	w.setResourceVersionLocked(rv)
	w.mu.Unlock()
	w.eventHandler(&watchCacheEvent{Type: watch.Bookmark, ResourceVersion: rv, RecordTime: w.clock.Now()})
}

func (w *watchCache) setResourceVersionLocked(rv uint64) {
	w.resourceVersion = rv
	close(w.freshness)
	w.freshness = make(chan struct{})
}

// capacityUpperBound is the ring's cap for a history window: 102,400
// events for the default window, and for a longer one the same cap times
// window/default rounded up to a power of two (the ring only doubles), so
// that a busy resource still keeps the whole window (upstream: the same
// `capacityUpperBound`, k8s.io/apiserver@v0.37.0/pkg/storage/cacher/watch_cache.go:164,
// which caps the exponent so the result fits in 32 bits: at 14, a window
// 16,384 times the default, as ours does).
func capacityUpperBound(window time.Duration) int {
	if window <= DefaultEventFreshDuration {
		return upperBoundCapacity
	}
	exponent := int(math.Ceil(math.Log2(window.Seconds() / DefaultEventFreshDuration.Seconds())))
	return upperBoundCapacity << min(exponent, 14)
}

// updateCacheLocked appends to the ring, first resizing it, then dropping
// the oldest event if it is full.
func (w *watchCache) updateCacheLocked(ev *watchCacheEvent) {
	w.resizeCacheLocked(ev.RecordTime)
	if w.isCacheFullLocked() {
		w.startIndex++
		w.removedEventSinceRelist = true
	}
	w.cache[w.endIndex%w.capacity] = ev
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
// Events are never dropped for being old, only when the ring is full.
func (w *watchCache) resizeCacheLocked(now time.Time) {
	if !w.isCacheFullLocked() {
		return
	}
	oldest := w.cache[w.startIndex%w.capacity]
	if now.Sub(oldest.RecordTime) < w.eventFreshDuration {
		if c := min(w.capacity*2, w.upperBound); c > w.capacity {
			w.doCacheResizeLocked(c)
		}
		return
	}
	quarter := w.cache[(w.endIndex-w.capacity/4)%w.capacity]
	if now.Sub(quarter.RecordTime) > w.eventFreshDuration {
		if c := max(w.capacity/2, lowerBoundCapacity); c < w.capacity {
			w.doCacheResizeLocked(c)
		}
	}
}

func (w *watchCache) isCacheFullLocked() bool { return w.endIndex == w.startIndex+w.capacity }

// doCacheResizeLocked moves the newest events into a ring of the new
// capacity, keeping each event's index.
func (w *watchCache) doCacheResizeLocked(capacity int) {
	ring := make([]*watchCacheEvent, capacity)
	if capacity < w.capacity {
		// Shrinking drops the oldest events that no longer fit.
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

// currentCapacity is the ring's size now.
func (w *watchCache) currentCapacity() int {
	w.mu.RLock()
	defer w.mu.RUnlock()
	return w.capacity
}

// suggestedWatchChannelSize: a watcher's input channel should hold about
// one second of events, estimated as capacity / history window, within
// [10, max] where max depends on whether the resource has a trigger index
// and the watch uses it (a kubelet's pod watch is offered only its node's
// events, so 10 suffice).
func (w *watchCache) suggestedWatchChannelSize(indexExists, triggerUsed bool) int {
	size := int(math.Ceil(float64(w.currentCapacity()) / w.eventFreshDuration.Seconds()))
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

// Replace installs a fresh list: the store becomes objs, the ring empties
// (startIndex jumps to endIndex, so no old position is reused), and the
// cache is current to rv.
func (w *watchCache) Replace(objs []runtime.Object, rv uint64) error {
	store := make(map[string]*storeElement, len(objs))
	for _, obj := range objs {
		key, err := w.keyFunc(obj)
		if err != nil {
			return fmt.Errorf("couldn't compute key: %w", err)
		}
		l, f, err := w.getAttrsFunc(obj)
		if err != nil {
			return err
		}
		store[key] = &storeElement{Key: key, Object: obj, Labels: l, Fields: f}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.store = store
	w.startIndex = w.endIndex
	w.removedEventSinceRelist = false
	w.listResourceVersion = rv
	w.setResourceVersionLocked(rv)
	if w.onReplace != nil {
		w.onReplace()
	}
	select {
	case <-w.initialized:
	default:
		close(w.initialized)
	}
	return nil
}

// getAllEventsSinceLocked returns what a watch from rv must receive before
// live events. sendInitialEvents is the request's option, which has three
// states:
//   - true (a streaming list): the current objects as ADDED, whatever rv;
//   - unset, and rv 0: the same (the legacy watch from "any" RV, which
//     also returns the state);
//   - false, and rv 0: nothing: the watch starts at the cache's RV;
//   - otherwise: the ring's events after rv, or 410 Expired if the ring no
//     longer reaches back to rv.
//
// Caller holds mu (read).
func (w *watchCache) getAllEventsSinceLocked(rv uint64, sendInitialEvents *bool) ([]*watchCacheEvent, error) {
	if sendInitialEvents != nil && *sendInitialEvents {
		return w.storeAsAddedLocked(), nil
	}
	if rv == 0 {
		if sendInitialEvents == nil {
			return w.storeAsAddedLocked(), nil
		}
		rv = w.resourceVersion
	}
	var oldest uint64
	switch {
	case !w.removedEventSinceRelist:
		// The ring holds everything since the relist.
		oldest = w.listResourceVersion + 1
	case w.endIndex > w.startIndex:
		oldest = w.cache[w.startIndex%w.capacity].ResourceVersion
	default:
		return nil, fmt.Errorf("watch cache isn't correctly initialized")
	}
	if rv < oldest-1 {
		// The same words as upstream's `NewResourceExpired` here
		// (k8s.io/apiserver@v0.37.0/pkg/storage/cacher/watch_cache.go:669):
		// clients and tests look for them.
		return nil, errors.NewResourceExpired(fmt.Sprintf("too old resource version: %d (%d)", rv, oldest-1))
	}
	// Events are in RV order: binary search the first one after rv.
	n := w.endIndex - w.startIndex
	first := sort.Search(n, func(i int) bool {
		return w.cache[(w.startIndex+i)%w.capacity].ResourceVersion > rv
	})
	events := make([]*watchCacheEvent, 0, n-first)
	for i := first; i < n; i++ {
		events = append(events, w.cache[(w.startIndex+i)%w.capacity])
	}
	return events, nil
}

// storeAsAddedLocked is the current state as ADDED events in key order, all
// at the cache's resourceVersion.
func (w *watchCache) storeAsAddedLocked() []*watchCacheEvent {
	elems := w.listLocked()
	events := make([]*watchCacheEvent, 0, len(elems))
	for _, e := range elems {
		rv, _ := w.versioner.ObjectResourceVersion(e.Object)
		events = append(events, &watchCacheEvent{
			Type: watch.Added, Object: e.Object, ObjLabels: e.Labels, ObjFields: e.Fields,
			Key: e.Key, ResourceVersion: rv,
		})
	}
	return events
}

// listLocked returns the store's elements in key order.
func (w *watchCache) listLocked() []*storeElement {
	elems := make([]*storeElement, 0, len(w.store))
	for _, e := range w.store {
		elems = append(elems, e)
	}
	sort.Slice(elems, func(i, j int) bool { return elems[i].Key < elems[j].Key })
	return elems
}

// waitUntilFreshAndRLock waits until the cache is current to at least rv,
// at most blockTimeout, then returns holding mu for reading (the caller
// must RUnlock). If progress is not nil, the reader counts itself among
// its waiters while it waits: consistent reads do, so that the Cacher's
// one progress requester (progress.go) asks etcd for a progress
// notification and an idle resource still learns etcd's revision. On
// timeout it returns the "too large resource version" error (504 with
// Retry-After), upstream's signal to fall back to etcd
// (`NewTooLargeResourceVersionError`,
// k8s.io/apiserver@v0.37.0/pkg/storage/cacher/watch_cache.go:355-358).
func (w *watchCache) waitUntilFreshAndRLock(ctx context.Context, rv uint64, progress *progressRequester) error {
	start := w.clock.Now()
	registered := false
	defer func() {
		if registered {
			progress.remove()
		}
	}()
	for {
		w.mu.RLock()
		if w.resourceVersion >= rv {
			return nil
		}
		current, fresher := w.resourceVersion, w.freshness
		w.mu.RUnlock()
		waited := w.clock.Since(start)
		if waited >= blockTimeout {
			return storage.NewTooLargeResourceVersionError(rv, current, 1)
		}
		if progress != nil && !registered {
			progress.add()
			registered = true
		}
		timer := w.clock.NewTimer(blockTimeout - waited)
		select {
		case <-fresher:
		case <-timer.C():
		case <-ctx.Done():
			timer.Stop()
			return ctx.Err()
		}
		timer.Stop()
	}
}
