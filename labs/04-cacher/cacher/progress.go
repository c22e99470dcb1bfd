package cacher

// One progress requester per Cacher, shared by every reader that waits for
// the cache to catch up with etcd.
//
// Upstream twin: the `ConditionalProgressRequester` type
// (k8s.io/apiserver@v0.37.0/pkg/storage/cacher/progress/watch_progress.go:55-66)
// and its Run, Add and Remove
// (k8s.io/apiserver@v0.37.0/pkg/storage/cacher/progress/watch_progress.go:68-129),
// one per Cacher, made in `NewCacherFromConfig`
// (k8s.io/apiserver@v0.37.0/pkg/storage/cacher/cacher.go:351-443).
//
// A consistent read (a LIST with RV "", a streaming list) needs the cache
// to reach etcd's current revision. On a busy resource events carry it
// there; on an idle one nothing would, so while someone waits, the Cacher
// asks etcd for a progress notification (RequestWatchProgress), which its
// one etcd watch receives as a bookmark. One request serves every waiter:
// etcd answers on the watch stream, and the answer moves the cache's RV for
// all of them. So the requester counts waiters (add, remove) and, while
// there is at least one, sends one request every progressRequestPeriod,
// however many wait: 100 concurrent consistent LISTs cost etcd 10 requests
// a second, not 1,000 (TestOneProgressRequesterForAllWaitingReaders).
//
// One difference: upstream's timer is made when `Run` starts and re-armed
// after each request
// (k8s.io/apiserver@v0.37.0/pkg/storage/cacher/progress/watch_progress.go:68-108),
// so the first waiter after a quiet spell gets a request at once, and then
// one every 100 ms; ours does the same from the last request's time.
// Upstream's loop waits for a waiter on a sync.Cond; ours on a channel.

import (
	"context"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// progressRequestPeriod: how often the requester asks etcd for progress
// while some reader waits (upstream: the same `progressRequestPeriod`,
// k8s.io/apiserver@v0.37.0/pkg/storage/cacher/progress/watch_progress.go:36).
const progressRequestPeriod = 100 * time.Millisecond

type progressRequester struct {
	clock   clock.Clock
	request func(context.Context) error // storage.RequestWatchProgress

	mu      sync.Mutex // guards waiting
	waiting int
	// wake tells run that waiting went from 0 to 1.
	wake chan struct{}
}

func newProgressRequester(clk clock.Clock, request func(context.Context) error) *progressRequester {
	return &progressRequester{clock: clk, request: request, wake: make(chan struct{}, 1)}
}

// add registers one waiting reader.
func (p *progressRequester) add() {
	p.mu.Lock()
	p.waiting++
	p.mu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// remove unregisters one waiting reader.
func (p *progressRequester) remove() {
	p.mu.Lock()
	p.waiting--
	p.mu.Unlock()
}

func (p *progressRequester) waiters() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.waiting
}

// run sends the requests until ctx ends. onRequest counts each one.
// Errors are ignored: the waiters then time out and fall back to etcd.
func (p *progressRequester) run(ctx context.Context, onRequest func()) {
	var last time.Time
	for {
		if p.waiters() == 0 {
			select {
			case <-p.wake:
				continue
			case <-ctx.Done():
				return
			}
		}
		if last.IsZero() || p.clock.Since(last) >= progressRequestPeriod {
			onRequest()
			_ = p.request(ctx)
			last = p.clock.Now()
		}
		timer := p.clock.NewTimer(progressRequestPeriod - p.clock.Since(last))
		select {
		case <-timer.C():
		case <-ctx.Done():
			timer.Stop()
			return
		}
	}
}
