package cacher

// The watchCache: what the Cacher knows about one resource.
//
// Upstream twin: the `watchCache` type of
// k8s.io/apiserver@v0.37.0/pkg/storage/cacher/watch_cache.go:75-127
// (processEvent, UpdateResourceVersion, waitUntilFreshLocked,
// waitAndGetLatestSnapshot, WaitUntilFreshAndGet, Replace,
// getAllEventsSinceLocked, getIntervalFromStoreLocked).
//
// Since 1.37 it is split in three, as upstream's is, all guarded by the
// watchCache's one RWMutex:
//   - history (watch_cache_history.go): the ring of recent events;
//   - storage (store/watch_cache_storage.go): every object as of
//     resourceVersion, in a B-tree, and an immutable snapshot of it after
//     each change;
//   - resourceVersion: how far the cache has seen etcd's history. Events
//     move it, and so do etcd's progress notifications, which say "nothing
//     for you up to revision N".
//
// Reads at the newest state take the newest snapshot under the read lock
// and walk it after unlocking (waitAndGetLatestSnapshot,
// getIntervalFromStoreLocked): a LIST of 10,000 pods no longer holds the
// lock while it copies them, so it no longer delays the reflector's
// writes.
//
// Left out: the store's indexes (store/store.go), the cache's own
// Add/Update/Delete/Replace as a client-go Store (our reflector calls
// processEvent and Replace directly), upstream's exact-RV and continue
// LISTs from older snapshots (ours go to etcd: cacher.go, GetList), and
// tracing and Prometheus metrics.

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/listwatch-labs/listwatch-labs/labs/04-cacher/cacher/store"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/utils/clock"
)

// blockTimeout is how long a read that needs a newer resourceVersion than
// the cache has waits for the cache to catch up (upstream: the same
// `blockTimeout`, k8s.io/apiserver@v0.37.0/pkg/storage/cacher/watch_cache.go:44-49).
const blockTimeout = 3 * time.Second

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
	// RecordTime is when storage saw the event, if the storage says
	// (storage.WatchEventWithRecordTime), else CacheReceived. The ring's
	// sizing rule and the dispatch-duration histogram read it.
	RecordTime time.Time
	// CacheReceived is when the cache received the event.
	CacheReceived time.Time
}

type watchCache struct {
	// The lock guards every field below, and history and storage.
	sync.RWMutex

	// resourceVersion is the RV the cache is current to.
	resourceVersion uint64
	// freshness is closed and replaced whenever resourceVersion moves, to
	// wake readers waiting for a newer one (upstream's `cond` is a
	// sync.Cond, k8s.io/apiserver@v0.37.0/pkg/storage/cacher/watch_cache.go:83-85;
	// a channel lets a waiter also select on its context and a timer).
	freshness chan struct{}
	// initialized is closed by the first Replace.
	initialized chan struct{}
	// onReplace runs inside Replace, with the write lock held.
	onReplace func()

	history *watchCacheHistory
	storage *store.WatchCacheStorage

	config *ImmutableWatchCacheConfig
}

// ImmutableWatchCacheConfig is what the watchCache is made with and never
// changes, so it is read with no lock (upstream: the same
// `ImmutableWatchCacheConfig`, k8s.io/apiserver@v0.37.0/pkg/storage/cacher/watch_cache.go:99-127).
type ImmutableWatchCacheConfig struct {
	keyFunc      func(runtime.Object) (string, error)
	getAttrsFunc func(runtime.Object) (labels.Set, fields.Set, error)
	// eventHandler receives every event after it entered the ring, and the
	// bookmarks that progress notifications turn into; it is called outside
	// the lock, by the one goroutine (the reflector) that writes the cache.
	eventHandler func(*watchCacheEvent)
	clock        clock.Clock
	versioner    storage.Versioner
}

func newWatchCache(keyFunc func(runtime.Object) (string, error),
	getAttrsFunc func(runtime.Object) (labels.Set, fields.Set, error),
	versioner storage.Versioner, clk clock.Clock, eventFreshDuration time.Duration,
	eventHandler func(*watchCacheEvent)) *watchCache {
	return &watchCache{
		freshness:   make(chan struct{}),
		initialized: make(chan struct{}),
		history:     newWatchCacheHistory(eventFreshDuration),
		storage:     store.NewWatchCacheStorage(),
		config: &ImmutableWatchCacheConfig{
			keyFunc:      keyFunc,
			getAttrsFunc: getAttrsFunc,
			eventHandler: eventHandler,
			clock:        clk,
			versioner:    versioner,
		},
	}
}

