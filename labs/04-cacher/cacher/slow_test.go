package cacher

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/storage"
	testingclock "k8s.io/utils/clock/testing"
)

// A watcher that never reads fills its input; the dispatcher then waits for
// it at most the time budget (100 ms, on fake time here), terminates it, and
// goes on. The other watchers received the event it blocked on before any
// time passed (the non-blocking pass comes first), and the events after it
// exactly one budget later.
func TestSlowWatcherIsTerminatedWithinTheBudget(t *testing.T) {
	checkLeaks(t)
	clk := testingclock.NewFakeClock(time.Now())
	e := newPodEnv(t, clk)
	ctx := context.Background()
	// Ten idle seconds fill the budget to its 100 ms cap.
	clk.Step(10 * time.Second)
	startRV, _ := e.store.GetCurrentResourceVersion(ctx)
	opts := storage.ListOptions{ResourceVersion: fmt.Sprint(startRV), Recursive: true, Predicate: everything()}

	slow, err := e.cacher.Watch(ctx, e.prefix, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Stop()
	inputSize := cap(slow.(*cacheWatcher).input)
	if inputSize != 10 {
		t.Fatalf("input holds %d, want 10 (capacity 100 / 75 s, raised to the minimum)", inputSize)
	}
	fast := make([]*received, 3)
	var consumers sync.WaitGroup
	for i := range fast {
		w, err := e.cacher.Watch(ctx, e.prefix, opts)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		fast[i] = &received{}
		consumers.Add(1)
		go consume(w, fast[i], &consumers)
	}
	// The slow watcher takes inputSize events into result (the client's
	// buffer), one its goroutine holds while result is full, and inputSize
	// into input: event 2*inputSize+2 finds it full.
	if c := cap(slow.(*cacheWatcher).result); c != inputSize {
		t.Fatalf("result holds %d, want %d like input", c, inputSize)
	}
	blockedAt := 2*inputSize + 2
	const writes = 25
	sw := slow.(*cacheWatcher)
	for i := range writes {
		e.create(t, "ns", fmt.Sprint("p", i), "", nil)
		if k := i + 1; k < blockedAt {
			// Let each event settle before the next: every fast watcher
			// has it, and the slow watcher's goroutine has moved what it
			// can into result (inputSize), holds one, and leaves the rest
			// in input. Without this wait the goroutine may lag, the
			// dispatcher find input full earlier, and the event it blocks
			// on be another one from run to run.
			waitFor(t, fmt.Sprintf("event %d settled", k), func() bool {
				for _, r := range fast {
					if r.len() != k {
						return false
					}
				}
				return len(sw.result) == min(k, inputSize) && len(sw.input) == max(0, k-inputSize-1)
			})
		}
	}
	waitFor(t, "the dispatcher blocked on the slow watcher", func() bool {
		return e.cacher.Metrics().BlockedDispatches == 1
	})
	// No fake time has passed, yet every fast watcher has the event the
	// dispatcher is blocked on, and nothing after it.
	for i, r := range fast {
		waitFor(t, "fast watcher got the blocked event", func() bool { return r.len() == blockedAt })
		if n := r.len(); n != blockedAt {
			t.Errorf("fast watcher %d has %d events while the dispatcher waits, want %d", i, n, blockedAt)
		}
	}
	clk.Step(99 * time.Millisecond)
	if m := e.cacher.Metrics(); m.WatchersTerminated != 0 {
		t.Fatalf("terminated after 99ms of a 100ms budget")
	}
	clk.Step(time.Millisecond)
	waitFor(t, "slow watcher terminated", func() bool { return e.cacher.Metrics().WatchersTerminated == 1 })

	// Its client sees a clean end of stream: what was already in its
	// result buffer, then the channel closes; no ERROR.
	for ev := range slow.ResultChan() {
		if ev.Type == watch.Error {
			t.Errorf("the terminated watcher got an ERROR event: %s", describe(ev))
		}
	}
	for _, r := range fast {
		waitFor(t, "fast watchers got everything", func() bool { return r.len() == writes })
	}
	if m := e.cacher.Metrics(); m.Watchers != 3 || m.BlockedDispatches != 1 {
		t.Errorf("metrics %+v: want 3 watchers left, one blocked dispatch", m)
	}
}
