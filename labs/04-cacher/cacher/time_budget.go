package cacher

// The time budget: how long the dispatcher may wait for slow watchers.
//
// Upstream twin: k8s.io/apiserver@v0.36.4/pkg/storage/cacher/time_budget.go,
// type timeBudgetImpl (takeAvailable, returnUnused), with the same numbers:
// at most 100 ms in the budget, refilled at 50 ms per second of wall time.
//
// Why a budget: one dispatcher goroutine serves every watcher of the
// resource, so time it spends waiting for one slow watcher delays all the
// others. The budget is shared by all blocked watchers of all events: a
// burst of slow consumers can take at most 100 ms, and then the budget
// refills slowly, so a watcher that stays slow is cut off quickly instead of
// stalling everyone at 100 ms per event.
//
// Nothing is left out. One difference: upstream's timeBudgetImpl has a clock
// field, but newTimeBudget always sets the real clock and dispatchEvent
// measures the time spent with time.Now; here both use the Cacher's
// injected clock, so tests run the budget on fake time.

import (
	"sync"
	"time"

	"k8s.io/utils/clock"
)

const (
	refreshPerSecond = 50 * time.Millisecond
	maxBudget        = 100 * time.Millisecond
)

type timeBudget struct {
	mu     sync.Mutex // guards budget and last
	clock  clock.Clock
	budget time.Duration
	last   time.Time // when budget was last refilled
}

func newTimeBudget(clk clock.Clock) *timeBudget {
	// It starts empty: the first blocked dispatch gets only what accrued
	// since the cacher started, as upstream.
	return &timeBudget{clock: clk, last: clk.Now()}
}

// takeAvailable refills the budget for the time since the last call and
// hands all of it to the caller, leaving zero.
func (t *timeBudget) takeAvailable() time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.clock.Now()
	elapsed := now.Sub(t.last).Seconds()
	if elapsed > 0 {
		// 50 ms of budget per second elapsed.
		t.budget += time.Duration(elapsed * float64(refreshPerSecond))
	}
	t.budget = min(t.budget, maxBudget)
	t.last = now
	taken := t.budget
	t.budget = 0
	return taken
}

// returnUnused gives back what the caller did not spend.
func (t *timeBudget) returnUnused(unused time.Duration) {
	if unused <= 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.budget = min(t.budget+unused, maxBudget)
}
