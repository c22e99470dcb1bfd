package cacher

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/utils/clock"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/listwatch-labs/listwatch-labs/labkit"
	"github.com/listwatch-labs/listwatch-labs/labs/04-cacher/internal/labtest"
)

func everything() storage.SelectionPredicate { return labtest.Predicate(nil, nil) }

func TestWatchFromRVSelectorsAndDeletedOnMismatch(t *testing.T) {
	labkit.ChecksExercise(t, "cache-watcher-convert")
	checkLeaks(t)
	e := newPodEnv(t, clock.RealClock{})
	ctx := context.Background()
	start := e.create(t, "ns", "a", "", map[string]string{"app": "web"})

	sel := labtest.Predicate(labels.SelectorFromSet(labels.Set{"app": "web"}), nil)
	w, err := e.cacher.Watch(ctx, e.prefix, storage.ListOptions{ResourceVersion: start.ResourceVersion, Recursive: true, Predicate: sel})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	all, err := e.cacher.Watch(ctx, e.prefix, storage.ListOptions{ResourceVersion: "0", Recursive: true, Predicate: everything()})
	if err != nil {
		t.Fatal(err)
	}
	defer all.Stop()

	e.create(t, "ns", "b", "", map[string]string{"app": "db"})
	m := e.update(t, "ns", "a", func(p *v1.Pod) { p.Labels["v"] = "2" })
	relabeled := e.update(t, "ns", "a", func(p *v1.Pod) { p.Labels["app"] = "db" })
	d := e.delete(t, "ns", "b")
	// z, written last and matching both watches, is a sync marker: a watch
	// delivers in RV order, so once z is in, an expected event not seen
	// before it never will be, and the test says which without waiting.
	z := e.create(t, "ns", "z", "", map[string]string{"app": "web"})
	marker := "ADDED z " + z.ResourceVersion

	// The selector watcher: only a, and the relabel arrives as DELETED with
	// a's last matching state at the relabel's RV.
	want := []string{"MODIFIED a " + m.ResourceVersion, "DELETED a " + relabeled.ResourceVersion, marker}
	var got []string
	evs, ended := eventsUntil(w, marker, len(want)+3)
	for _, ev := range evs {
		got = append(got, describe(ev))
		if ev.Type == watch.Deleted && podOf(ev).Labels["app"] != "web" {
			t.Errorf("DELETED carries labels %v, want the last matching state", podOf(ev).Labels)
		}
	}
	if d := eventsDiff(want, got, ended); d != "" {
		// a: created app=web, labelled v=2, relabelled app=db; b: app=db,
		// created and deleted; z: app=web, created last.
		t.Errorf("the app=web watch's events; %s", d)
	}
	// RV "0": the current state as ADDED, then everything.
	wantAll := []string{"ADDED a " + start.ResourceVersion, "ADDED b", "MODIFIED a " + m.ResourceVersion,
		"MODIFIED a " + relabeled.ResourceVersion, "DELETED b " + d.ResourceVersion, marker}
	got = nil
	evs, ended = eventsUntil(all, marker, len(wantAll)+3)
	for _, e := range evs {
		ev := describe(e)
		if strings.HasPrefix(ev, "ADDED b ") {
			ev = "ADDED b" // b's RV is not known here
		}
		got = append(got, ev)
	}
	if d := eventsDiff(wantAll, got, ended); d != "" {
		t.Errorf("the watch from RV 0 (no selector); %s", d)
	}
	if n := e.store.Opened.Load(); n != 1 {
		t.Errorf("%d storage watches opened, want 1", n)
	}
}

// eventsUntil reads w's events until the one describe calls last (a sync
// marker written after the events under test), or max events, or a 10 s
// wait for the next one (the watch delivers nothing more: only then does it
// wait). ended says why it stopped when it was not the marker.
func eventsUntil(w watch.Interface, last string, max int) (evs []watch.Event, ended string) {
	for len(evs) < max {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				return evs, "the watch closed"
			}
			evs = append(evs, ev)
			if describe(ev) == last {
				return evs, ""
			}
		case <-time.After(10 * time.Second):
			return evs, "no event came in 10s"
		}
	}
	return evs, fmt.Sprintf("%d events came and none was %s", max, last)
}