// processEvent applies one event from storage: ring, store (and a new
// snapshot), resourceVersion, then hands it to the dispatcher. The order
// matters: a new watcher that reads the cache under the lock either sees
// the event there or is registered before the dispatcher offers it (see
// Cacher.Watch). Only the reflector's goroutine calls it.
func (w *watchCache) processEvent(ev watch.Event) error {
	cacheReceived := w.config.clock.Now()
	recordTime := cacheReceived
	// A storage that was asked for timestamps (ListOptions.RecordTimestamps,
	// reflector.go) wraps each object with the time it saw the event:
	// unwrap it, as upstream's `processEvent` does
	// (k8s.io/apiserver@v0.37.0/pkg/storage/cacher/watch_cache.go:211-217).
	if withRecordTime, ok := ev.Object.(storage.WatchEventWithRecordTime); ok {
		recordTime = withRecordTime.RecordTime()
		ev.Object = withRecordTime.Unwrap()
	}
	key, err := w.config.keyFunc(ev.Object)
	if err != nil {
		return fmt.Errorf("couldn't compute key: %w", err)
	}
	rv, err := w.config.versioner.ObjectResourceVersion(ev.Object)
	if err != nil {
		return err
	}
	elem := &store.Element{Key: key, Object: ev.Object}
	if elem.Labels, elem.Fields, err = w.config.getAttrsFunc(ev.Object); err != nil {
		return err
	}
	wcEvent := &watchCacheEvent{
		Type:            ev.Type,
		Object:          elem.Object,
		ObjLabels:       elem.Labels,
		ObjFields:       elem.Fields,
		Key:             key,
		ResourceVersion: rv,
		RecordTime:      recordTime,
		CacheReceived:   cacheReceived,
	}
	// Read outside the lock: only this goroutine writes the store.
	if prev, ok, _ := w.storage.GetByKey(key); ok {
		prevElem := prev.(*store.Element)
		wcEvent.PrevObject = prevElem.Object
		wcEvent.PrevObjLabels = prevElem.Labels
		wcEvent.PrevObjFields = prevElem.Fields
	}
	if err := func() error {
		w.Lock()
		defer w.Unlock()
		w.history.updateCache(wcEvent)
		w.setResourceVersionLocked(rv)
		if w.history.isCacheFullLocked() {
			// No snapshot older than the ring's oldest event is needed.
			w.storage.CompactSnapshotsLocked(w.history.OldestResourceVersionLocked())
		}
		return w.storage.UpdateStoreLocked(ev.Type, elem, rv)
	}(); err != nil {
		return err
	}
	w.config.eventHandler(wcEvent)
	return nil
}

// UpdateResourceVersion records a progress notification: etcd has sent us
// everything up to rv. Readers waiting for rv wake up; the dispatcher gets a
// bookmark event, which it only uses to know the RV for the next periodic
// bookmark: no client receives etcd's progress notifications.
func (w *watchCache) UpdateResourceVersion(rv uint64) {
	w.Lock()
	if rv <= w.resourceVersion {
		w.Unlock()
		return
	}
	w.setResourceVersionLocked(rv)
	w.Unlock()
	w.config.eventHandler(&watchCacheEvent{Type: watch.Bookmark, ResourceVersion: rv})
}

func (w *watchCache) setResourceVersionLocked(rv uint64) {
	w.resourceVersion = rv
	close(w.freshness)
	w.freshness = make(chan struct{})
}

// waitUntilFreshLocked waits until the cache is current to at least rv, at
// most blockTimeout, whatever ctx's deadline (ctx is upstream's too, for its
// metrics). The caller holds the read lock, and holds it again
// when this returns; while it waits, the lock is released (as a sync.Cond's
// Wait does upstream).
//
// A fresh read (rv 0, or rv <= resourceVersion) returns at once: no timer,
// no registration. That is 1.37's shape (upstream's `waitUntilFreshLocked`,
// k8s.io/apiserver@v0.37.0/pkg/storage/cacher/watch_cache.go:317-362,
// returns before it starts its wake-up goroutine).
//
// If progress is not nil, the reader counts itself among its waiters while
// it waits: consistent reads do, so that the Cacher's one progress requester
// (progress.go) asks etcd for a progress notification and an idle resource
// still learns etcd's revision. On timeout it returns the "too large
// resource version" error (504 with Retry-After), upstream's signal to
// fall back to etcd (`NewTooLargeResourceVersionError`,
// k8s.io/apiserver@v0.37.0/pkg/storage/cacher/watch_cache.go:354-358).
func (w *watchCache) waitUntilFreshLocked(ctx context.Context, rv uint64, progress *progressRequester) error {
	if rv == 0 || rv <= w.resourceVersion {
		return nil
	}
	if progress != nil {
		progress.add()
		defer progress.remove()
	}
	clk := w.config.clock
	start := clk.Now()
	for w.resourceVersion < rv {
		waited := clk.Since(start)
		if waited >= blockTimeout {
			return storage.NewTooLargeResourceVersionError(rv, w.resourceVersion, 1)
		}
		fresher := w.freshness
		timer := clk.NewTimer(blockTimeout - waited)
		w.RUnlock()
		// Not ctx.Done(): upstream's wait does not watch the request either
		// (its cond.Wait wakes only on a new resourceVersion or its
		// blockTimeout timer), so a request whose deadline is shorter than
		// blockTimeout still gets its answer if the cache catches up in time.
		select {
		case <-fresher:
		case <-timer.C():
		}
		timer.Stop()
		w.RLock()
	}
	return nil
}

