package informer

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/listwatch-labs/listwatch-labs/labkit"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clocktesting "k8s.io/utils/clock/testing"
)

// startInformer runs inf until the test ends.
func startInformer(t *testing.T, inf *SharedIndexInformer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); inf.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}

// TestInformerDeliversInOrder: the initial list as OnAdd (initial list),
// then each change as it happened; the cache (through a Lister) holds the
// server's state, with managedFields stripped by the transform.
func TestInformerDeliversInOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newFakeServer(nil)
		srv.create("a", "1")
		srv.create("b", "1")
		inf := NewSharedIndexInformer(srv, Options{Transform: StripManagedFields, Indexers: Indexers{NamespaceIndex: NamespaceIndexFunc}})
		rec := newRecorder()
		reg, _ := inf.AddEventHandler(rec)
		startInformer(t, inf)
		synctest.Wait()
		if !inf.HasSynced() || !reg.HasSynced() {
			t.Fatal("not synced after the initial list")
		}
		srv.create("c", "1")
		srv.update("a", "2")
		srv.remove("b")
		synctest.Wait()
		want := []string{
			"OnAdd a rv1 v=1 (initial list)",
			"OnAdd b rv2 v=1 (initial list)",
			"OnAdd c rv3 v=1",
			"OnUpdate a rv1 v=1 -> a rv4 v=2",
			"OnDelete b rv5 v=1",
		}
		if got := rec.lines(); !slices.Equal(got, want) {
			t.Errorf("the handler calls are not the expected ones; %s", labkit.Diff(strings.Join(want, "\n"), strings.Join(got, "\n")))
		}
		lister := NewLister[*corev1.ConfigMap](inf.GetIndexer(), schema.GroupResource{Resource: "configmaps"})
		var names []string
		for _, cm := range lister.List(fakeNamespace, labels.Everything()) {
			names = append(names, describeObj(cm))
		}
		if got := strings.Join(names, "; "); got != "a rv4 v=2; c rv3 v=1" {
			t.Errorf("Lister.List: %s", got)
		}
		if _, err := lister.Get(fakeNamespace, "b"); !apierrors.IsNotFound(err) {
			t.Errorf("Get of a deleted object: %v, want NotFound", err)
		}
		if rv := inf.GetIndexer().LastStoreSyncResourceVersion(); rv != "5" {
			t.Errorf("cache resourceVersion %q, want 5", rv)
		}
		srv.bookmark()
		synctest.Wait()
		if rv := inf.GetIndexer().LastStoreSyncResourceVersion(); rv != "5" || inf.LastSyncResourceVersion() != "5" {
			t.Errorf("after a bookmark: %q/%q", rv, inf.LastSyncResourceVersion())
		}
	})
}

// TestSlowHandlerDoesNotBlockOthers: one handler is stuck; the other gets
// every notification, and the cache keeps up with the server; when the stuck
// one is released it gets everything, in order, from its own buffer.
func TestSlowHandlerDoesNotBlockOthers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newFakeServer(nil)
		inf := NewSharedIndexInformer(srv, Options{Transform: StripManagedFields})
		slow, fast := newRecorder(), newRecorder()
		slow.block = make(chan struct{})
		inf.AddEventHandler(slow)
		inf.AddEventHandler(fast)
		startInformer(t, inf)
		synctest.Wait()
		for i := range 200 {
			srv.create(fmt.Sprintf("cm-%03d", i), "1")
		}
		synctest.Wait()
		if n := fast.count(); n != 200 {
			t.Fatalf("fast handler got %d calls while the slow one was stuck, want 200", n)
		}
		if n := len(inf.GetIndexer().ListKeys()); n != 200 {
			t.Fatalf("cache holds %d objects while a handler was stuck, want 200", n)
		}
		if n := slow.count(); n != 0 {
			t.Fatalf("slow handler got %d calls while stuck", n)
		}
		close(slow.block)
		synctest.Wait()
		if !slices.Equal(slow.lines(), fast.lines()) {
			t.Errorf("released slow handler saw a different sequence")
		}
	})
}

