// Upstream: k8s.io/client-go@v0.37.0/tools/cache/the_real_fifo.go (RealFIFO,
// in the configuration client-go v0.37.0 builds by default: `newQueueFIFO`
// turns AtomicEvents, UnlockWhileProcessing and EmitDeltaTypeBookmark on
// when the AtomicFIFO gate is, as it is by default since 1.36:
// k8s.io/client-go@v0.37.0/tools/cache/controller.go:1063-1093).
//
// Left out: the non-atomic mode (reconcileReplacement against KnownObjects at
// Replace time), metrics, traces for slow handlers, and Pop of one item
// (upstream keeps it for when InOrderInformersBatchProcess is off).

package informer

import (
	"sync"
)

// defaultBatchSize is how many items PopBatch hands over at most, as
// upstream's `defaultBatchSize` (k8s.io/client-go@v0.37.0/tools/cache/the_real_fifo.go:82-84).
const defaultBatchSize = 1000

// RealFIFO is a queue in which every notification from the Reflector is
// kept, in the order it arrived, until the informer pops it. Unlike the
// DeltaFIFO it does not group notifications by object: an update to b that
// arrived after an update to a is processed after it, so the cache and the
// handlers only ever see states the server really had, in its order (a
// relist is the exception to "in its order": its deletions come first, then
// its adds and updates, as one ReplacedAll item).
//
// A relist (Replace) is queued as one ReplacedAll item and a resync as one
// SyncAll item, as upstream's `addReplaceToItemsLocked` and
// `addResyncToItemsLocked` do under AtomicFIFO
// (k8s.io/client-go@v0.37.0/tools/cache/the_real_fifo.go:295-333): the consumer compares the relist with
// its cache when it gets there, not the FIFO when the list arrives. This is
// why the RealFIFO needs no "known objects": it never looks at the cache.
//
// Invariants: items is in arrival order; once synced is closed it stays
// closed. The producer is one Reflector, the consumer one informer.
type RealFIFO struct {
	// lock guards every field below; cond wakes PopBatch when items arrive
	// or the queue closes.
	lock sync.Mutex
	cond sync.Cond

	items []Delta

	// populated is true once anything was queued (the first Replace,
	// normally); initialPopulationCount is how many of the items queued by
	// then are still to be popped. HasSynced is both: populated, and the
	// first list processed, as upstream's `checkSynced_locked`
	// (k8s.io/client-go@v0.37.0/tools/cache/the_real_fifo.go:245-252).
	populated              bool
	initialPopulationCount int
	synced                 chan struct{}
	syncedClosed           bool

	closed    bool
	transform TransformFunc
	batchSize int
}

// NewRealFIFO returns an empty RealFIFO; transform may be nil.
func NewRealFIFO(transform TransformFunc) *RealFIFO {
	f := &RealFIFO{synced: make(chan struct{}), transform: transform, batchSize: defaultBatchSize}
	f.cond.L = &f.lock
	return f
}

// Synced is closed once the first list has been popped and processed.
func (f *RealFIFO) Synced() <-chan struct{} { return f.synced }

// HasSynced reports whether Synced is closed.
func (f *RealFIFO) HasSynced() bool {
	f.lock.Lock()
	defer f.lock.Unlock()
	return f.syncedClosed
}

func (f *RealFIFO) checkSyncedLocked() {
	if f.populated && f.initialPopulationCount == 0 && !f.syncedClosed {
		f.syncedClosed = true
		close(f.synced)
	}
}

// Close wakes PopBatch, which returns ErrFIFOClosed once the queue is empty.
func (f *RealFIFO) Close() {
	f.lock.Lock()
	defer f.lock.Unlock()
	f.closed = true
	f.cond.Broadcast()
}

// Len is the number of queued items (for tests and the README's diagrams).
func (f *RealFIFO) Len() int {
	f.lock.Lock()
	defer f.lock.Unlock()
	return len(f.items)
}

func (f *RealFIFO) addLocked(t DeltaType, obj any) error {
	if _, err := MetaNamespaceKey(obj); err != nil {
		return err
	}
	// A tombstone holds an object that was transformed when it came in.
	if _, tombstone := obj.(DeletedFinalStateUnknown); !tombstone && f.transform != nil {
		var err error
		if obj, err = f.transform(obj); err != nil {
			return err
		}
	}
	f.populated = true
	f.checkSyncedLocked()
	f.items = append(f.items, Delta{Type: t, Object: obj})
	f.cond.Broadcast()
	return nil
}

// Add queues an Added notification (a watch ADDED event).
func (f *RealFIFO) Add(obj any) error {
	f.lock.Lock()
	defer f.lock.Unlock()
	return f.addLocked(Added, obj)
}

// Update queues an Updated notification (a watch MODIFIED event).
func (f *RealFIFO) Update(obj any) error {
	f.lock.Lock()
	defer f.lock.Unlock()
	return f.addLocked(Updated, obj)
}