// eventsDiff is "" when got is want, and otherwise names the events missing
// from got and the ones it should not have, then the diff.
func eventsDiff(want, got []string, ended string) string {
	d := labkit.Diff(strings.Join(want, "\n"), strings.Join(got, "\n"))
	if d == "" {
		return ""
	}
	var missing, extra []string
	for _, w := range want {
		if !slices.Contains(got, w) {
			missing = append(missing, w)
		}
	}
	for _, g := range got {
		if !slices.Contains(want, g) {
			extra = append(extra, g)
		}
	}
	var b strings.Builder
	if len(missing) > 0 {
		fmt.Fprintf(&b, "missing: %s; ", strings.Join(missing, ", "))
	}
	if len(extra) > 0 {
		fmt.Fprintf(&b, "not expected: %s; ", strings.Join(extra, ", "))
	}
	if ended != "" {
		fmt.Fprintf(&b, "the events below are all that came (%s); ", ended)
	}
	return b.String() + d
}

func TestTriggerOffersAWatcherOnlyItsNodesEvents(t *testing.T) {
	labkit.ChecksExercise(t, "trigger-values", "cache-watcher-convert")
	checkLeaks(t)
	e := newPodEnv(t, clock.RealClock{})
	ctx := context.Background()
	node1 := labtest.Predicate(nil, fields.OneTermEqualSelector("spec.nodeName", "node-1"))
	w, err := e.cacher.Watch(ctx, e.prefix, storage.ListOptions{ResourceVersion: "0", Recursive: true, Predicate: node1})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	cw := w.(*cacheWatcher)
	if cap(cw.input) != 10 {
		t.Errorf("a trigger watcher's input holds %d, want 10", cap(cw.input))
	}
	e.cacher.mu.Lock()
	indexed := len(e.cacher.watchers.byValue["node-1"])
	e.cacher.mu.Unlock()
	if indexed != 1 {
		t.Fatalf("watcher not indexed under node-1")
	}
	// Pods on node-2 never reach its client (that a node's watcher is not
	// even offered other nodes' events, TestTriggeredWatchersOfOldAndNewValue
	// counts).
	for i := range 20 {
		e.create(t, "ns", fmt.Sprint("other-", i), "node-2", nil)
	}
	mine := e.create(t, "ns", "mine", "node-1", nil)
	if got := describe(next(t, w)); got != "ADDED mine "+mine.ResourceVersion {
		t.Errorf("got %s", got)
	}
	// Moving it to another node: the old node's watcher is offered the
	// change (by the previous value) and sees DELETED.
	moved := e.update(t, "ns", "mine", func(p *v1.Pod) { p.Spec.NodeName = "node-3" })
	if got := describe(next(t, w)); got != "DELETED mine "+moved.ResourceVersion {
		t.Errorf("got %s", got)
	}
	if got := e.cacher.Metrics().EventsDispatched; got != 22 {
		t.Errorf("dispatched %d events, want 22", got)
	}
}

func TestWatchFromACompactedRingIs410(t *testing.T) {
	checkLeaks(t)
	e := newPodEnv(t, clock.RealClock{})
	first := e.create(t, "ns", "a", "", nil)
	for i := range 3 {
		e.update(t, "ns", "a", func(p *v1.Pod) { p.Labels = map[string]string{"i": fmt.Sprint(i)} })
	}
	// Force the ring to have dropped the events (as a full ring would).
	waitFor(t, "cache caught up", func() bool { return e.cacher.Metrics().EventsDispatched == 4 })
	e.cacher.watchCache.Lock()
	e.cacher.watchCache.history.startIndex = e.cacher.watchCache.history.endIndex - 1
	e.cacher.watchCache.history.removedEventSinceRelist = true
	e.cacher.watchCache.Unlock()

	w, err := e.cacher.Watch(context.Background(), e.prefix, storage.ListOptions{ResourceVersion: first.ResourceVersion, Recursive: true, Predicate: everything()})
	if err != nil {
		t.Fatal(err)
	}
	ev := <-w.ResultChan()
	status, _ := ev.Object.(*metav1.Status)
	if ev.Type != watch.Error || status == nil || status.Code != 410 || status.Reason != metav1.StatusReasonExpired {
		t.Fatalf("got %s, want ERROR 410 Expired", describe(ev))
	}
	if _, open := <-w.ResultChan(); open {
		t.Error("more than one event after 410")
	}
}

