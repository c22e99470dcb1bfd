// Upstream: k8s.io/client-go@v0.37.0/tools/cache/shared_informer.go
// (sharedIndexInformer: RunWithContext, AddEventHandlerWithOptions,
// handleDeltas, handleBatchDeltas, OnAdd/OnUpdate/OnDelete) and
// controller.go (controller.processLoop, processDeltas,
// processDeltasInBatch, processReplacedAllInfo, newQueueFIFO).
//
// Left out: the typed wrappers of 1.37 (TypedSharedIndexInformer,
// DeletedObject: DEEPER.md, "What changed in 1.37"), SetWatchErrorHandler after creation (ours
// is an option), the cache mutation detector, metrics and identifiers,
// IsStopped/HasStarted, and running without the batch mode
// (InOrderInformersBatchProcess off). Kept from the past on purpose: the
// UseDeltaFIFO option, so the same informer can run on the classic queue.

package informer

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
)

// minimumResyncPeriod is the shortest handler resync period, as upstream's
// `minimumResyncPeriod` (k8s.io/client-go@v0.37.0/tools/cache/shared_informer.go:993).
const minimumResyncPeriod = time.Second

// Options configures a SharedIndexInformer.
type Options struct {
	// ResyncPeriod is the default handler resync period and how often the
	// Reflector checks whether a handler is due one. 0: no resyncs.
	ResyncPeriod time.Duration
	// Indexers are the cache's indexes.
	Indexers Indexers
	// Transform rewrites objects before they are queued (StripManagedFields).
	Transform TransformFunc
	// Clock times the Reflector and the resyncs (default: real).
	Clock clock.Clock
	// UseDeltaFIFO runs the informer on the classic DeltaFIFO instead of
	// the RealFIFO (what InOrderInformers=false did until 1.36, in
	// `newQueueFIFO`: k8s.io/client-go@v0.37.0/tools/cache/controller.go:1063-1093).
	UseDeltaFIFO bool
	// Reflector passes options on to the Reflector (its Clock, ResyncPeriod
	// and ShouldResync are set by the informer).
	Reflector ReflectorOptions
}

// fifo is what the informer needs of a queue.
type fifo interface {
	ReflectorStore
	Synced() <-chan struct{}
	Close()
}

// SharedIndexInformer lists and watches one resource into an Indexer and
// tells any number of handlers what changed. Data flows:
//
//	Reflector --Add/Update/Delete/Replace--> RealFIFO --PopBatch--> processDeltas
//	  --> Indexer (the cache first) --> sharedProcessor.distribute
//	  --> one processorListener per handler --> OnAdd/OnUpdate/OnDelete
//
// The cache is updated before the handlers are told, so a handler that reads
// the cache (a Lister) sees at least the state its notification describes.
type SharedIndexInformer struct {
	lw      cache.ListerWatcherWithContext
	indexer *Indexer
	opts    Options
	clock   clock.Clock

	processor *sharedProcessor
	synced    chan struct{} // closed when the FIFO has processed the first list (a DeltaFIFO closes it as it pops the last initial item, as upstream's)

	// startedLock guards started, stopped, reflector, queue and resyncCheckPeriod.
	startedLock       sync.Mutex
	started, stopped  bool
	reflector         *Reflector
	queue             fifo // for Status (status.go)
	resyncCheckPeriod time.Duration

	// blockDeltas is held while a batch is applied and distributed, and
	// while a late handler gets its copy of the cache: the late handler then
	// sees each change exactly once, either in that copy or as a notification.
	blockDeltas sync.Mutex
}

// NewSharedIndexInformer returns an informer over lw. Run starts it.
func NewSharedIndexInformer(lw cache.ListerWatcherWithContext, opts Options) *SharedIndexInformer {
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	return &SharedIndexInformer{
		lw: lw, indexer: NewIndexer(opts.Indexers), opts: opts, clock: opts.Clock,
		processor: &sharedProcessor{}, synced: make(chan struct{}),
		resyncCheckPeriod: opts.ResyncPeriod,
	}
}

// GetIndexer returns the cache.
func (s *SharedIndexInformer) GetIndexer() *Indexer { return s.indexer }

// HasSynced reports whether the first list has been processed (put in the
// cache and distributed; the handlers may still be working through it: ask
// a handler's registration for that).
func (s *SharedIndexInformer) HasSynced() bool {
	select {
	case <-s.synced:
		return true
	default:
		return false
	}
}

