package cacher

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/utils/clock"
	testingclock "k8s.io/utils/clock/testing"
)

// A LIST at the cache's newest state takes the newest snapshot under the
// read lock, then copies its items with no lock: while it copies, a writer
// can take the write lock and change the cache, and the LIST still returns
// the state it took. With 1.36's shape (copy under the read lock) the
// writer's TryLock fails and this test fails.
func TestListCopiesFromASnapshotWhileAWriterHoldsTheLock(t *testing.T) {
	e := newPodEnv(t, clock.RealClock{})
	for _, name := range []string{"a", "b", "c"} {
		e.create(t, "ns", name, "", nil)
	}
	etcdRV, _ := e.store.GetCurrentResourceVersion(context.Background())
	w := e.cacher.watchCache
	waitFor(t, "the cache has the three pods", func() bool {
		w.RLock()
		defer w.RUnlock()
		return w.resourceVersion >= etcdRV
	})

	snapshotTaken, goOn := make(chan struct{}), make(chan struct{})
	e.cacher.afterSnapshot = func() {
		close(snapshotTaken)
		<-goOn
	}
	type result struct {
		list *v1.PodList
		err  error
	}
	done := make(chan result, 1)
	go func() {
		list := &v1.PodList{}
		err := e.cacher.GetList(context.Background(), e.prefix, storage.ListOptions{
			ResourceVersion: "0", Recursive: true, Predicate: storage.Everything}, list)
		done <- result{list, err}
	}()
	select {
	case <-snapshotTaken:
	case <-time.After(20 * time.Second):
		t.Fatal("the LIST never took its snapshot")
	}
	// The LIST has its snapshot and has not copied yet. A writer gets in:
	// one real write through etcd and the reflector (processEvent takes the
	// write lock), then the write lock held for the whole copy.
	if !w.TryLock() {
		close(goOn)
		t.Fatal("the LIST holds the watchCache's lock after taking its snapshot")
	}
	w.Unlock()
	e.create(t, "ns", "d", "", nil)
	newRV, _ := e.store.GetCurrentResourceVersion(context.Background())
	waitFor(t, "the reflector applied the write", func() bool {
		w.RLock()
		defer w.RUnlock()
		return w.resourceVersion >= newRV
	})
	if !w.TryLock() {
		close(goOn)
		t.Fatal("the write lock is not free")
	}
	close(goOn)
	var r result
	select {
	case r = <-done:
	case <-time.After(20 * time.Second):
		w.Unlock()
		t.Fatal("the LIST did not finish while a writer held the lock: it needs the lock to copy")
	}
	w.Unlock()
	if r.err != nil {
		t.Fatal(r.err)
	}
	var names []string
	for _, p := range r.list.Items {
		names = append(names, p.Name)
	}
	if strings.Join(names, ",") != "a,b,c" || r.list.ResourceVersion != strconv.FormatUint(etcdRV, 10) {
		t.Errorf("LIST: %v at RV %s; want a,b,c at %d, the state when it took its snapshot", names, r.list.ResourceVersion, etcdRV)
	}
}

// A watch with initial events gets a lazy interval: taken in O(1) under the
// lock, walked at its first Next with no lock, and showing the state it was
// taken at, whatever the cache does meanwhile.
func TestWatchInitialEventsComeFromALazySnapshot(t *testing.T) {
	w := newTestWatchCache(testingclock.NewFakeClock(time.Now()))
	put := func(name string, rv int) {
		p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, ResourceVersion: fmt.Sprint(rv)}}
		if err := w.processEvent(watch.Event{Type: watch.Added, Object: p}); err != nil {
			t.Fatal(err)
		}
	}
	put("a", 2)
	put("b", 3)
	sendInitialEvents := true
	w.RLock()
	interval, err := w.getAllEventsSinceLocked(0, "/pods/", true, &sendInitialEvents)
	w.RUnlock()
	if err != nil {
		t.Fatal(err)
	}
	lazy, ok := interval.source.(*lazySnapshotCacheIntervalSource)
	if !ok || lazy.loaded {
		t.Fatalf("interval source %T (loaded %v), want a lazy snapshot not yet walked", interval.source, ok && lazy.loaded)
	}
	put("c", 4) // after the interval was taken: not in it
	w.Lock()    // a writer holds the cache while the watcher walks
	events := make(chan []*watchCacheEvent, 1)
	go func() {
		evs, _ := drain(interval)
		events <- evs
	}()
	var got []*watchCacheEvent
	select {
	case got = <-events:
	case <-time.After(20 * time.Second):
		w.Unlock()
		t.Fatal("the interval's first Next waited for the lock")
	}
	w.Unlock()
	var keys []string
	for _, ev := range got {
		keys = append(keys, fmt.Sprintf("%s %s@%d", ev.Type, ev.Key, ev.ResourceVersion))
	}
	if want := "ADDED /pods/ns/a@3,ADDED /pods/ns/b@3"; strings.Join(keys, ",") != want {
		t.Errorf("initial events %v, want %s (the state at RV 3, each at the interval's RV)", keys, want)
	}
}

