// Upstream: k8s.io/client-go@v0.37.0/tools/cache/shared_informer.go
// (sharedProcessor: addListener, distribute, run, shouldResync;
// removeListener; processorListener: add, pop, run, shouldResync,
// ShutdownChan) and tools/cache/synctrack/synctrack.go (SingleFileTracker,
// the per-handler HasSynced).
//
// Left out: handler names, panic recovery around a
// handler (a panicking handler crashes the program here, as it does by
// default upstream, where `processorListener.run` defers
// `HandleCrashWithLogger`, k8s.io/client-go@v0.37.0/tools/cache/shared_informer.go:1495), and
// traces. Where ours differs: upstream's `processorListener` moves each
// notification through two unbuffered channels and a pop goroutine that
// owns a growing ring buffer (k8s.io/client-go@v0.37.0/tools/cache/shared_informer.go:1337-1371);
// ours is one goroutine per handler and a slice under a mutex. The contract
// is the same: add never blocks, whatever the handler is doing, and nothing
// bounds the buffer.

package informer

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/client-go/tools/cache"
)

// The three notifications a handler can get.
type addNotification struct {
	newObj          any
	isInInitialList bool
}
type updateNotification struct{ oldObj, newObj any }
type deleteNotification struct{ oldObj any }

// processorListener delivers notifications to one handler, in order, from
// its own buffer: a slow handler lets its buffer grow and delays nobody
// else (not the other handlers, not the FIFO, not the Reflector).
type processorListener struct {
	handler cache.ResourceEventHandler

	// lock guards pending; wake (capacity 1) says pending may be non-empty.
	lock    sync.Mutex
	pending []any
	wake    chan struct{}

	// HasSynced for this handler: the informer has synced (upstreamSynced)
	// and every initial-list add queued for this handler has been handled
	// (initialPending back to 0).
	upstreamSynced <-chan struct{}
	initialPending atomic.Int64

	// requestedResyncPeriod is what the handler asked for; resyncPeriod
	// what it gets (never below the informer's check period; 0: never).
	requestedResyncPeriod time.Duration
	// resyncLock guards resyncPeriod and nextResync, the earliest time of
	// the next resync.
	resyncLock   sync.Mutex
	resyncPeriod time.Duration
	nextResync   time.Time

	// removed is closed when the handler is removed (RemoveEventHandler):
	// run stops after the call in progress, and drops what is pending.
	// runFinished is closed once no call is in progress and none will
	// come: when run has returned, or at once for a listener removed
	// before it ever ran. Upstream's `runFinished`, new in 1.37, which
	// `ShutDownEventHandler` waits for.
	removed     chan struct{}
	runFinished chan struct{}
}

func newProcessorListener(handler cache.ResourceEventHandler, requested, resyncPeriod time.Duration, now time.Time, upstreamSynced <-chan struct{}) *processorListener {
	return &processorListener{handler: handler, wake: make(chan struct{}, 1), upstreamSynced: upstreamSynced,
		requestedResyncPeriod: requested, resyncPeriod: resyncPeriod, nextResync: now.Add(resyncPeriod),
		removed: make(chan struct{}), runFinished: make(chan struct{})}
}

// ShutdownChan is closed once the handler has stopped for good: removed,
// or its informer stopped, and no call in progress. Upstream:
// `processorListener.ShutdownChan`
// (k8s.io/client-go@v0.37.0/tools/cache/shared_informer.go:1411-1413).
func (p *processorListener) ShutdownChan() <-chan struct{} { return p.runFinished }

// HasSynced is true once the informer has synced and this handler has
// returned from every OnAdd of the initial list (and, for a handler added
// after the start, of the objects that were cached when it was added).
// Upstream: the ResourceEventHandlerRegistration's HasSynced.
func (p *processorListener) HasSynced() bool {
	select {
	case <-p.upstreamSynced:
		return p.initialPending.Load() == 0
	default:
		return false
	}
}

// add queues a notification. It never blocks.
func (p *processorListener) add(n any) {
	if a, ok := n.(addNotification); ok && a.isInInitialList {
		p.initialPending.Add(1)
	}
	p.lock.Lock()
	p.pending = append(p.pending, n)
	p.lock.Unlock()
	select {
	case p.wake <- struct{}{}:
	default: // already woken
	}
}