func TestStreamingListThenInitialEventsEndBookmark(t *testing.T) {
	checkLeaks(t)
	e := newPodEnv(t, clock.RealClock{})
	a := e.create(t, "ns", "a", "", nil)
	b := e.create(t, "ns", "b", "", nil)
	yes := true
	pred := everything()
	pred.AllowWatchBookmarks = true
	w, err := e.cacher.Watch(context.Background(), e.prefix, storage.ListOptions{Recursive: true, Predicate: pred, SendInitialEvents: &yes})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if got := describe(next(t, w)); got != "ADDED a "+a.ResourceVersion {
		t.Errorf("got %s", got)
	}
	if got := describe(next(t, w)); got != "ADDED b "+b.ResourceVersion {
		t.Errorf("got %s", got)
	}
	ev := next(t, w)
	p := podOf(ev)
	if ev.Type != watch.Bookmark || p == nil || p.Annotations[metav1.InitialEventsAnnotationKey] != "true" || rvOf(p) < rvOf(b) {
		t.Fatalf("got %s %v, want BOOKMARK with %s", describe(ev), p, metav1.InitialEventsAnnotationKey)
	}
	c := e.create(t, "ns", "c", "", nil)
	if got := describe(next(t, w)); got != "ADDED c "+c.ResourceVersion {
		t.Errorf("got %s", got)
	}
}

func TestConsistentListFromCacheAfterProgressNotify(t *testing.T) {
	checkLeaks(t)
	e := newPodEnv(t, clock.RealClock{})
	ctx := context.Background()
	e.create(t, "ns", "a", "", nil)
	// Move etcd's revision with a write to another resource: no event
	// reaches this cache, only a progress notification can tell it that
	// it is current.
	other := newPodEnv(t, clock.RealClock{})
	other.create(t, "ns", "x", "", nil)
	etcdRV, _ := e.store.GetCurrentResourceVersion(ctx)

	list := &v1.PodList{}
	if err := e.cacher.GetList(ctx, e.prefix, storage.ListOptions{Recursive: true, Predicate: everything()}, list); err != nil {
		t.Fatal(err)
	}
	m := e.cacher.Metrics()
	if m.ConsistentReadsFromCache != 1 || m.ConsistentReadsFallback != 0 || m.ProgressRequests == 0 {
		t.Errorf("metrics %+v: want one consistent read from cache, after progress requests", m)
	}
	listRV, _ := strconv.ParseUint(list.ResourceVersion, 10, 64)
	if len(list.Items) != 1 || listRV < etcdRV {
		t.Errorf("list: %d items at RV %s, want 1 at >= %d", len(list.Items), list.ResourceVersion, etcdRV)
	}
}

// noProgressStorage never delivers progress: RequestWatchProgress does
// nothing. A fake for one layer, named as such.
type noProgressStorage struct{ storage.Interface }

func (noProgressStorage) RequestWatchProgress(context.Context) error { return nil }

func TestConsistentListFallsBackToEtcdAfterTheBound(t *testing.T) {
	checkLeaks(t)
	clk := testingclock.NewFakeClock(time.Now())
	e := newPodEnv(t, clock.RealClock{})
	// A second cacher over the same etcd store, but deaf to progress
	// requests and on fake time.
	c, err := NewCacherFromConfig(PodConfig(noProgressStorage{e.etcdPods}, e.prefix, clk))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	waitFor(t, "ready", c.Ready)
	other := newPodEnv(t, clock.RealClock{})
	other.create(t, "ns", "x", "", nil)

	done := make(chan error, 1)
	list := &v1.PodList{}
	go func() {
		done <- c.GetList(context.Background(), e.prefix, storage.ListOptions{Recursive: true, Predicate: everything()}, list)
	}()
	// The list waits for the cache; 3 s of (fake) time later it gives up
	// and asks etcd.
	waitFor(t, "list waiting", func() bool { return c.Metrics().ProgressRequests > 0 })
	for i := 0; ; i++ {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			m := c.Metrics()
			if m.ConsistentReadsFallback != 1 || m.ConsistentReadsFromCache != 0 {
				t.Errorf("metrics %+v, want one fallback", m)
			}
			return
		default:
		}
		if i > 100 {
			t.Fatal("the list never fell back")
		}
		// The waiting list sleeps on its 3 s timer of the fake clock, the
		// Cacher's progress requester on its 100 ms one (the clock's third
		// waiter is the dispatcher's bookmark ticker). Once they do, move
		// time: the requester asks etcd for progress again (and gets none
		// from this storage), and after 3 s the list gives up.
		waitFor(t, "the list and the requester on their timers", func() bool { return clk.Waiters() == 3 || len(done) > 0 })
		if len(done) == 0 {
			clk.Step(100 * time.Millisecond)
		}
	}
}

