// Upstream: k8s.io/client-go@v0.37.0/tools/cache/delta_fifo.go (DeltaFIFO),
// the queue every informer used until `InOrderInformers` (beta in 1.33, GA
// and locked on since 1.36: k8s.io/client-go@v0.37.0/features/known_features.go:127-130)
// replaced it with the RealFIFO. It is the design the 2020
// article (004) describes; it is here so the two can be compared (fifo_test.go).
//
// Left out: EmitDeltaTypeReplaced=false (we always emit Replaced, as every
// informer did), Get/GetByKey/List/ListKeys on the queue, the
// "Impossible dedupDeltas" paths, and metrics.

package informer

import (
	"sort"
	"sync"
)

// KeyListerGetter is what a DeltaFIFO needs of the cache it feeds: its keys,
// and the object under a key. *Indexer satisfies it.
type KeyListerGetter interface {
	ListKeys() []string
	GetByKey(key string) (any, bool, error)
}

// DeltaFIFO is a queue of objects, not of notifications: each key is in the
// queue at most once, holding every change to that object since it was
// last popped (its Deltas). A key keeps its place in the queue while more
// changes to it arrive, so changes to different objects are processed in the
// order their objects *first* changed, not in the order the changes happened.
// Two Deleted in a row collapse into one (keeping the one that knows the
// final state).
//
// The "known objects" are the consumer's cache: Delete drops a delete of an
// object that is neither known nor queued, Replace queues a
// DeletedFinalStateUnknown for every known or queued object the list no
// longer has, and Resync queues a Sync for every known object not queued.
type DeltaFIFO struct {
	// lock guards everything below; cond wakes Pop.
	lock sync.Mutex
	cond sync.Cond

	items map[string]Deltas // key -> changes since last popped; never empty
	queue []string          // keys in pop order; a key is here iff in items

	knownObjects KeyListerGetter
	transform    TransformFunc

	populated              bool
	initialPopulationCount int
	synced                 chan struct{}
	syncedClosed           bool
	closed                 bool
}

// NewDeltaFIFO returns an empty DeltaFIFO over the cache known (required).
func NewDeltaFIFO(known KeyListerGetter, transform TransformFunc) *DeltaFIFO {
	f := &DeltaFIFO{items: map[string]Deltas{}, knownObjects: known, transform: transform, synced: make(chan struct{})}
	f.cond.L = &f.lock
	return f
}

// Synced is closed once the first list has been popped.
func (f *DeltaFIFO) Synced() <-chan struct{} { return f.synced }

// HasSynced reports whether Synced is closed.
func (f *DeltaFIFO) HasSynced() bool {
	f.lock.Lock()
	defer f.lock.Unlock()
	return f.syncedClosed
}

func (f *DeltaFIFO) checkSyncedLocked() {
	if f.populated && f.initialPopulationCount == 0 && !f.syncedClosed {
		f.syncedClosed = true
		close(f.synced)
	}
}

// Close wakes Pop, which returns ErrFIFOClosed once the queue is empty.
func (f *DeltaFIFO) Close() {
	f.lock.Lock()
	defer f.lock.Unlock()
	f.closed = true
	f.cond.Broadcast()
}

// Add queues an Added delta.
func (f *DeltaFIFO) Add(obj any) error {
	f.lock.Lock()
	defer f.lock.Unlock()
	f.populated = true
	f.checkSyncedLocked()
	return f.queueActionLocked(Added, obj)
}

// Update queues an Updated delta.
func (f *DeltaFIFO) Update(obj any) error {
	f.lock.Lock()
	defer f.lock.Unlock()
	f.populated = true
	f.checkSyncedLocked()
	return f.queueActionLocked(Updated, obj)
}

// Delete queues a Deleted delta, unless the object is neither in the cache
// nor queued: then there is nothing to tell anyone.
func (f *DeltaFIFO) Delete(obj any) error {
	key, err := MetaNamespaceKey(obj)
	if err != nil {
		return err
	}
	f.lock.Lock()
	defer f.lock.Unlock()
	f.populated = true
	f.checkSyncedLocked()
	_, known, err := f.knownObjects.GetByKey(key)
	if _, queued := f.items[key]; err == nil && !known && !queued {
		return nil
	}
	return f.queueActionLocked(Deleted, obj)
}

// Bookmark does nothing: a DeltaFIFO has no place for a resourceVersion.
func (f *DeltaFIFO) Bookmark(string) error { return nil }