// LastSyncResourceVersion is the resourceVersion the Reflector has reached:
// what upstream's `dummyController.LastSyncResourceVersion` reports under
// InformerResourceVersion (k8s.io/client-go@v0.37.0/tools/cache/shared_informer.go:785-791).
// The cache's own, which moves only as the FIFO is processed, is
// GetIndexer().LastStoreSyncResourceVersion() (upstream: AtomicFIFO's).
func (s *SharedIndexInformer) LastSyncResourceVersion() string {
	s.startedLock.Lock()
	defer s.startedLock.Unlock()
	if s.reflector == nil {
		return ""
	}
	return s.reflector.LastSyncResourceVersion()
}

// Registration is what AddEventHandler returns: the handler's own HasSynced.
type Registration interface {
	HasSynced() bool
}

// AddEventHandler adds a handler with the informer's resync period.
func (s *SharedIndexInformer) AddEventHandler(h cache.ResourceEventHandler) (Registration, error) {
	return s.AddEventHandlerWithResyncPeriod(h, s.opts.ResyncPeriod)
}

// AddEventHandlerWithResyncPeriod adds a handler that wants a resync every
// resyncPeriod (0: never). Added after Run started, the handler first gets
// an OnAdd for every object in the cache (isInInitialList true), then the
// changes after that.
func (s *SharedIndexInformer) AddEventHandlerWithResyncPeriod(h cache.ResourceEventHandler, resyncPeriod time.Duration) (Registration, error) {
	s.startedLock.Lock()
	defer s.startedLock.Unlock()
	if s.stopped {
		return nil, fmt.Errorf("handler %v was not added to shared informer because it has stopped already", h)
	}
	if resyncPeriod > 0 {
		resyncPeriod = max(resyncPeriod, minimumResyncPeriod)
		if resyncPeriod < s.resyncCheckPeriod {
			if s.started {
				resyncPeriod = s.resyncCheckPeriod
			} else {
				// Check more often, for this handler's sake.
				s.resyncCheckPeriod = resyncPeriod
				s.processor.lock.RLock()
				for l := range s.processor.listeners {
					l.setResyncPeriod(determineResyncPeriod(l.requestedResyncPeriod, resyncPeriod))
				}
				s.processor.lock.RUnlock()
			}
		}
	}
	l := newProcessorListener(h, resyncPeriod, determineResyncPeriod(resyncPeriod, s.resyncCheckPeriod), s.clock.Now(), s.synced)
	if !s.started {
		s.processor.addListener(l)
		return l, nil
	}
	s.blockDeltas.Lock()
	defer s.blockDeltas.Unlock()
	s.processor.addListener(l)
	for _, obj := range s.indexer.List() {
		l.add(addNotification{newObj: obj, isInInitialList: true})
	}
	return l, nil
}

// RemoveEventHandler unregisters the handler of reg. It does not wait: a
// call in progress goes on after it returns, and may still be running
// (ShutDownEventHandler waits). Notifications queued for the handler and
// not yet delivered are dropped. Removing it again does nothing. Upstream:
// `sharedIndexInformer.RemoveEventHandler`, under `blockDeltas` as here
// (k8s.io/client-go@v0.37.0/tools/cache/shared_informer.go:1126-1137), whose
// interface comment says, since 1.37, that it is asynchronous
// (`RemoveEventHandler`: k8s.io/client-go@v0.37.0/tools/cache/shared_informer.go:178-190).
func (s *SharedIndexInformer) RemoveEventHandler(reg Registration) error {
	l, ok := reg.(*processorListener)
	if !ok {
		return fmt.Errorf("RemoveEventHandler: %T is not a registration of this informer", reg)
	}
	s.startedLock.Lock()
	defer s.startedLock.Unlock()
	s.blockDeltas.Lock()
	defer s.blockDeltas.Unlock()
	s.processor.removeListener(l)
	return nil
}