func TestBookmarksPeriodicAndBeforeDeadline(t *testing.T) {
	checkLeaks(t)
	start := time.Now()
	clk := testingclock.NewFakeClock(start)
	e := newPodEnv(t, clk)
	p := e.create(t, "ns", "a", "", nil)
	waitFor(t, "event dispatched", func() bool { return e.cacher.Metrics().EventsDispatched == 1 })

	pred := everything()
	pred.AllowWatchBookmarks = true
	ctx, cancel := context.WithDeadline(context.Background(), start.Add(90*time.Second))
	defer cancel()
	w, err := e.cacher.Watch(ctx, e.prefix, storage.ListOptions{ResourceVersion: "0", Recursive: true, Predicate: pred})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	// A watcher whose pre-deadline moment (deadline - 2 s) has passed gets
	// no bookmark at all.
	late, lateCancel := context.WithDeadline(context.Background(), start.Add(time.Second))
	defer lateCancel()
	wl, err := e.cacher.Watch(late, e.prefix, storage.ListOptions{ResourceVersion: p.ResourceVersion, Recursive: true, Predicate: pred})
	if err != nil {
		t.Fatal(err)
	}
	defer wl.Stop()
	// A control watcher without a deadline: its periodic bookmarks show
	// when the dispatcher has handled a tick.
	control, err := e.cacher.Watch(context.Background(), e.prefix, storage.ListOptions{ResourceVersion: p.ResourceVersion, Recursive: true, Predicate: pred})
	if err != nil {
		t.Fatal(err)
	}
	defer control.Stop()
	next(t, w) // ADDED a
	// A bookmark carries news only if its RV is newer than the watch's
	// start (cache_watcher.go, process): make one.
	p = e.create(t, "ns", "b", "", nil)
	next(t, w)       // ADDED b
	next(t, wl)      // ADDED b
	next(t, control) // ADDED b

	bookmarkAt := func(step time.Duration) {
		t.Helper()
		clk.Step(step)
		ev := next(t, w)
		if ev.Type != watch.Bookmark || podOf(ev).ResourceVersion != p.ResourceVersion {
			t.Fatalf("after %v: %s, want BOOKMARK at %s", clk.Since(start), describe(ev), p.ResourceVersion)
		}
	}
	bookmarkAt(61 * time.Second) // the periodic one, a minute after the watch started
	if ev := next(t, control); ev.Type != watch.Bookmark {
		t.Fatalf("control: %s", describe(ev))
	}
	bookmarkAt(27 * time.Second) // at 88 s: 2 s before the 90 s deadline
	// The dispatcher counts a bookmark after handing it over, so a client
	// can hold it before it is counted: wait for the count. So far: w and
	// control at 61 s, w at 88 s.
	const sent = 3
	waitFor(t, "the 88 s bookmark counted", func() bool { return e.cacher.Metrics().BookmarksSent >= sent })
	if got := e.cacher.Metrics().BookmarksSent; got != sent {
		t.Fatalf("%d bookmarks by 88 s, want %d", got, sent)
	}
	// At 148 s the control watcher is due again; the deadline watcher is
	// not, ever again, and the late one never was.
	clk.Step(time.Minute)
	if ev := next(t, control); ev.Type != watch.Bookmark {
		t.Fatalf("control: %s", describe(ev))
	}
	waitFor(t, "the 148 s bookmark counted", func() bool { return e.cacher.Metrics().BookmarksSent >= sent+1 })
	if got := e.cacher.Metrics().BookmarksSent; got != sent+1 {
		t.Errorf("%d bookmarks at 148 s, want only the control watcher's", got-sent)
	}
	for name, watcher := range map[string]watch.Interface{"deadline": w, "late": wl} {
		select {
		case ev := <-watcher.ResultChan():
			t.Errorf("the %s watcher got %s", name, describe(ev))
		default:
		}
	}
}

func TestProgressNotifyAdvancesRVButReachesNoClient(t *testing.T) {
	checkLeaks(t)
	e := newPodEnv(t, clock.RealClock{})
	ctx := context.Background()
	p := e.create(t, "ns", "a", "", nil)
	pred := everything()
	pred.AllowWatchBookmarks = true
	w, err := e.cacher.Watch(ctx, e.prefix, storage.ListOptions{ResourceVersion: p.ResourceVersion, Recursive: true, Predicate: pred})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	other := newPodEnv(t, clock.RealClock{})
	x := other.create(t, "ns", "x", "", nil)
	waitFor(t, "cache RV moved by progress notify", func() bool {
		_ = e.cacher.RequestWatchProgress(ctx)
		return e.cacher.Metrics().ResourceVersion >= rvOf(x)
	})
	select {
	case ev := <-w.ResultChan():
		t.Errorf("a progress notification reached the client: %s", describe(ev))
	default:
	}
}