// Delete queues a Deleted notification (a watch DELETED event), even for an
// object the cache does not hold: the RealFIFO does not look at the cache.
func (f *RealFIFO) Delete(obj any) error {
	f.lock.Lock()
	defer f.lock.Unlock()
	return f.addLocked(Deleted, obj)
}

// Replace queues a relist as one ReplacedAll item. What vanished is worked
// out by the consumer against its cache (see SharedIndexInformer).
func (f *RealFIFO) Replace(objs []any, resourceVersion string) error {
	f.lock.Lock()
	defer f.lock.Unlock()
	if f.transform != nil {
		transformed := make([]any, len(objs))
		for i, obj := range objs {
			var err error
			if transformed[i], err = f.transform(obj); err != nil {
				return err
			}
		}
		objs = transformed
	}
	f.items = append(f.items, Delta{Type: ReplacedAll, Object: ReplacedAllInfo{ResourceVersion: resourceVersion, Objects: objs}})
	f.cond.Broadcast()
	if !f.populated {
		f.populated = true
		// Synced once everything queued so far, this list included, is popped.
		f.initialPopulationCount = len(f.items)
		f.checkSyncedLocked()
	}
	return nil
}

// Resync queues one SyncAll item: the consumer will offer every cached
// object to the handlers that asked for a resync. Nothing is listed.
func (f *RealFIFO) Resync() error {
	f.lock.Lock()
	defer f.lock.Unlock()
	f.items = append(f.items, Delta{Type: SyncAll})
	f.cond.Broadcast()
	return nil
}

// Bookmark queues a bookmark's resourceVersion, so the cache's
// resourceVersion moves in order with the objects. Upstream this comes with
// the AtomicFIFO gate, not InformerResourceVersion: `newQueueFIFO` sets
// `EmitDeltaTypeBookmark` only when AtomicFIFO is on
// (k8s.io/client-go@v0.37.0/tools/cache/controller.go:1075-1078), and without
// it `RealFIFO.Bookmark` drops the bookmark
// (k8s.io/client-go@v0.37.0/tools/cache/the_real_fifo.go:585-588). Ours
// always queues it (TestBookmarkMovesCacheResourceVersion).
func (f *RealFIFO) Bookmark(resourceVersion string) error {
	f.lock.Lock()
	defer f.lock.Unlock()
	f.items = append(f.items, Delta{Type: Bookmark, Object: BookmarkInfo{ResourceVersion: resourceVersion}})
	f.cond.Broadcast()
	return nil
}

// batchable are the types PopBatch may group; a ReplacedAll, SyncAll or
// Bookmark is always handed over alone.
var batchable = map[DeltaType]bool{Added: true, Updated: true, Deleted: true}

// PopBatch waits for items and hands process a batch: consecutive
// Added/Updated/Deleted items, at most batchSize, at most one per object
// (so the batch can be applied to the cache in one step without losing an
// intermediate state a handler must see), never crossing the end of the
// initial list, as upstream's `PopBatch`
// (k8s.io/client-go@v0.37.0/tools/cache/the_real_fifo.go:486-545). process
// runs with the queue unlocked, so the Reflector can keep queueing while the
// batch is applied to the cache and handed to the handlers' buffers
// (UnlockWhileProcessingFIFO), unless the queue is already long (2
// batches), when upstream's `whileProcessing_locked` keeps the lock to push
// back on the producer (k8s.io/client-go@v0.37.0/tools/cache/the_real_fifo.go:451-466);
// we do the same.
func (f *RealFIFO) PopBatch(process func(batch []Delta, isInInitialList bool) error) error {
	f.lock.Lock()
	defer f.lock.Unlock()
	for len(f.items) == 0 {
		if f.closed {
			return ErrFIFOClosed
		}
		f.cond.Wait()
	}
	isInInitialList := !f.syncedClosed
	n := 0
	seen := map[string]bool{}
	for n < len(f.items) && n < f.batchSize {
		if f.initialPopulationCount > 0 && n >= f.initialPopulationCount {
			break
		}
		item := f.items[n]
		if !batchable[item.Type] {
			if n == 0 {
				n = 1
			}
			break
		}
		key, err := MetaNamespaceKey(item.Object)
		if err != nil || seen[key] {
			if n == 0 {
				n = 1
			}
			break
		}
		seen[key] = true
		n++
	}
	batch := make([]Delta, n)
	copy(batch, f.items[:n])
	clear(f.items[:n]) // let the garbage collector have what we hand over
	f.items = f.items[n:]
	defer func() {
		if f.initialPopulationCount > 0 {
			f.initialPopulationCount -= n
			f.checkSyncedLocked()
		}
	}()
	if len(f.items) < 2*f.batchSize {
		f.lock.Unlock()
		defer f.lock.Lock()
	}
	return process(batch, isInInitialList)
}
