package informer

// What the README says client-go does, shown on client-go's own package
// (k8s.io/client-go@v0.37.0/tools/cache), next to the tests of ours. Each
// README sentence names its test.

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// recordingLW is a fake ListerWatcher for client-go's Reflector: it records
// every Watch request's options and answers each from a script.
type recordingLW struct {
	mu      sync.Mutex
	watches []metav1.ListOptions
	answer  func(n int, opts metav1.ListOptions) (watch.Interface, error)
	third   chan struct{} // closed at the third Watch request
}

func (lw *recordingLW) ListWithContext(context.Context, metav1.ListOptions) (runtime.Object, error) {
	return nil, errors.New("recordingLW: the Reflector should stream its list, not LIST")
}

func (lw *recordingLW) WatchWithContext(_ context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	lw.mu.Lock()
	n := len(lw.watches)
	lw.watches = append(lw.watches, opts)
	if len(lw.watches) == 3 {
		close(lw.third)
	}
	lw.mu.Unlock()
	return lw.answer(n, opts)
}

// List and Watch complete cache.ListerWatcher, which NewReflectorWithOptions
// takes; the Reflector calls the context-taking methods above.
func (lw *recordingLW) List(opts metav1.ListOptions) (runtime.Object, error) {
	return lw.ListWithContext(context.Background(), opts)
}

func (lw *recordingLW) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return lw.WatchWithContext(context.Background(), opts)
}

func (lw *recordingLW) requests() []metav1.ListOptions {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	return append([]metav1.ListOptions(nil), lw.watches...)
}

func initialEventsEnd(rv string) watch.Event {
	return watch.Event{Type: watch.Bookmark, Object: &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		ResourceVersion: rv, Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"}}}}
}

// TestClientGoReflectorStreamsThenRelistsOn410 runs client-go's Reflector
// (defaults of v0.37.0, WatchListClient on): its first request is a
// streaming list (sendInitialEvents=true, allowWatchBookmarks=true,
// resourceVersionMatch=NotOlderThan, resourceVersion "", timeoutSeconds in
// [300, 600)); after a 410 in the watch it streams again from its
// resourceVersion, and, refused as too old, from "". The same steps as ours
// in TestReflectorRelistOn410 and TestReflectorStreamingList.
func TestClientGoReflectorStreamsThenRelistsOn410(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lw := &recordingLW{third: make(chan struct{}), answer: func(n int, opts metav1.ListOptions) (watch.Interface, error) {
			switch n {
			case 0: // the initial streaming list: empty, then a 410 in the watch
				w := watch.NewFakeWithChanSize(2, false)
				w.Action(initialEventsEnd("5").Type, initialEventsEnd("5").Object)
				w.Error(&apierrors.NewResourceExpired("too old resource version: 5 (7)").ErrStatus)
				return w, nil
			case 1: // again from its resourceVersion: too old
				return nil, apierrors.NewResourceExpired("too old resource version: 5 (7)")
			default: // from "": the newest state, then quiet
				w := watch.NewFakeWithChanSize(1, false)
				w.Action(initialEventsEnd("7").Type, initialEventsEnd("7").Object)
				return w, nil
			}
		}}
		store := cache.NewStore(cache.MetaNamespaceKeyFunc)
		r := cache.NewReflectorWithOptions(lw, &corev1.ConfigMap{}, store, cache.ReflectorOptions{})
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { defer close(done); r.RunWithContext(ctx) }()
		// While this goroutine waits, the bubble's fake clock runs the
		// Reflector's backoff at once.
		<-lw.third
		cancel()
		<-done

		reqs := lw.requests()
		first := reqs[0]
		if first.ResourceVersion != "" || first.SendInitialEvents == nil || !*first.SendInitialEvents ||
			!first.AllowWatchBookmarks || first.ResourceVersionMatch != metav1.ResourceVersionMatchNotOlderThan {
			t.Errorf("first request %+v, want a streaming list from \"\"", first)
		}
		if s := first.TimeoutSeconds; s == nil || *s < 300 || *s >= 600 {
			t.Errorf("timeoutSeconds %v, want in [300, 600)", s)
		}
		var rvs []string
		for _, r := range reqs[:3] {
			rvs = append(rvs, r.ResourceVersion)
			if r.SendInitialEvents == nil || !*r.SendInitialEvents {
				t.Errorf("request %+v is not a streaming list", r)
			}
		}
		if want := []string{"", "5", ""}; !equalStrings(rvs, want) {
			t.Errorf("resourceVersions %q, want %q", rvs, want)
		}
	})
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestClientGoIndexerPanicsOnIndexError: client-go's indexer panics when an
// index function fails (`updateSingleIndex`:
// k8s.io/client-go@v0.37.0/tools/cache/thread_safe_store.go:174-197); ours
// returns the error and changes nothing (TestIndexerErrorLeavesStoreUnchanged).
func TestClientGoIndexerPanicsOnIndexError(t *testing.T) {
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{
		"fails": func(any) ([]string, error) { return nil, errors.New("no index value") },
	})
	defer func() {
		if recover() == nil {
			t.Error("client-go's indexer did not panic on a failing index function")
		}
	}()
	idx.Add(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a"}})
}

// TestClientGoReflectorWaitsForInitialEventsEnd: in a streaming list,
// client-go's Reflector keeps the objects aside until the
// k8s.io/initial-events-end bookmark; without it nothing reaches the store
// and the Reflector has no resourceVersion, so an informer never syncs.
// With it, the objects arrive at once, at the bookmark's resourceVersion.
// (Ours: TestReflectorStreamingList.)
func TestClientGoReflectorWaitsForInitialEventsEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := watch.NewFakeWithChanSize(2, false)
		lw := &recordingLW{third: make(chan struct{}), answer: func(n int, _ metav1.ListOptions) (watch.Interface, error) {
			if n > 0 {
				return nil, errors.New("recordingLW: one watch only")
			}
			return w, nil
		}}
		store := cache.NewStore(cache.MetaNamespaceKeyFunc)
		r := cache.NewReflectorWithOptions(lw, &corev1.ConfigMap{}, store, cache.ReflectorOptions{})
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { defer close(done); r.RunWithContext(ctx) }()

		w.Add(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", ResourceVersion: "3"}})
		synctest.Wait()
		if n := len(store.List()); n != 0 || r.LastSyncResourceVersion() != "" {
			t.Errorf("before the bookmark: %d objects in the store, resourceVersion %q; want none, \"\"", n, r.LastSyncResourceVersion())
		}
		ev := initialEventsEnd("4")
		w.Action(ev.Type, ev.Object)
		synctest.Wait()
		if n := len(store.List()); n != 1 || r.LastSyncResourceVersion() != "4" {
			t.Errorf("after the bookmark: %d objects in the store, resourceVersion %q; want 1, \"4\"", n, r.LastSyncResourceVersion())
		}
		cancel()
		<-done
	})
}