func TestBadInput(t *testing.T) {
	checkLeaks(t)
	e := newPodEnv(t, clock.RealClock{})
	_, err := e.cacher.Watch(context.Background(), e.prefix, storage.ListOptions{ResourceVersion: "abc", Recursive: true, Predicate: everything()})
	// Upstream's Cacher.Watch returns the error of `ParseResourceVersion`
	// as is (k8s.io/apiserver@v0.37.0/pkg/storage/cacher/cacher.go:525-528),
	// not a StatusError: kube-apiserver answers 500 with no reason.
	if err == nil || apierrors.ReasonForError(err) != metav1.StatusReasonUnknown || !strings.Contains(err.Error(), `Invalid value: "abc"`) {
		t.Errorf("RV abc: %v, want the versioner's error as is", err)
	}
	if _, err := e.cacher.Watch(context.Background(), "/secrets", storage.ListOptions{Recursive: true, Predicate: everything()}); err == nil {
		t.Error("a key outside the resource was accepted")
	}
	if _, err := NewCacherFromConfig(Config{}); err == nil {
		t.Error("an empty Config was accepted")
	}
	cfg := PodConfig(e.store, e.prefix, nil)
	cfg.EventsHistoryWindow = time.Minute
	if _, err := NewCacherFromConfig(cfg); err == nil {
		t.Error("a history window below 75s was accepted")
	}
}

func TestListRouting(t *testing.T) {
	checkLeaks(t)
	e := newPodEnv(t, clock.RealClock{})
	ctx := context.Background()
	for i := range 3 {
		e.create(t, "ns", fmt.Sprint("p", i), "", nil)
	}
	waitFor(t, "cache caught up", func() bool { return e.cacher.Metrics().EventsDispatched == 3 })
	limited := everything()
	limited.Limit = 2
	// RV "0" with a limit: from memory, whole, as upstream's
	// `computeListLimit` (k8s.io/apiserver@v0.37.0/pkg/storage/cacher/cacher.go:740-745).
	list := &v1.PodList{}
	if err := e.cacher.GetList(ctx, e.prefix, storage.ListOptions{ResourceVersion: "0", Recursive: true, Predicate: limited}, list); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 3 || list.Continue != "" || e.cacher.Metrics().ListsFromCache != 1 {
		t.Errorf("RV 0 limit 2: %d items, continue %q, metrics %+v", len(list.Items), list.Continue, e.cacher.Metrics())
	}
	// RV "" with a limit: a page from etcd, with a continue token, which
	// continues from etcd too.
	list = &v1.PodList{}
	if err := e.cacher.GetList(ctx, e.prefix, storage.ListOptions{Recursive: true, Predicate: limited}, list); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 2 || list.Continue == "" {
		t.Fatalf("RV \"\" limit 2: %d items, continue %q", len(list.Items), list.Continue)
	}
	limited.Continue = list.Continue
	if err := e.cacher.GetList(ctx, e.prefix, storage.ListOptions{Recursive: true, Predicate: limited}, list); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 || list.Items[0].Name != "p2" || e.cacher.Metrics().ListsFromStorage != 2 {
		t.Errorf("continue: %d items, metrics %+v", len(list.Items), e.cacher.Metrics())
	}
	// An exact RV: from etcd.
	exact := everything()
	rv, _ := e.store.GetCurrentResourceVersion(ctx)
	if err := e.cacher.GetList(ctx, e.prefix, storage.ListOptions{ResourceVersion: fmt.Sprint(rv), ResourceVersionMatch: metav1.ResourceVersionMatchExact, Recursive: true, Predicate: exact}, list); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 3 || e.cacher.Metrics().ListsFromStorage != 3 {
		t.Errorf("exact RV %d: %d items, metrics %+v", rv, len(list.Items), e.cacher.Metrics())
	}
	// Get with RV "0" from memory (no Get reaches storage); RV "" from etcd.
	p := &v1.Pod{}
	if err := e.cacher.Get(ctx, e.key("ns", "p1"), storage.GetOptions{ResourceVersion: "0"}, p); err != nil || p.Name != "p1" {
		t.Errorf("get RV 0: %v %s", err, p.Name)
	}
	if err := e.cacher.Get(ctx, e.key("ns", "nope"), storage.GetOptions{ResourceVersion: "0"}, p); !storage.IsNotFound(err) {
		t.Errorf("get missing: %v", err)
	}
	if n := e.store.Gets.Load(); n != 0 {
		t.Errorf("%d Gets reached storage for RV \"0\", want 0", n)
	}
	if err := e.cacher.Get(ctx, e.key("ns", "p1"), storage.GetOptions{}, p); err != nil || p.Name != "p1" {
		t.Errorf("get RV \"\": %v %s", err, p.Name)
	}
	if n := e.store.Gets.Load(); n != 1 {
		t.Errorf("%d Gets reached storage after a Get with RV \"\", want 1", n)
	}
}
