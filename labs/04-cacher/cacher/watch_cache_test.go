package cacher

import (
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/storage"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/listwatch-labs/listwatch-labs/labkit"
	"github.com/listwatch-labs/listwatch-labs/labs/04-cacher/internal/labtest"
)

// A watchCache on a fake clock with a fake event handler (it drops events):
// a unit test of the ring alone, no etcd.
func newTestWatchCache(clk *testingclock.FakeClock) *watchCache {
	w := newWatchCache(podKey, labtest.ObjectAttrs, storage.APIObjectVersioner{}, clk, DefaultEventFreshDuration,
		func(*watchCacheEvent) {})
	if err := w.Replace(nil, 1); err != nil {
		panic(err)
	}
	return w
}

func podKey(obj runtime.Object) (string, error) {
	p := obj.(*v1.Pod)
	return "/pods/" + p.Namespace + "/" + p.Name, nil
}

func addPod(t *testing.T, w *watchCache, rv int) {
	t.Helper()
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprint("p", rv%7), ResourceVersion: fmt.Sprint(rv)}}
	if err := w.processEvent(watch.Event{Type: watch.Modified, Object: p}); err != nil {
		t.Fatal(err)
	}
}

func TestRingGrowsToKeepTheHistoryWindow(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	w := newTestWatchCache(clk)
	rv := 1
	// 100 events in one second fill the 100-event ring; the 101st finds
	// the oldest event only 1 s old, younger than 75 s: the ring doubles.
	for range 101 {
		rv++
		addPod(t, w, rv)
		clk.Step(10 * time.Millisecond)
	}
	if w.history.capacity != 200 || w.history.removedEventSinceRelist {
		t.Fatalf("capacity %d (removed %v), want 200 and nothing dropped", w.history.capacity, w.history.removedEventSinceRelist)
	}
	// It keeps doubling under a steady burst, up to 102,400 and no further.
	for w.history.capacity < defaultUpperBoundCapacity || !w.history.isCacheFullLocked() {
		rv++
		addPod(t, w, rv)
	}
	rv++
	addPod(t, w, rv)
	if w.history.capacity != 100*1024 {
		t.Fatalf("capacity %d, want the upper bound 102400", w.history.capacity)
	}
	// Full at the bound: the oldest event is dropped, not kept by age.
	if !w.history.removedEventSinceRelist {
		t.Error("a full ring at its upper bound did not drop its oldest event")
	}
}

func TestRingShrinksWhenANewestQuarterIsOlderThanTheWindow(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	w := newTestWatchCache(clk)
	rv := 1
	// Fill 200 slots quickly.
	for range 101 {
		rv++
		addPod(t, w, rv)
	}
	for !w.history.isCacheFullLocked() {
		rv++
		addPod(t, w, rv)
	}
	if w.history.capacity != 200 {
		t.Fatalf("capacity %d, want 200", w.history.capacity)
	}
	// Ten minutes of silence, then one event: even the newest quarter is
	// older than 75 s, so the ring halves.
	clk.Step(10 * time.Minute)
	rv++
	addPod(t, w, rv)
	if w.history.capacity != 100 {
		t.Fatalf("capacity %d after a quiet 10 min, want 100", w.history.capacity)
	}
	// Old events are not dropped by age: a ring that is not full keeps
	// everything, however old.
	clk2 := testingclock.NewFakeClock(time.Now())
	w2 := newTestWatchCache(clk2)
	addPod(t, w2, 2)
	clk2.Step(time.Hour)
	addPod(t, w2, 3)
	if events, err := eventsSince(w2, 1); err != nil || len(events) != 2 {
		t.Errorf("after an hour: %d events, %v; want both kept", len(events), err)
	}
}

func TestTooOldResourceVersionIs410(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	w := newTestWatchCache(clk)
	rv := 1
	// 102 events spread over 150 s: the ring never grows (its oldest event
	// is always older than 75 s when it is full), so it drops old ones.
	for range 102 {
		rv++
		addPod(t, w, rv)
		clk.Step(1500 * time.Millisecond)
	}
	if w.history.capacity != 100 {
		t.Fatalf("capacity %d, want 100", w.history.capacity)
	}
	oldest := w.history.cache[w.history.startIndex%w.history.capacity].ResourceVersion
	if _, err := eventsSince(w, oldest-1); err != nil {
		t.Errorf("watch from %d (just before the oldest event): %v", oldest-1, err)
	}
	_, err := eventsSince(w, oldest-2)
	if !apierrors.IsResourceExpired(err) || err.Error() != fmt.Sprintf("too old resource version: %d (%d)", oldest-2, oldest-1) {
		t.Errorf("watch from %d: %v, want 410 too old resource version", oldest-2, err)
	}
	events, _ := eventsSince(w, uint64(rv-3))
	if len(events) != 3 || events[0].ResourceVersion != uint64(rv-2) {
		t.Errorf("events since %d: %d, first %d", rv-3, len(events), events[0].ResourceVersion)
	}
}