// ShutDownEventHandler removes the handler of reg and waits until it has
// stopped: when it returns, no call of that handler is in progress and
// none will come, so the handler's resources can be released. It must not
// be called from inside that handler's own callbacks: it would wait for
// itself. Upstream: `ShutDownEventHandler`, new in 1.37
// (k8s.io/client-go@v0.37.0/tools/cache/shared_informer.go:1145-1155), a
// function as here, which waits on the registration's `ShutdownChan`.
// TestDifferentialShutDownEventHandler runs both.
func ShutDownEventHandler(s *SharedIndexInformer, reg Registration) error {
	if err := s.RemoveEventHandler(reg); err != nil {
		return err
	}
	<-reg.(*processorListener).ShutdownChan()
	return nil
}

// determineResyncPeriod: a handler cannot resync more often than the
// informer checks, and not at all if the informer never checks.
func determineResyncPeriod(desired, check time.Duration) time.Duration {
	switch {
	case desired == 0:
		return 0
	case check == 0:
		return 0
	case desired < check:
		return check
	}
	return desired
}

// Run runs the informer until ctx ends, and returns when everything it
// started has stopped. An informer runs once: a second Run returns at once.
func (s *SharedIndexInformer) Run(ctx context.Context) {
	var queue fifo
	if !func() bool {
		s.startedLock.Lock()
		defer s.startedLock.Unlock()
		if s.started {
			return false
		}
		if s.opts.UseDeltaFIFO {
			queue = NewDeltaFIFO(s.indexer, s.opts.Transform)
		} else {
			queue = NewRealFIFO(s.opts.Transform)
		}
		ropts := s.opts.Reflector
		ropts.Clock = s.clock
		ropts.ResyncPeriod = s.resyncCheckPeriod
		ropts.ShouldResync = func() bool { return s.processor.shouldResync(s.clock.Now()) }
		s.reflector = NewReflector(s.lw, queue, ropts)
		s.queue = queue
		s.started = true
		return true
	}() {
		return
	}

	var wg sync.WaitGroup
	// The processor stops after the FIFO loop, so no handler misses a
	// notification the cache already reflects while the informer runs.
	processorCtx, stopProcessor := context.WithCancel(context.WithoutCancel(ctx))
	wg.Go(func() { s.processor.run(processorCtx) })
	wg.Go(func() {
		select {
		case <-queue.Synced():
			close(s.synced)
		case <-ctx.Done():
		}
	})
	wg.Go(func() { s.reflector.Run(ctx) })
	wg.Go(func() {
		<-ctx.Done()
		queue.Close()
	})
	s.processLoop(queue)
	func() {
		s.startedLock.Lock()
		defer s.startedLock.Unlock()
		s.stopped = true
	}()
	stopProcessor()
	wg.Wait()
}

// processLoop pops until the FIFO is closed.
func (s *SharedIndexInformer) processLoop(queue fifo) {
	for {
		var err error
		switch q := queue.(type) {
		case *RealFIFO:
			err = q.PopBatch(s.handleBatch)
		case *DeltaFIFO:
			err = q.Pop(func(d Deltas, initial bool) error { return s.handleBatch(d, initial) })
		}
		if err == ErrFIFOClosed {
			return
		}
		if err != nil && s.opts.Reflector.WatchErrorHandler != nil {
			s.opts.Reflector.WatchErrorHandler(err)
		}
	}
}

