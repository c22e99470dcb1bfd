package store

// WatchCacheStorage: the watch cache's current objects, as the watchCache
// sees them.
//
// Upstream twin: `WatchCacheStorage`,
// k8s.io/apiserver@v0.37.0/pkg/storage/cacher/store/watch_cache_storage.go:33-292,
// new in 1.37 (in 1.36 these fields and methods were the watchCache's own).
//
// It holds:
//   - store: the live B-tree, every object as of the cache's resourceVersion;
//   - snapshots: an immutable snapshot of the store after each change, by
//     resourceVersion. The newest one serves LISTs and initial events
//     without holding the watchCache's lock while items are copied;
//   - listResourceVersion: the RV of the last relist (the ring can serve
//     a watch from it as long as it dropped no event since).
//
// Locking: methods named ...Locked run under the watchCache's lock (the
// write lock for the ones that change the store), as upstream. Unlike
// upstream, whose store locks itself, ours has no lock of its own, so
// GetByKey and Len need the watchCache's lock too (ListResourceVersion
// reads a field under that lock, as upstream's does).
// A Snapshot needs no lock.
//
// Left out: `GetByIndexSnapshot` (no indexes, store.go), `Get` by object
// and `ListKeys`/`List`, which our watchCache does not use, and the
// `ListFromCacheSnapshot` gate (beta, on by default,
// k8s.io/apiserver@v0.37.0/pkg/features/kube_features.go:410-413): ours
// behaves as with it on. The snapshots older than the newest one serve
// upstream's exact-RV and continue LISTs (`GetExactSnapshotLocked`); our
// Cacher sends those LISTs to etcd, so here only tests read them.

import (
	"fmt"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/watch"
)

type WatchCacheStorage struct {
	store *btreeStore

	// listResourceVersion is the RV of the last Replace.
	listResourceVersion uint64

	snapshots Snapshotter
	// snapshottingEnabled is false after MarkConsistent(false): the cache
	// was found to differ from etcd, and its snapshots are not trusted.
	snapshottingEnabled atomic.Bool
}

// NewWatchCacheStorage returns an empty storage with snapshots on.
func NewWatchCacheStorage() *WatchCacheStorage {
	s := &WatchCacheStorage{store: newBtreeStore(btreeDegree), snapshots: NewSnapshotter()}
	s.snapshottingEnabled.Store(true)
	return s
}

// StoreLocked returns the live store as a Snapshot. Unlike a snapshot, it
// is not immutable: the caller must hold the lock while it reads it.
func (w *WatchCacheStorage) StoreLocked() Snapshot { return w.store }

// SnapshottingEnabled says whether snapshots are being taken.
func (w *WatchCacheStorage) SnapshottingEnabled() bool {
	return w.snapshots != nil && w.snapshottingEnabled.Load()
}

// CanServeExactRV says whether a snapshot at or before rv is kept.
func (w *WatchCacheStorage) CanServeExactRV(rv uint64) bool {
	_, ok := w.snapshots.GetLessOrEqual(rv)
	return ok
}

// Compact drops the snapshots older than rev, the revision etcd compacted
// to: a LIST at an older RV must get 410 Expired, as from etcd (upstream's
// compactor calls it from `compactIfNeeded`,
// k8s.io/apiserver@v0.37.0/pkg/storage/cacher/compactor.go:65-77; this lab
// has no compactor).
func (w *WatchCacheStorage) Compact(rev uint64) {
	w.snapshots.RemoveLess(rev)
}

// MarkConsistent turns snapshotting on or off; off also drops every
// snapshot (upstream's `MarkConsistent`,
// k8s.io/apiserver@v0.37.0/pkg/storage/cacher/store/watch_cache_storage.go:93-100,
// is called by its consistency checker when the cache's digest differs
// from etcd's; this lab has no checker).
func (w *WatchCacheStorage) MarkConsistent(consistent bool) {
	w.snapshottingEnabled.Store(consistent)
	if !consistent {
		w.snapshots.Reset()
	}
}

// LatestSnapshotLocked returns the newest snapshot, if snapshotting is on.
func (w *WatchCacheStorage) LatestSnapshotLocked() (Snapshot, bool) {
	if w.SnapshottingEnabled() {
		return w.snapshots.Latest()
	}
	return nil, false
}

// GetLatestSnapshotOrBuildLocked returns the newest snapshot, or, with
// snapshotting off, a copy of the live store's items under prefix key: the
// O(N) copy then runs under the caller's lock, as in 1.36.
func (w *WatchCacheStorage) GetLatestSnapshotOrBuildLocked(key, continueKey string) (Snapshot, error) {
	if snap, ok := w.LatestSnapshotLocked(); ok {
		return snap, nil
	}
	items, err := w.store.OrderedListPrefix(key, continueKey)
	if err != nil {
		return nil, err
	}
	return orderedListSnapshot{Items: items}, nil
}

// GetByKey returns the *Element with that key. Only the one goroutine that
// writes the store may call it without the lock (processEvent does).
func (w *WatchCacheStorage) GetByKey(key string) (interface{}, bool, error) {
	return w.store.GetByKey(key)
}

// Len is the number of objects. Caller holds the lock.
func (w *WatchCacheStorage) Len() int { return w.store.Len() }

// UpdateStoreLocked applies one event to the store, then snapshots it at
// resourceVersion. Caller holds the write lock.
func (w *WatchCacheStorage) UpdateStoreLocked(eventType watch.EventType, elem *Element, resourceVersion uint64) error {
	switch eventType {
	case watch.Added, watch.Modified:
		w.store.addOrUpdateElem(elem)
	case watch.Deleted:
		w.store.deleteElem(elem)
	default:
		return fmt.Errorf("unexpected event type: %v", eventType)
	}
	if w.SnapshottingEnabled() {
		w.snapshots.Add(resourceVersion, w.store)
	}
	return nil
}

// CompactSnapshotsLocked drops the snapshots older than the ring's oldest
// event: the ring bounds how far back the cache answers.
func (w *WatchCacheStorage) CompactSnapshotsLocked(oldestRV uint64) {
	if w.SnapshottingEnabled() {
		w.snapshots.RemoveLess(oldestRV)
	}
}

// ReplaceLocked installs a relist: the store becomes elems, the snapshots
// restart from one at version. Caller holds the write lock.
func (w *WatchCacheStorage) ReplaceLocked(elems []*Element, version uint64) {
	w.store.Replace(elems)
	w.snapshots.Reset()
	if w.SnapshottingEnabled() {
		w.snapshots.Add(version, w.store)
	}
	w.listResourceVersion = version
}

// GetExactSnapshotLocked returns the store as it was at resourceVersion,
// or 410 Expired if no snapshot reaches back that far.
func (w *WatchCacheStorage) GetExactSnapshotLocked(resourceVersion uint64) (Snapshot, error) {
	snap, ok := w.snapshots.GetLessOrEqual(resourceVersion)
	if !ok {
		return nil, errors.NewResourceExpired(fmt.Sprintf("too old resource version: %d", resourceVersion))
	}
	return snap, nil
}

// ListResourceVersion is the RV of the last relist. Caller holds the lock.
func (w *WatchCacheStorage) ListResourceVersion() uint64 { return w.listResourceVersion }