func (f *DeltaFIFO) queueActionLocked(t DeltaType, obj any) error {
	key, err := MetaNamespaceKey(obj)
	if err != nil {
		return err
	}
	// A Sync re-offers an object already transformed; a tombstone holds one.
	if _, tombstone := obj.(DeletedFinalStateUnknown); !tombstone && t != Sync && f.transform != nil {
		if obj, err = f.transform(obj); err != nil {
			return err
		}
	}
	// Deleted after Deleted collapses into one (dedup_deltas.go).
	deltas := dedupDeltas(append(f.items[key], Delta{Type: t, Object: obj}))
	if _, queued := f.items[key]; !queued {
		f.queue = append(f.queue, key)
	}
	f.items[key] = deltas
	f.cond.Broadcast()
	return nil
}

// Pop waits for a key and hands process all of its Deltas, with the queue
// locked, as upstream's `DeltaFIFO.Pop` does
// (k8s.io/client-go@v0.37.0/tools/cache/delta_fifo.go:562-608). In a shared
// informer no handler runs under that lock: process updates the cache and
// hands each handler's notification to its own buffer, and upstream's
// `processorListener.pop` takes it whatever the handler is doing
// (k8s.io/client-go@v0.37.0/tools/cache/shared_informer.go:1444-1476). What
// the lock holds up is the Reflector, while the cache is updated. A handler
// runs under it only in the low-level controller of `cache.NewInformer`,
// whose `Process` calls `processDeltas` with the handler itself
// (k8s.io/client-go@v0.37.0/tools/cache/controller.go:1042-1046).
func (f *DeltaFIFO) Pop(process func(Deltas, bool) error) error {
	f.lock.Lock()
	defer f.lock.Unlock()
	for len(f.queue) == 0 {
		if f.closed {
			return ErrFIFOClosed
		}
		f.cond.Wait()
	}
	isInInitialList := !f.syncedClosed
	key := f.queue[0]
	f.queue = f.queue[1:]
	if f.initialPopulationCount > 0 {
		f.initialPopulationCount--
		f.checkSyncedLocked()
	}
	deltas := f.items[key]
	delete(f.items, key)
	return process(deltas, isInInitialList)
}

// Replace queues a Replaced delta for each listed object, then a
// DeletedFinalStateUnknown for every queued or known object the list does not
// have: it vanished while we were not watching, and its last state known is
// all we can hand over. Upstream's `Replace` walks `f.items`, a map, here,
// in random order (k8s.io/client-go@v0.37.0/tools/cache/delta_fifo.go:642-664);
// we sort the vanished keys so a run is repeatable.
func (f *DeltaFIFO) Replace(list []any, _ string) error {
	f.lock.Lock()
	defer f.lock.Unlock()
	listed := make(map[string]bool, len(list))
	for _, obj := range list {
		key, err := MetaNamespaceKey(obj)
		if err != nil {
			return err
		}
		listed[key] = true
		if err := f.queueActionLocked(Replaced, obj); err != nil {
			return err
		}
	}
	var vanished []DeletedFinalStateUnknown
	for key, deltas := range f.items {
		if listed[key] {
			continue
		}
		last := deltas.Newest().Object
		if d, ok := last.(DeletedFinalStateUnknown); ok {
			last = d.Obj
		}
		vanished = append(vanished, DeletedFinalStateUnknown{Key: key, Obj: last})
	}
	for _, key := range f.knownObjects.ListKeys() {
		if listed[key] || len(f.items[key]) > 0 {
			continue
		}
		obj, _, _ := f.knownObjects.GetByKey(key)
		vanished = append(vanished, DeletedFinalStateUnknown{Key: key, Obj: obj})
	}
	sort.Slice(vanished, func(i, j int) bool { return vanished[i].Key < vanished[j].Key })
	for _, d := range vanished {
		if err := f.queueActionLocked(Deleted, d); err != nil {
			return err
		}
	}
	if !f.populated {
		f.populated = true
		f.initialPopulationCount = len(listed) + len(vanished)
		f.checkSyncedLocked()
	}
	return nil
}

// Resync queues a Sync delta for every known object that is not queued
// already (a queued one will be processed anyway).
func (f *DeltaFIFO) Resync() error {
	f.lock.Lock()
	defer f.lock.Unlock()
	for _, key := range f.knownObjects.ListKeys() {
		if len(f.items[key]) > 0 {
			continue
		}
		obj, exists, err := f.knownObjects.GetByKey(key)
		if err != nil || !exists {
			continue
		}
		if err := f.queueActionLocked(Sync, obj); err != nil {
			return err
		}
	}
	return nil
}