// run calls the handler for each notification until ctx ends or the
// handler is removed; what is still pending then is dropped. Upstream
// promises less: when it closes the listener's `addCh`, the listener's
// `pop` may still hand over one or more queued notifications (as 1.37's
// doc warns: callbacks may still run after removal); see
// `sharedProcessor.run` (k8s.io/client-go@v0.37.0/tools/cache/shared_informer.go:1266-1302)
// and `removeListener` (k8s.io/client-go@v0.37.0/tools/cache/shared_informer.go:1210-1232).
// It closes runFinished when it returns, as upstream's `processorListener.run` does
// (k8s.io/client-go@v0.37.0/tools/cache/shared_informer.go:1478-1479).
func (p *processorListener) run(ctx context.Context) {
	defer close(p.runFinished)
	for {
		p.lock.Lock()
		if len(p.pending) == 0 {
			p.pending = nil // let a buffer that grew under a burst go
			p.lock.Unlock()
			select {
			case <-p.wake:
				continue
			case <-ctx.Done():
				return
			case <-p.removed:
				return
			}
		}
		n := p.pending[0]
		p.pending[0] = nil
		p.pending = p.pending[1:]
		p.lock.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-p.removed:
			return
		default:
		}
		switch n := n.(type) {
		case addNotification:
			p.handler.OnAdd(n.newObj, n.isInInitialList)
			if n.isInInitialList {
				p.initialPending.Add(-1)
			}
		case updateNotification:
			p.handler.OnUpdate(n.oldObj, n.newObj)
		case deleteNotification:
			p.handler.OnDelete(n.oldObj)
		}
	}
}

func (p *processorListener) shouldResync(now time.Time) bool {
	p.resyncLock.Lock()
	defer p.resyncLock.Unlock()
	return p.resyncPeriod != 0 && !now.Before(p.nextResync)
}

func (p *processorListener) determineNextResync(now time.Time) {
	p.resyncLock.Lock()
	defer p.resyncLock.Unlock()
	p.nextResync = now.Add(p.resyncPeriod)
}

func (p *processorListener) setResyncPeriod(d time.Duration) {
	p.resyncLock.Lock()
	defer p.resyncLock.Unlock()
	p.resyncPeriod = d
}

// sharedProcessor fans notifications out to the listeners.
type sharedProcessor struct {
	// lock guards listeners and ctx. A listener maps to whether it is
	// "syncing": whether it takes resync notifications now.
	lock      sync.RWMutex
	listeners map[*processorListener]bool
	ctx       context.Context // set by run; nil before
	wg        sync.WaitGroup
}

// addListener registers l; it starts at once if the processor runs. A new
// listener is marked syncing, as upstream's `addListener` marks it
// (`p.listeners`: k8s.io/client-go@v0.37.0/tools/cache/shared_informer.go:1198):
// until the first resync check, it also gets the "nothing changed" updates
// of a relist.
func (p *sharedProcessor) addListener(l *processorListener) {
	p.lock.Lock()
	defer p.lock.Unlock()
	if p.listeners == nil {
		p.listeners = map[*processorListener]bool{}
	}
	p.listeners[l] = true
	if p.ctx != nil {
		ctx := p.ctx
		p.wg.Go(func() { l.run(ctx) })
	}
}

// removeListener unregisters l: it gets no more notifications, and stops
// after the call in progress, if any. Removing a listener twice, or one
// of a processor that has stopped, does nothing more. Upstream:
// `removeListener` (k8s.io/client-go@v0.37.0/tools/cache/shared_informer.go:1210-1232),
// which closes `runFinished` itself for a listener that never started.
func (p *sharedProcessor) removeListener(l *processorListener) {
	p.lock.Lock()
	defer p.lock.Unlock()
	if _, ok := p.listeners[l]; !ok {
		return
	}
	delete(p.listeners, l)
	if p.ctx != nil {
		close(l.removed) // run returns and closes runFinished
	} else {
		close(l.runFinished) // it never ran, and now never will
	}
}

// distribute hands n to every listener, or, for a resync notification
// (sync), only to those marked "syncing": a new listener (until the first
// resync check), and at each check those whose resync is due. With no
// resync period that mark never changes, so every handler gets a relist's
// unchanged objects.
func (p *sharedProcessor) distribute(n any, sync bool) {
	p.lock.RLock()
	defer p.lock.RUnlock()
	for l, syncing := range p.listeners {
		if !sync || syncing {
			l.add(n)
		}
	}
}

// run starts every listener and waits for them after ctx ends.
func (p *sharedProcessor) run(ctx context.Context) {
	p.lock.Lock()
	p.ctx = ctx
	for l := range p.listeners {
		p.wg.Go(func() { l.run(ctx) })
	}
	p.lock.Unlock()
	<-ctx.Done()
	p.wg.Wait()
}

// shouldResync marks which listeners are due a resync now and says whether
// any is; the Reflector asks it every resync check period, as it asks
// upstream's `shouldResync` (k8s.io/client-go@v0.37.0/tools/cache/shared_informer.go:1306-1324).
func (p *sharedProcessor) shouldResync(now time.Time) bool {
	p.lock.Lock()
	defer p.lock.Unlock()
	any := false
	for l := range p.listeners {
		due := l.shouldResync(now)
		p.listeners[l] = due
		if due {
			any = true
			l.determineNextResync(now)
		}
	}
	return any
}
