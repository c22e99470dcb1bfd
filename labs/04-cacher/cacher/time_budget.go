package cacher

// The time budget: how long the dispatcher may wait for slow watchers.
//
// Upstream twin: the `timeBudgetImpl` type of
// k8s.io/apiserver@v0.37.0/pkg/storage/cacher/time_budget.go:50-101
// (takeAvailable, returnUnused), with the same numbers, `maxBudget` and
// `refreshPerSecond`: at most 100 ms in the budget, refilled at 50 ms per
// second of wall time (k8s.io/apiserver@v0.37.0/pkg/storage/cacher/time_budget.go:26-29).
//
// Why a budget: one dispatcher goroutine serves every watcher of the
// resource, so time it spends waiting for one slow watcher delays all the
// others. The budget is shared by all blocked watchers of all events: a
// burst of slow consumers can take at most 100 ms, and then the budget
// refills slowly, so a watcher that stays slow is cut off quickly instead of
// stalling everyone at 100 ms per event.
//
// Nothing is left out. One difference: upstream's timeBudgetImpl has a clock
// field, but `newTimeBudget` always sets the real clock
// (k8s.io/apiserver@v0.37.0/pkg/storage/cacher/time_budget.go:60-68) and
// dispatchEvent measures the time spent from `startTime`, a time.Now
// (k8s.io/apiserver@v0.37.0/pkg/storage/cacher/cacher.go:1036-1060); here
// both use the Cacher's injected clock, so tests run the budget on fake
// time.

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
	// since the cacher started, as upstream's `newTimeBudget` starts it
	// at 0 (k8s.io/apiserver@v0.37.0/pkg/storage/cacher/time_budget.go:60-68).
	return &timeBudget{clock: clk, last: clk.Now()}
}

// takeAvailable and returnUnused: time_budget_take.go (the exercise time-budget).

// available is what takeAvailable would hand out now, without taking it
// (for the live view: state.go).
func (t *timeBudget) available() time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	refill := time.Duration(max(0, t.clock.Since(t.last).Seconds()) * float64(refreshPerSecond))
	return min(t.budget+refill, maxBudget)
}