// A read the cache is already fresh for returns at once from
// waitUntilFreshLocked: no timer, no wait, even with a context that is
// already done. A read it is not fresh for waits, as upstream's does,
// whatever its context, until the cache catches up or blockTimeout has
// passed on the cache's clock; then it is "too large resource version".
func TestFreshReadDoesNotWait(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	w := newTestWatchCache(clk)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	w.RLock()
	for _, rv := range []uint64{0, 1} {
		if err := w.waitUntilFreshLocked(ctx, rv, nil); err != nil {
			t.Errorf("rv %d at cache RV 1: %v, want nil at once", rv, err)
		}
	}
	w.RUnlock()
	errc := make(chan error, 1)
	go func() {
		w.RLock()
		defer w.RUnlock()
		errc <- w.waitUntilFreshLocked(ctx, 2, nil)
	}()
	waitFor(t, "the read of rv 2 waiting on the clock", clk.HasWaiters)
	select {
	case err := <-errc:
		t.Fatalf("rv 2 at cache RV 1 with a done context returned before blockTimeout: %v", err)
	default:
	}
	clk.Step(blockTimeout)
	if err := <-errc; !storage.IsTooLargeResourceVersion(err) {
		t.Errorf("rv 2 at cache RV 1 after blockTimeout: %v, want too large resource version", err)
	}
}

// Upstream 1.37: a fresh read starts no wake-up goroutine
// (`waitUntilFreshLocked` returns before it,
// k8s.io/apiserver@v0.37.0/pkg/storage/cacher/watch_cache.go:318-321); a
// read that must wait starts one, which lives blockTimeout (3 s).
func TestUpstreamFreshReadStartsNoWakeUpGoroutine(t *testing.T) {
	e := newPodEnv(t, clock.RealClock{})
	e.create(t, "ns", "a", "", nil)
	c, closeUp := newUpstreamCacher(t, e.prefix, true) // bench_test.go: ready when it returns
	defer closeUp()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const wakeUp = "cacher.(*watchCache).waitUntilFreshLocked.func"
	// Wake-up goroutines of earlier tests' upstream Cachers live 3 s.
	waitFor(t, "no wake-up goroutine left from earlier tests", func() bool { return goroutinesIn(wakeUp) == 0 })
	rv, _ := e.store.GetCurrentResourceVersion(ctx)
	list := func(rv uint64) error {
		return c.GetList(ctx, e.prefix, storage.ListOptions{ResourceVersion: fmt.Sprint(rv), Recursive: true,
			Predicate: storage.SelectionPredicate{Label: labels.Everything(), Field: fields.Everything()}}, &v1.PodList{})
	}
	if err := list(rv); err != nil {
		t.Fatal(err)
	}
	if n := goroutinesIn(wakeUp); n != 0 {
		t.Errorf("after a fresh read: %d wake-up goroutines, want 0", n)
	}
	// A read one revision ahead waits, with a wake-up goroutine, until the
	// next write reaches the cache.
	errc := make(chan error, 1)
	go func() { errc <- list(rv + 1) }()
	waitFor(t, "a waiting read's wake-up goroutine", func() bool { return goroutinesIn(wakeUp) == 1 })
	e.create(t, "ns", "b", "", nil)
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}

// goroutinesIn counts the goroutines whose stack mentions fn.
func goroutinesIn(fn string) int {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	n := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, fn) {
			n++
		}
	}
	return n
}

// recordTimeObject is what a storage asked for RecordTimestamps sends: the
// object wrapped with when the storage saw the event.
type recordTimeObject struct {
	kruntime.Object
	at time.Time
}

func (r recordTimeObject) RecordTime() time.Time   { return r.at }
func (r recordTimeObject) Unwrap() kruntime.Object { return r.Object }

var _ storage.WatchEventWithRecordTime = recordTimeObject{}