// handleBatch applies popped deltas to the cache and distributes them. A
// RealFIFO batch has distinct objects and is applied to the cache in one
// step (one lock), then distributed in order; a DeltaFIFO's Deltas are all
// of one object, applied in order in one step, then announced.
func (s *SharedIndexInformer) handleBatch(deltas []Delta, isInInitialList bool) error {
	s.blockDeltas.Lock()
	defer s.blockDeltas.Unlock()
	var ops []storeOp
	var notes []func()
	flush := func() error {
		if len(ops) == 0 {
			return nil
		}
		err := s.indexer.apply(ops)
		ops = ops[:0]
		if err != nil {
			notes = notes[:0]
			return err
		}
		for _, n := range notes {
			n()
		}
		notes = notes[:0]
		return nil
	}
	// pending tracks what ops not yet applied will leave under a key: a
	// DeltaFIFO's Deltas change one key several times.
	pending := map[string]any{}
	current := func(key string) (any, bool) {
		if obj, ok := pending[key]; ok {
			return obj, obj != nil
		}
		obj, ok, _ := s.indexer.GetByKey(key)
		return obj, ok
	}
	for _, d := range deltas {
		switch d.Type {
		case Added, Updated, Replaced, Sync:
			key, err := MetaNamespaceKey(d.Object)
			if err != nil {
				return err
			}
			obj := d.Object
			old, exists := current(key)
			ops = append(ops, storeOp{key: key, obj: obj})
			pending[key] = obj
			if exists {
				notes = append(notes, func() { s.onUpdate(old, obj) })
			} else {
				notes = append(notes, func() { s.onAdd(obj, isInInitialList) })
			}
		case Deleted:
			key, err := MetaNamespaceKey(d.Object)
			if err != nil {
				return err
			}
			obj := d.Object
			ops = append(ops, storeOp{key: key, obj: obj, delete: true})
			pending[key] = nil
			// Told even if the cache did not have it: the server said so.
			notes = append(notes, func() { s.onDelete(obj) })
		case ReplacedAll:
			if err := flush(); err != nil {
				return err
			}
			clear(pending)
			info, ok := d.Object.(ReplacedAllInfo)
			if !ok {
				return fmt.Errorf("ReplacedAll did not contain ReplacedAllInfo: %T", d.Object)
			}
			if err := s.replaceAll(info, isInInitialList); err != nil {
				return err
			}
		case SyncAll:
			if err := flush(); err != nil {
				return err
			}
			for _, obj := range s.indexer.List() {
				s.onUpdate(obj, obj)
			}
		case Bookmark:
			if err := flush(); err != nil {
				return err
			}
			if info, ok := d.Object.(BookmarkInfo); ok {
				s.indexer.Bookmark(info.ResourceVersion)
			}
		}
	}
	return flush()
}

// replaceAll processes a relist: every cached object the list lacks is
// deleted with a DeletedFinalStateUnknown (we missed its DELETED event),
// every listed object is an add or an update, and the cache becomes the
// list. The cache changes first, then the handlers hear the deletions, then
// the adds and updates in list order, as upstream's `processReplacedAllInfo`
// (k8s.io/client-go@v0.37.0/tools/cache/controller.go:972-1017). Upstream
// finds the vanished objects by walking the keys of a map (`ListKeys`:
// k8s.io/client-go@v0.37.0/tools/cache/the_real_fifo.go:701); we sort them
// by key, so a run repeats.
func (s *SharedIndexInformer) replaceAll(info ReplacedAllInfo, isInInitialList bool) error {
	listed := make(map[string]bool, len(info.Objects))
	type replacement struct{ old, new any }
	replacements := make([]replacement, 0, len(info.Objects))
	for _, obj := range info.Objects {
		key, err := MetaNamespaceKey(obj)
		if err != nil {
			return err
		}
		listed[key] = true
		old, _, _ := s.indexer.GetByKey(key)
		replacements = append(replacements, replacement{old: old, new: obj})
	}
	deletions := vanished(s.indexer, listed) // vanished.go
	if err := s.indexer.Replace(info.Objects, info.ResourceVersion); err != nil {
		return err
	}
	for _, d := range deletions {
		s.onDelete(d)
	}
	for _, r := range replacements {
		if r.old != nil {
			s.onUpdate(r.old, r.new)
		} else {
			s.onAdd(r.new, isInInitialList)
		}
	}
	return nil
}

func (s *SharedIndexInformer) onAdd(obj any, isInInitialList bool) {
	s.processor.distribute(addNotification{newObj: obj, isInInitialList: isInInitialList}, false)
}

// onUpdate: an update that did not change the resourceVersion is a resync
// (a SyncAll, or a relist that found the object unchanged), and goes only to
// the handlers marked "syncing" (see sharedProcessor.distribute: every
// handler, when there is no resync period), as upstream's `OnUpdate`
// decides with `isSync` (k8s.io/client-go@v0.37.0/tools/cache/shared_informer.go:1091-1110).
func (s *SharedIndexInformer) onUpdate(old, new any) {
	isSync := false
	if o, err := meta.Accessor(old); err == nil {
		if n, err := meta.Accessor(new); err == nil {
			isSync = o.GetResourceVersion() == n.GetResourceVersion()
		}
	}
	s.processor.distribute(updateNotification{oldObj: old, newObj: new}, isSync)
}

func (s *SharedIndexInformer) onDelete(obj any) {
	s.processor.distribute(deleteNotification{oldObj: obj}, false)
}
