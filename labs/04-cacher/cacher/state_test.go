package cacher

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apiserver/pkg/storage"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/listwatch-labs/listwatch-labs/labkit"
	"github.com/listwatch-labs/listwatch-labs/labs/04-cacher/internal/labtest"
)

// State shows what the live view draws: the ring's reach, the budget, each
// watcher's request and buffer, and why a watcher ended (a slow one: too
// slow; one its client stopped: stopped by its consumer).
func TestStateShowsRingWatchersAndWhyTheyEnded(t *testing.T) {
	labkit.ChecksExercise(t, "time-budget")
	checkLeaks(t)
	clk := testingclock.NewFakeClock(time.Now())
	e := newPodEnv(t, clk)
	ctx := context.Background()
	clk.Step(10 * time.Second)
	if got := e.cacher.State().BudgetLeft; got != maxBudget {
		t.Errorf("budget after 10 idle seconds: %v, want the cap %v", got, maxBudget)
	}
	startRV, _ := e.store.GetCurrentResourceVersion(ctx)
	rv := fmt.Sprint(startRV)

	web := labtest.Predicate(labels.SelectorFromSet(labels.Set{"app": "web"}), nil)
	web.AllowWatchBookmarks = true
	fast, err := e.cacher.Watch(ctx, e.prefix, storage.ListOptions{ResourceVersion: rv, Recursive: true, Predicate: web})
	if err != nil {
		t.Fatal(err)
	}
	got := &received{}
	var consumer sync.WaitGroup
	consumer.Add(1)
	go consume(fast, got, &consumer)
	slow, err := e.cacher.Watch(ctx, e.prefix, storage.ListOptions{ResourceVersion: rv, Recursive: true, Predicate: everything()})
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Stop()

	st := e.cacher.State()
	if len(st.Watchers) != 2 {
		t.Fatalf("%d watchers in State, want 2: %+v", len(st.Watchers), st.Watchers)
	}
	if w := st.Watchers[0]; w.LabelSelector != "app=web" || w.RequestedRV != rv || !w.AllowBookmarks || w.StartRV != startRV || w.InputCapacity != 10 {
		t.Errorf("first watcher %+v: want app=web, from RV %s, bookmarks, start RV %d, input capacity 10", w, rv, startRV)
	}

	const writes = 25
	var first, last uint64
	for i := range writes {
		lbls := map[string]string{"app": "db"}
		if i%2 == 0 {
			lbls["app"] = "web"
		}
		p := e.create(t, "ns", fmt.Sprint("p", i), "", lbls)
		if i == 0 {
			first = rvOf(p)
		}
		last = rvOf(p)
	}
	// The dispatcher waits on the slow watcher: its input is full and the
	// dispatcher has blocked. (On a loaded machine the fast watcher's own
	// goroutine can lag too and block a dispatch for a moment, on the fake
	// clock at no cost to the budget: so the count may be more than one,
	// and the clock moves only once the fast watcher's input has room, so
	// that the dispatcher is not waiting on it.)
	waitFor(t, "the dispatcher blocked on the slow watcher", func() bool {
		st := e.cacher.State()
		// DispatchWaiting: the timer of the event it waits on now exists
		// (an earlier blocked dispatch, on the fast watcher, may have
		// ended, and the next one not yet started its timer).
		if m := e.cacher.Metrics(); m.BlockedDispatches < 1 || !m.DispatchWaiting || len(st.Watchers) != 2 {
			return false
		}
		fastW, slowW := st.Watchers[0], st.Watchers[1]
		return slowW.InputUsed == slowW.InputCapacity && fastW.InputUsed < fastW.InputCapacity
	})
	clk.Step(maxBudget)
	waitFor(t, "the slow watcher ended", func() bool { return len(e.cacher.State().Ended) == 1 })
	waitFor(t, "the fast watcher has its 13 events", func() bool { return got.len() == 13 })

	st = e.cacher.State()
	if r := st.Ring; r.Len != writes || r.OldestRV != first || r.NewestRV != last || st.ResourceVersion != last || st.Objects != writes {
		t.Errorf("ring %+v, RV %d, %d objects: want %d events from RV %d to %d, and %d objects", r, st.ResourceVersion, st.Objects, writes, first, last, writes)
	}
	// The budget was all spent on the slow watcher, 100 ms (fake) ago; it
	// refills at 50 ms a second.
	if want := 5 * time.Millisecond; st.BudgetLeft != want {
		t.Errorf("budget left %v, 100 ms after it ran out: want %v", st.BudgetLeft, want)
	}
	ended := st.Ended[0]
	if ended.Ended != EndTooSlow || ended.InputUsed != ended.InputCapacity || ended.LabelSelector != "" {
		t.Errorf("ended watcher %+v: want the unselective one, too slow, its input full", ended)
	}
	// 13 of the 25 pods are app=web (the even ones), the last one among them.
	if len(st.Watchers) != 1 || st.Watchers[0].Sent != 13 || st.Watchers[0].LastRV != last {
		t.Errorf("running watchers %+v: want the app=web one with 13 events, the last at RV %d", st.Watchers, last)
	}

	fast.Stop()
	consumer.Wait()
	waitFor(t, "the fast watcher ended", func() bool { return len(e.cacher.State().Ended) == 2 })
	if got := e.cacher.State().Ended[1]; got.Ended != EndClientStopped || got.LabelSelector != "app=web" {
		t.Errorf("second ended watcher %+v: want app=web, stopped by its consumer", got)
	}
}