func TestSuggestedWatchChannelSize(t *testing.T) {
	w := newTestWatchCache(testingclock.NewFakeClock(time.Now()))
	// capacity 100 / 75 s rounds up to 2: raised to the minimum, 10.
	if got := w.suggestedWatchChannelSize(false, false); got != 10 {
		t.Errorf("capacity 100: %d, want 10", got)
	}
	w.history.capacity = defaultUpperBoundCapacity // 102400 / 75 = 1366
	for _, tc := range []struct {
		index, trigger bool
		want           int
	}{{false, false, 100}, {true, false, 1000}, {true, true, 10}} {
		if got := w.suggestedWatchChannelSize(tc.index, tc.trigger); got != tc.want {
			t.Errorf("capacity 102400, index %v trigger %v: %d, want %d", tc.index, tc.trigger, got, tc.want)
		}
	}
}

func TestTimeBudget(t *testing.T) {
	labkit.ChecksExercise(t, "time-budget")
	clk := testingclock.NewFakeClock(time.Now())
	b := newTimeBudget(clk)
	if got := b.takeAvailable(); got != 0 {
		t.Errorf("take at start: got %v, want 0 (nothing has refilled yet)", got)
	}
	clk.Step(time.Second)
	if got := b.takeAvailable(); got != 50*time.Millisecond {
		t.Errorf("take 1 s later: got %v, want 50ms (the budget refills 50 ms per second)", got)
	}
	// Taking empties it; unused time comes back.
	b.returnUnused(30 * time.Millisecond)
	if got := b.takeAvailable(); got != 30*time.Millisecond {
		t.Errorf("take right after returning 30ms unused: got %v, want 30ms", got)
	}
	clk.Step(time.Minute)
	if got := b.takeAvailable(); got != 100*time.Millisecond {
		t.Errorf("take 1 min later: got %v, want 100ms (the cap)", got)
	}
	b.returnUnused(time.Second)
	if got := b.takeAvailable(); got != 100*time.Millisecond {
		t.Errorf("take after returning 1s unused: got %v, want 100ms (the cap)", got)
	}
}

// A longer history window raises the ring's cap as upstream's
// `capacityUpperBound` does (k8s.io/apiserver@v0.37.0/pkg/storage/cacher/watch_cache_history.go:57-77):
// window/75 s rounded up to a power of two.
func TestLongerWindowRaisesTheCap(t *testing.T) {
	for _, c := range []struct {
		window time.Duration
		want   int
	}{
		{DefaultEventFreshDuration, 102400},
		{DefaultEventFreshDuration + time.Second, 204800},
		{2 * DefaultEventFreshDuration, 204800},
		{75 * time.Minute, 102400 * 64}, // 60 times the window: 2^6
	} {
		if got := capacityUpperBound(c.window); got != c.want {
			t.Errorf("capacityUpperBound(%v) = %d, want %d", c.window, got, c.want)
		}
	}
	// And the ring grows past 102,400 under a longer window.
	clk := testingclock.NewFakeClock(time.Now())
	w := newWatchCache(podKey, labtest.ObjectAttrs, storage.APIObjectVersioner{}, clk, 2*DefaultEventFreshDuration,
		func(*watchCacheEvent) {})
	if err := w.Replace(nil, 1); err != nil {
		t.Fatal(err)
	}
	for rv := 2; w.history.capacity <= defaultUpperBoundCapacity; rv++ {
		if rv > 3*defaultUpperBoundCapacity {
			t.Fatalf("capacity %d after %d events in no time: it never grew past %d", w.history.capacity, rv, defaultUpperBoundCapacity)
		}
		addPod(t, w, rv)
	}
	if w.history.capacity != 2*defaultUpperBoundCapacity {
		t.Errorf("capacity %d, want %d", w.history.capacity, 2*defaultUpperBoundCapacity)
	}
}
