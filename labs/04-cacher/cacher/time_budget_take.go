//go:build !exercise

// Upstream: `takeAvailable` and `returnUnused` of timeBudgetImpl
// (k8s.io/apiserver@v0.37.0/pkg/storage/cacher/time_budget.go:71-101).
//
// This is the solution of the exercise time-budget (README: "Write it
// yourself"); time_budget_take_exercise.go is the stub built with -tags
// exercise. The type, its numbers and why it exists: time_budget.go.

package cacher

import "time"

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
