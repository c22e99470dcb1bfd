//go:build exercise

// Exercise time-budget: the stub of time_budget_take.go, built with -tags exercise.
// README: "Write it yourself", time-budget. Check: scripts/labs check 04 time-budget.

package cacher

import "time"

// takeAvailable is called by dispatchEvent when some watchers' inputs are
// full: it returns how long the dispatcher may wait for all of them
// together, and empties the budget. returnUnused gives back what that wait
// did not use. The budget (t.budget) refills with refreshPerSecond of
// budget per second of wall time (t.clock.Now(), since t.last), never above
// maxBudget; t.mu guards it.
//
// TODO(exercise time-budget): Goal: the dispatcher may wait a little for
// watchers whose input is full, but never so long, or so often, that every
// other watcher falls behind: a little wait is earned by quiet time, and
// spent.
//
// As shipped, this stub has no budget at all: a watcher whose input is full
// for an instant is cut off at once, even after a long quiet time.
// TestTimeBudget names the step at which the budget holds the wrong amount.
func (t *timeBudget) takeAvailable() time.Duration {
	return 0
}

// returnUnused: see takeAvailable.
func (t *timeBudget) returnUnused(unused time.Duration) {
}