// RecordTime is the storage's time when the storage gives one, and the
// cache's receive time otherwise; CacheReceived is always the cache's.
func TestRecordTimeFromStorage(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	w := newTestWatchCache(clk)
	storageSaw := clk.Now().Add(-40 * time.Millisecond)
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", ResourceVersion: "2"}}
	if err := w.processEvent(watch.Event{Type: watch.Added, Object: recordTimeObject{p, storageSaw}}); err != nil {
		t.Fatal(err)
	}
	clk.Step(time.Second)
	q := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "b", ResourceVersion: "3"}}
	if err := w.processEvent(watch.Event{Type: watch.Added, Object: q}); err != nil {
		t.Fatal(err)
	}
	evs, err := eventsSince(w, 1)
	if err != nil || len(evs) != 2 {
		t.Fatalf("%d events, %v", len(evs), err)
	}
	if _, wrapped := evs[0].Object.(storage.WatchEventWithRecordTime); wrapped {
		t.Error("the cache kept the storage's wrapper")
	}
	if !evs[0].RecordTime.Equal(storageSaw) || !evs[0].CacheReceived.Equal(storageSaw.Add(40*time.Millisecond)) {
		t.Errorf("stamped: RecordTime %v, CacheReceived %v; want the storage's time and the cache's", evs[0].RecordTime, evs[0].CacheReceived)
	}
	if !evs[1].RecordTime.Equal(evs[1].CacheReceived) || !evs[1].CacheReceived.Equal(clk.Now()) {
		t.Errorf("not stamped: RecordTime %v, CacheReceived %v; want both the cache's time", evs[1].RecordTime, evs[1].CacheReceived)
	}
}

// Upstream's etcd3 store, asked for RecordTimestamps, wraps each event's
// object in a storage.WatchEventWithRecordTime (`timedWatchEvent`,
// k8s.io/apiserver@v0.37.0/pkg/storage/etcd3/watcher.go:728-762).
func TestUpstreamEtcd3StampsEventsWhenAsked(t *testing.T) {
	e := newPodEnv(t, clock.RealClock{})
	upStore, closeUpStore := newUpstreamStore(t, e.prefix)
	defer closeUpStore()
	rv, _ := e.store.GetCurrentResourceVersion(context.Background())
	for _, stamp := range []bool{true, false} {
		w, err := upStore.Watch(context.Background(), e.prefix, storage.ListOptions{ResourceVersion: fmt.Sprint(rv),
			Recursive: true, Predicate: storage.Everything, RecordTimestamps: stamp})
		if err != nil {
			t.Fatal(err)
		}
		if stamp {
			e.create(t, "ns", "a", "", nil)
		}
		ev := next(t, w)
		w.Stop()
		wrapped, ok := ev.Object.(storage.WatchEventWithRecordTime)
		if ok != stamp {
			t.Fatalf("RecordTimestamps %v: object %T", stamp, ev.Object)
		}
		if ok && (wrapped.RecordTime().IsZero() || wrapped.Unwrap().(*v1.Pod).Name != "a") {
			t.Errorf("stamped event: time %v, object %v", wrapped.RecordTime(), wrapped.Unwrap())
		}
	}
}

// Every delivered live event is timed, in three stages; initial events are
// not.
func TestDispatchDurationsObserved(t *testing.T) {
	e := newPodEnv(t, clock.RealClock{})
	e.create(t, "ns", "a", "", nil)
	etcdRV, _ := e.store.GetCurrentResourceVersion(context.Background())
	waitFor(t, "the cache has a", func() bool { return e.cacher.Metrics().ResourceVersion >= etcdRV })
	w, err := e.cacher.Watch(context.Background(), e.prefix, storage.ListOptions{ResourceVersion: "0", Recursive: true, Predicate: storage.Everything})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	next(t, w) // the initial ADDED of a
	e.create(t, "ns", "b", "", nil)
	next(t, w)
	waitFor(t, "the event timed", func() bool {
		return e.cacher.Metrics().DispatchDurations[stageTotal].Count == 1
	})
	m := e.cacher.Metrics()
	for i, h := range m.DispatchDurations {
		if h.Count != 1 || h.Buckets[len(h.Buckets)-1] != 1 {
			t.Errorf("stage %s: %d observations (%v), want 1", DispatchStages[i], h.Count, h.Buckets)
		}
	}
}

// eventsSince is what a watch of every pod from rv receives before live
// events: the interval's events, drained.
func eventsSince(w *watchCache, rv uint64) ([]*watchCacheEvent, error) {
	w.RLock()
	interval, err := w.getAllEventsSinceLocked(rv, "/pods/", true, nil)
	w.RUnlock()
	if err != nil {
		return nil, err
	}
	return drain(interval)
}

func drain(interval *watchCacheInterval) ([]*watchCacheEvent, error) {
	var events []*watchCacheEvent
	for {
		ev, err := interval.Next()
		if err != nil || ev == nil {
			return events, err
		}
		events = append(events, ev)
	}
}