// TestLateHandlerGetsExistingObjects: a handler added after the informer
// synced first gets an OnAdd (initial list) per cached object, and its
// HasSynced turns true only after it has handled them.
func TestLateHandlerGetsExistingObjects(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newFakeServer(nil)
		srv.create("a", "1")
		srv.create("b", "1")
		inf := NewSharedIndexInformer(srv, Options{Transform: StripManagedFields})
		startInformer(t, inf)
		synctest.Wait()
		late := newRecorder()
		late.block = make(chan struct{})
		reg, err := inf.AddEventHandler(late)
		if err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if reg.HasSynced() {
			t.Error("late handler synced before handling the existing objects")
		}
		close(late.block)
		synctest.Wait()
		if !reg.HasSynced() {
			t.Error("late handler not synced after handling them")
		}
		srv.create("c", "1")
		synctest.Wait()
		want := []string{"OnAdd a rv1 v=1 (initial list)", "OnAdd b rv2 v=1 (initial list)", "OnAdd c rv3 v=1"}
		if got := late.lines(); !slices.Equal(got, want) {
			t.Errorf("late handler:\n%s", strings.Join(got, "\n"))
		}
	})
}

// TestResyncIsNotARelist: with an injected fake clock, every 30s the
// handler that asked for resyncs gets OnUpdate(obj, obj) for each cached
// object (same resourceVersion), the other handler gets nothing, and no
// request at all goes to the server.
func TestResyncIsNotARelist(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newFakeServer(nil)
		srv.create("a", "1")
		srv.create("b", "1")
		clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
		inf := NewSharedIndexInformer(srv, Options{ResyncPeriod: 30 * time.Second, Clock: clk, Transform: StripManagedFields})
		resyncing, quiet := newRecorder(), newRecorder()
		inf.AddEventHandler(resyncing)
		inf.AddEventHandlerWithResyncPeriod(quiet, 0)
		startInformer(t, inf)
		synctest.Wait()
		lists, watches := srv.requests()
		for range 3 {
			clk.Step(30 * time.Second)
			synctest.Wait()
		}
		want := []string{"OnAdd a rv1 v=1 (initial list)", "OnAdd b rv2 v=1 (initial list)"}
		for range 3 {
			want = append(want, "OnUpdate a rv1 v=1 -> a rv1 v=1", "OnUpdate b rv2 v=1 -> b rv2 v=1")
		}
		if got := resyncing.lines(); !slices.Equal(got, want) {
			t.Errorf("resyncing handler:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		if got := quiet.lines(); len(got) != 2 {
			t.Errorf("handler without resync got %q", got)
		}
		lists2, watches2 := srv.requests()
		if len(lists2) != len(lists) || len(watches2) != len(watches) {
			t.Errorf("resyncs sent requests: LIST %d->%d, WATCH %d->%d", len(lists), len(lists2), len(watches), len(watches2))
		}
	})
}

// TestRelistDeletesWithFinalStateUnknown: objects deleted while the watch
// was down (after a 410) reach OnDelete as DeletedFinalStateUnknown holding
// the last state known; objects that did not change are re-offered as
// OnUpdate with the same resourceVersion (a new handler is "syncing" until
// the first resync check, as upstream's `addListener` marks it in
// `p.listeners`: k8s.io/client-go@v0.37.0/tools/cache/shared_informer.go:1198);
// changed ones as a real update.
func TestRelistDeletesWithFinalStateUnknown(t *testing.T) {
	labkit.ChecksExercise(t, "relist-final-state-unknown")
	synctest.Test(t, func(t *testing.T) {
		srv := newFakeServer(nil)
		srv.create("a", "1")
		srv.create("b", "1")
		srv.create("c", "1")
		inf := NewSharedIndexInformer(srv, Options{Transform: StripManagedFields})
		rec := newRecorder()
		inf.AddEventHandler(rec)
		startInformer(t, inf)
		synctest.Wait()
		srv.expire()
		srv.remove("b")
		srv.update("c", "2")
		elapse(2 * time.Minute) // fake time (synctest): the backoff elapses at once
		synctest.Wait()
		want := []string{
			"OnAdd a rv1 v=1 (initial list)", "OnAdd b rv2 v=1 (initial list)", "OnAdd c rv3 v=1 (initial list)",
			"OnDelete b rv2 v=1 (final state unknown)",
			"OnUpdate a rv1 v=1 -> a rv1 v=1",
			"OnUpdate c rv3 v=1 -> c rv5 v=2",
		}
		if got := rec.lines(); !slices.Equal(got, want) {
			t.Errorf("the handler calls are not the expected ones; %s", labkit.Diff(strings.Join(want, "\n"), strings.Join(got, "\n")))
		}
	})
}