// waitAndGetLatestSnapshot waits until the cache is at least at
// minResourceVersion and returns its newest snapshot and resourceVersion.
// The lock is held only to wait and to take the snapshot: the caller walks
// the snapshot with no lock (upstream: the same
// `waitAndGetLatestSnapshot`, k8s.io/apiserver@v0.37.0/pkg/storage/cacher/watch_cache.go:508-538;
// the walk is in `waitAndListLatestRV`,
// k8s.io/apiserver@v0.37.0/pkg/storage/cacher/watch_cache.go:493-506).
func (w *watchCache) waitAndGetLatestSnapshot(ctx context.Context, minResourceVersion uint64, key string, progress *progressRequester) (store.Snapshot, uint64, error) {
	w.RLock()
	defer w.RUnlock()
	if err := w.waitUntilFreshLocked(ctx, minResourceVersion, progress); err != nil {
		return nil, 0, err
	}
	snap, err := w.storage.GetLatestSnapshotOrBuildLocked(key, "")
	if err != nil {
		return nil, 0, err
	}
	return snap, w.resourceVersion, nil
}

// WaitUntilFreshAndGet waits until the cache is at least at
// resourceVersion and returns the *store.Element at key, if any, and the
// cache's resourceVersion (upstream: the same `WaitUntilFreshAndGet`,
// k8s.io/apiserver@v0.37.0/pkg/storage/cacher/watch_cache.go:546-565).
func (w *watchCache) WaitUntilFreshAndGet(ctx context.Context, resourceVersion uint64, key string) (interface{}, bool, uint64, error) {
	w.RLock()
	defer w.RUnlock()
	if err := w.waitUntilFreshLocked(ctx, resourceVersion, nil); err != nil {
		return nil, false, 0, err
	}
	value, exists, err := w.storage.GetByKey(key)
	return value, exists, w.resourceVersion, err
}

// Replace installs a fresh list: the store becomes objs, the ring empties,
// and the cache is current to rv.
func (w *watchCache) Replace(objs []runtime.Object, rv uint64) error {
	elems := make([]*store.Element, 0, len(objs))
	for _, obj := range objs {
		key, err := w.config.keyFunc(obj)
		if err != nil {
			return fmt.Errorf("couldn't compute key: %w", err)
		}
		l, f, err := w.config.getAttrsFunc(obj)
		if err != nil {
			return err
		}
		elems = append(elems, &store.Element{Key: key, Object: obj, Labels: l, Fields: f})
	}
	w.Lock()
	defer w.Unlock()
	w.history.ResetLocked()
	w.storage.ReplaceLocked(elems, rv)
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

// suggestedWatchChannelSize: see watchCacheHistory's.
func (w *watchCache) suggestedWatchChannelSize(indexExists, triggerUsed bool) int {
	w.RLock()
	defer w.RUnlock()
	return w.history.suggestedWatchChannelSize(indexExists, triggerUsed)
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
// key is the watch's key, and recursive whether it is a prefix: a watch of
// one object reads only that object. Caller holds the lock (read).
func (w *watchCache) getAllEventsSinceLocked(rv uint64, key string, recursive bool, sendInitialEvents *bool) (*watchCacheInterval, error) {
	matchesSingle := !recursive
	if sendInitialEvents != nil && *sendInitialEvents {
		return w.getIntervalFromStoreLocked(key, matchesSingle)
	}
	if rv == 0 {
		if sendInitialEvents == nil {
			return w.getIntervalFromStoreLocked(key, matchesSingle)
		}
		rv = w.resourceVersion
	}
	return w.history.GetIntervalLocked(rv, w.storage.ListResourceVersion())
}

// getIntervalFromStoreLocked returns an interval over the whole current
// state: lazy, over the newest snapshot, when there is one (the O(N) walk
// then runs on the watcher's goroutine, off the lock); else copied from
// the live store now, under the caller's lock (upstream: the same
// `getIntervalFromStoreLocked`, k8s.io/apiserver@v0.37.0/pkg/storage/cacher/watch_cache.go:673-685).
func (w *watchCache) getIntervalFromStoreLocked(key string, matchesSingle bool) (*watchCacheInterval, error) {
	if !matchesSingle {
		if snapshot, ok := w.storage.LatestSnapshotLocked(); ok {
			return newCacheIntervalFromLazySnapshot(w.resourceVersion, snapshot), nil
		}
	}
	return newCacheIntervalFromStore(w.resourceVersion, w.storage.StoreLocked(), key, matchesSingle)
}
