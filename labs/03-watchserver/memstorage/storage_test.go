package memstorage

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/listwatch-labs/listwatch-labs/labkit"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/storage"
)

const prefix = "/registry/configmaps"

func newStorage(history int) *Storage {
	return New(Config{ResourcePrefix: prefix, NewFunc: func() runtime.Object { return &corev1.ConfigMap{} }, HistorySize: history})
}

func cm(name string, lbls map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Labels: lbls}}
}

func key(obj *corev1.ConfigMap) string { return prefix + "/" + obj.Namespace + "/" + obj.Name }

func create(t *testing.T, s *Storage, obj *corev1.ConfigMap) *corev1.ConfigMap {
	t.Helper()
	out := &corev1.ConfigMap{}
	if err := s.Create(context.Background(), key(obj), obj, out, 0); err != nil {
		t.Fatal(err)
	}
	return out
}

// update replaces the object unconditionally, as a PUT without
// resourceVersion does.
func update(t *testing.T, s *Storage, obj *corev1.ConfigMap) {
	t.Helper()
	err := s.GuaranteedUpdate(context.Background(), key(obj), &corev1.ConfigMap{}, false, nil,
		func(runtime.Object, storage.ResponseMeta) (runtime.Object, *uint64, error) {
			return obj.DeepCopy(), nil, nil
		}, nil)
	if err != nil {
		t.Fatal(err)
	}
}

func del(t *testing.T, s *Storage, obj *corev1.ConfigMap) {
	t.Helper()
	if err := s.Delete(context.Background(), key(obj), &corev1.ConfigMap{}, nil, storage.ValidateAllObjectFunc, nil, storage.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
}

// watchOpts is a recursive watch of every configmap, filtered by sel.
func watchOpts(rv string, sel labels.Selector) storage.ListOptions {
	if sel == nil {
		sel = labels.Everything()
	}
	return storage.ListOptions{ResourceVersion: rv, Recursive: true, Predicate: storage.SelectionPredicate{
		Label: sel, Field: fields.Everything(), GetAttrs: storage.DefaultNamespaceScopedAttr}}
}

func startWatch(t *testing.T, ctx context.Context, s *Storage, key string, opts storage.ListOptions) watch.Interface {
	t.Helper()
	w, err := s.Watch(ctx, key, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	return w
}

// render shows an event as "TYPE name rv" (objects), "BOOKMARK rv
// annotations" or "ERROR code reason message".
func render(ev watch.Event) string {
	obj := ev.Object
	if co, ok := obj.(runtime.CacheableObject); ok {
		obj = co.GetObject()
	}
	if status, ok := obj.(*metav1.Status); ok {
		return fmt.Sprintf("%s %d %s %s", ev.Type, status.Code, status.Reason, status.Message)
	}
	m, _ := meta.Accessor(obj)
	if ev.Type == watch.Bookmark {
		return fmt.Sprintf("%s %s %v", ev.Type, m.GetResourceVersion(), m.GetAnnotations())
	}
	return fmt.Sprintf("%s %s %s", ev.Type, m.GetName(), m.GetResourceVersion())
}

// collect reads n events from w, failing if the watch ends first.
func collect(t *testing.T, w watch.Interface, n int) []string {
	t.Helper()
	var out []string
	for len(out) < n {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatalf("watch ended after %v, want %d events", out, n)
			}
			out = append(out, render(ev))
		case <-time.After(10 * time.Second):
			t.Fatalf("got %v, want %d events", out, n)
		}
	}
	return out
}

func TestWatchFromResourceVersionReplaysHistory(t *testing.T) {
	s := newStorage(10)
	create(t, s, cm("a", nil)) // 1
	create(t, s, cm("b", nil)) // 2
	del(t, s, cm("a", nil))    // 3
	w := startWatch(t, context.Background(), s, prefix, watchOpts("1", nil))
	create(t, s, cm("c", nil)) // 4, live
	got := strings.Join(collect(t, w, 3), "\n")
	want := "ADDED b 2\nDELETED a 3\nADDED c 4"
	if got != want {
		t.Fatalf("got\n%s\nwant the events after RV 1, replayed then live:\n%s", got, want)
	}
}

func TestTooOldResourceVersionIsExpired(t *testing.T) {
	labkit.ChecksExercise(t, "too-old-rv")
	s := newStorage(2)
	for _, n := range []string{"a", "b", "c", "d"} { // RVs 1..4; history keeps 3, 4
		create(t, s, cm(n, nil))
	}
	w := startWatch(t, context.Background(), s, prefix, watchOpts("1", nil))
	if got, want := collect(t, w, 1)[0], "ERROR 410 Expired too old resource version: 1 (2)"; got != want {
		t.Fatalf("the watch from RV 1 begins with the wrong event; %s", labkit.Diff(want, got))
	}
	if _, ok := <-w.ResultChan(); ok {
		t.Fatal("an expired watch must end after its ERROR event")
	}
	// RV 2 is exactly the oldest we can replay from: accepted.
	w2 := startWatch(t, context.Background(), s, prefix, watchOpts("2", nil))
	if got := strings.Join(collect(t, w2, 2), ","); got != "ADDED c 3,ADDED d 4" {
		t.Fatalf("from RV 2: %s", got)
	}
}

func TestInitialEventsThenBookmark(t *testing.T) {
	s := newStorage(10)
	create(t, s, cm("b", nil))
	create(t, s, cm("a", nil))
	opts := watchOpts("", nil)
	opts.SendInitialEvents = ptr(true)
	opts.Predicate.AllowWatchBookmarks = true
	w := startWatch(t, context.Background(), s, prefix, opts)
	got := collect(t, w, 3)
	want := []string{"ADDED a 2", "ADDED b 1", "BOOKMARK 2 map[k8s.io/initial-events-end:true]"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got %v\nwant %v: the state in key order, then the initial-events-end bookmark at its RV", got, want)
	}
}

// TestLegacyRVZeroSendsState: RV "0" without sendInitialEvents is the old
// meaning (storage.Interface's doc): the current state as ADDED, no bookmark.
func TestLegacyRVZeroSendsState(t *testing.T) {
	s := newStorage(10)
	create(t, s, cm("a", nil))
	opts := watchOpts("0", nil)
	opts.Predicate.AllowWatchBookmarks = true
	w := startWatch(t, context.Background(), s, prefix, opts)
	create(t, s, cm("b", nil))
	if got := strings.Join(collect(t, w, 2), ","); got != "ADDED a 1,ADDED b 2" {
		t.Fatalf("got %s", got)
	}
}

func TestSelectorChangesBecomeAddedAndDeleted(t *testing.T) {
	s := newStorage(10)
	opts := watchOpts("0", labels.SelectorFromSet(labels.Set{"app": "x"}))
	opts.SendInitialEvents = ptr(false)
	w := startWatch(t, context.Background(), s, prefix, opts)
	create(t, s, cm("a", nil))                                     // 1: not ours
	update(t, s, cm("a", map[string]string{"app": "x"}))           // 2: now matches -> ADDED
	update(t, s, cm("a", map[string]string{"app": "x", "v": "2"})) // 3: MODIFIED
	update(t, s, cm("a", nil))                                     // 4: no longer matches -> DELETED
	del(t, s, cm("a", nil))                                        // 5: not ours any more
	create(t, s, cm("b", map[string]string{"app": "x"}))           // 6
	got := strings.Join(collect(t, w, 4), "\n")
	want := "ADDED a 2\nMODIFIED a 3\nDELETED a 4\nADDED b 6"
	if got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
}

func TestSingleKeyWatch(t *testing.T) {
	s := newStorage(10)
	opts := watchOpts("0", nil)
	opts.Recursive = false
	opts.SendInitialEvents = ptr(false)
	w := startWatch(t, context.Background(), s, key(cm("a", nil)), opts)
	create(t, s, cm("ab", nil)) // shares the prefix, not the key
	create(t, s, cm("a", nil))
	if got := collect(t, w, 1)[0]; got != "ADDED a 2" {
		t.Fatalf("got %s, want only the watched key", got)
	}
}

func TestSlowWatcherIsTerminatedNotWaitedFor(t *testing.T) {
	labkit.ChecksExercise(t, "slow-watcher-cutoff")
	s := newStorage(10)
	opts := watchOpts("0", nil)
	opts.SendInitialEvents = ptr(false)
	slow := startWatch(t, context.Background(), s, prefix, opts)
	// Nobody reads slow: after its two buffers fill, the storage drops it
	// instead of blocking this loop.
	for i := range 2*s.chanSize + 10 {
		create(t, s, cm(fmt.Sprintf("cm-%d", i), nil))
	}
	// Its stream must end: read what it got, with a deadline, so a watcher
	// that is never cut off fails here instead of hanging the test.
	n := 0
	deadline := time.After(5 * time.Second)
	for ended := false; !ended; {
		select {
		case _, ok := <-slow.ResultChan():
			if !ok {
				ended = true
				continue
			}
			n++
		case <-deadline:
			t.Fatalf("slow watcher still open after %d events: a watcher whose buffer is full must be terminated, not skipped", n)
		}
	}
	if n == 0 || n >= 2*s.chanSize+10 {
		t.Fatalf("slow watcher got %d events; want it cut off after its buffers filled", n)
	}
}

// TestWatchChannelSize: upstream's sizes for a resource without indexes.
func TestWatchChannelSize(t *testing.T) {
	for history, want := range map[int]int{1: 10, 100: 10, 1000: 14, 7500: 100, 102400: 100} {
		if got := suggestedWatchChannelSize(history); got != want {
			t.Errorf("history %d: channel size %d, want %d", history, got, want)
		}
	}
}

func TestReplayIsFiltered(t *testing.T) {
	s := newStorage(10)
	create(t, s, cm("a", nil)) // RV 1, namespace ns
	other := cm("b", nil)
	other.Namespace = "other"
	create(t, s, other)        // RV 2, another namespace
	create(t, s, cm("c", nil)) // RV 3
	w := startWatch(t, context.Background(), s, prefix+"/ns", watchOpts("1", nil))
	if got := collect(t, w, 1)[0]; got != "ADDED c 3" {
		t.Fatalf("got %s, want ADDED c 3: b is in another namespace", got)
	}
}

// TestGuaranteedUpdate: preconditions are checked, and a tryUpdate that
// lost a race to another writer runs again on the new object.
func TestGuaranteedUpdate(t *testing.T) {
	s := newStorage(10)
	create(t, s, cm("a", nil))
	stale := "7"
	err := s.GuaranteedUpdate(context.Background(), key(cm("a", nil)), &corev1.ConfigMap{}, false,
		&storage.Preconditions{ResourceVersion: &stale},
		func(in runtime.Object, _ storage.ResponseMeta) (runtime.Object, *uint64, error) { return in, nil, nil }, nil)
	if !storage.IsInvalidObj(err) || !strings.Contains(err.Error(), "Precondition failed: ResourceVersion in precondition: 7") {
		t.Fatalf("err = %v, want a failed precondition", err)
	}

	var calls atomic.Int32
	out := &corev1.ConfigMap{}
	err = s.GuaranteedUpdate(context.Background(), key(cm("a", nil)), out, false, nil,
		func(in runtime.Object, _ storage.ResponseMeta) (runtime.Object, *uint64, error) {
			if calls.Add(1) == 1 {
				update(t, s, cm("a", map[string]string{"other": "writer"})) // someone else writes first
			}
			obj := in.(*corev1.ConfigMap)
			obj.Data = map[string]string{"mine": "yes"}
			return obj, nil, nil
		}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if calls.Load() != 2 || out.Labels["other"] != "writer" || out.Data["mine"] != "yes" || out.ResourceVersion != "3" {
		t.Fatalf("tryUpdate ran %d times, result %+v: want it re-run on the other writer's object", calls.Load(), out.ObjectMeta)
	}
	// Writing the same content again is not a write: no new RV.
	update(t, s, out)
	if rv := s.revision.current(); rv != 3 {
		t.Fatalf("a no-op update moved the revision to %d", rv)
	}
}

func TestDeletePreconditionsAndNotFound(t *testing.T) {
	s := newStorage(10)
	created := create(t, s, cm("a", nil))
	wrongUID := "not-the-uid"
	err := s.Delete(context.Background(), key(created), &corev1.ConfigMap{}, storage.NewUIDPreconditions(wrongUID), nil, nil, storage.DeleteOptions{})
	if !storage.IsInvalidObj(err) {
		t.Fatalf("err = %v, want a failed precondition", err)
	}
	out := &corev1.ConfigMap{}
	if err := s.Delete(context.Background(), key(created), out, nil, nil, nil, storage.DeleteOptions{}); err != nil || out.ResourceVersion != "2" {
		t.Fatalf("delete: %v, out RV %q: want the last state at the deletion's RV", err, out.ResourceVersion)
	}
	if err := s.Delete(context.Background(), key(created), out, nil, nil, nil, storage.DeleteOptions{}); !storage.IsNotFound(err) {
		t.Fatalf("second delete: %v, want not found", err)
	}
}

// TestGetListResourceVersions: "", "0", NotOlderThan, Exact (rebuilt from
// the history), too old and too large.
func TestGetListResourceVersions(t *testing.T) {
	s := newStorage(2)
	create(t, s, cm("a", nil))                         // 1
	create(t, s, cm("b", nil))                         // 2
	update(t, s, cm("a", map[string]string{"v": "2"})) // 3
	del(t, s, cm("b", nil))                            // 4
	list := func(rv string, match metav1.ResourceVersionMatch) (string, error) {
		opts := watchOpts(rv, nil)
		opts.ResourceVersionMatch = match
		var l corev1.ConfigMapList
		if err := s.GetList(context.Background(), prefix, opts, &l); err != nil {
			return "", err
		}
		out := "rv=" + l.ResourceVersion
		for _, item := range l.Items {
			out += fmt.Sprintf(" %s@%s", item.Name, item.ResourceVersion)
		}
		return out, nil
	}
	for _, tc := range []struct {
		rv    string
		match metav1.ResourceVersionMatch
		want  string
	}{
		{"", "", "rv=4 a@3"},
		{"0", "", "rv=4 a@3"},
		{"2", metav1.ResourceVersionMatchNotOlderThan, "rv=4 a@3"},
		{"2", metav1.ResourceVersionMatchExact, "rv=2 a@1 b@2"},
		{"3", metav1.ResourceVersionMatchExact, "rv=3 a@3 b@2"},
		{"1", metav1.ResourceVersionMatchExact, "410 The resourceVersion for the provided list is too old."},
		{"9", "", "504 Timeout: Too large resource version: 9, current: 4"},
		{"abc", "", `400 invalid resource version: resourceVersion: Invalid value: "abc": strconv.ParseUint: parsing "abc": invalid syntax`},
	} {
		got, err := list(tc.rv, tc.match)
		if err != nil {
			status := apierrors.APIStatus(nil)
			if se, ok := err.(apierrors.APIStatus); ok {
				status = se
			}
			if status == nil {
				t.Errorf("rv=%s %s: %v is not a Status", tc.rv, tc.match, err)
				continue
			}
			got = fmt.Sprintf("%d %s", status.Status().Code, status.Status().Message)
		}
		if got != tc.want {
			t.Errorf("rv=%s %s: got %q, want %q", tc.rv, tc.match, got, tc.want)
		}
	}
}

// TestSharedRevision: two resources of one server never share an RV, and a
// watch of one is not disturbed by the other's writes.
func TestSharedRevision(t *testing.T) {
	rev := &Revision{}
	configmaps := New(Config{ResourcePrefix: prefix, NewFunc: func() runtime.Object { return &corev1.ConfigMap{} }, Revision: rev})
	pods := New(Config{ResourcePrefix: "/registry/pods", NewFunc: func() runtime.Object { return &corev1.Pod{} }, Revision: rev})
	w := startWatch(t, context.Background(), configmaps, prefix, watchOpts("0", nil))
	create(t, configmaps, cm("a", nil)) // 1
	if err := pods.Create(context.Background(), "/registry/pods/ns/p", &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}}, nil, 0); err != nil {
		t.Fatal(err)
	} // 2
	create(t, configmaps, cm("b", nil)) // 3
	if got := strings.Join(collect(t, w, 2), ","); got != "ADDED a 1,ADDED b 3" {
		t.Fatalf("got %s", got)
	}
	if rv, _ := pods.GetCurrentResourceVersion(context.Background()); rv != 3 {
		t.Fatalf("current RV %d, want 3 (shared)", rv)
	}
}

// TestExpiredContext: a watch whose context is already done (the handler's
// answer to timeoutSeconds=-1) gets an ERROR event only for RV "" (where
// upstream reads the current revision with that context); from RV "0" or N
// it ends with no event at all.
func TestExpiredContext(t *testing.T) {
	s := newStorage(10)
	create(t, s, cm("a", nil))
	ctx, cancel := context.WithTimeout(context.Background(), -time.Second)
	defer cancel()
	opts := watchOpts("", nil)
	opts.SendInitialEvents = ptr(true)
	w := startWatch(t, ctx, s, prefix, opts)
	if got := collect(t, w, 1)[0]; got != "ERROR 500 InternalError context deadline exceeded" {
		t.Fatalf("RV \"\": got %s", got)
	}
	for _, rv := range []string{"0", "1"} {
		opts := watchOpts(rv, nil)
		opts.SendInitialEvents = ptr(true)
		w := startWatch(t, ctx, s, prefix, opts)
		for ev := range w.ResultChan() {
			t.Fatalf("RV %q: got %s, want no event", rv, render(ev))
		}
	}
}

// TestEncodeOnce: every watcher of one change gets the same object, and the
// object encodes itself once however many watchers write it.
func TestEncodeOnce(t *testing.T) {
	s := newStorage(10)
	var watchers []watch.Interface
	for range 3 {
		opts := watchOpts("0", nil)
		opts.SendInitialEvents = ptr(false)
		watchers = append(watchers, startWatch(t, context.Background(), s, prefix, opts))
	}
	create(t, s, cm("a", nil))
	encodes := 0
	encode := func(obj runtime.Object, w io.Writer) error {
		encodes++
		return json.NewEncoder(w).Encode(obj)
	}
	var frames []string
	for _, w := range watchers {
		ev := <-w.ResultChan()
		co, ok := ev.Object.(runtime.CacheableObject)
		if !ok {
			t.Fatalf("event object %T is not a runtime.CacheableObject", ev.Object)
		}
		var buf bytes.Buffer
		if err := co.CacheEncode("json", encode, &buf); err != nil {
			t.Fatal(err)
		}
		frames = append(frames, buf.String())
	}
	if encodes != 1 || frames[0] != frames[1] || frames[1] != frames[2] || !strings.Contains(frames[0], `"name":"a"`) {
		t.Fatalf("%d encodes for 3 watchers, frames %q: want one encoding shared by all", encodes, frames)
	}
}

// TestInitialEventsShareEncodings: two watches that start with the current
// state get the same object for it, so a herd of informers starting at once
// encodes each object once, not once per informer.
func TestInitialEventsShareEncodings(t *testing.T) {
	s := newStorage(10)
	create(t, s, cm("a", nil))
	var objects []runtime.Object
	for range 2 {
		opts := watchOpts("", nil)
		opts.SendInitialEvents = ptr(true)
		ev := <-startWatch(t, context.Background(), s, prefix, opts).ResultChan()
		objects = append(objects, ev.Object)
	}
	if objects[0] != objects[1] {
		t.Fatalf("initial events carry %p and %p, want the same caching object", objects[0], objects[1])
	}
}

// The bookmark tests run in a synctest bubble: time is fake and advances
// only when every goroutine of the bubble is blocked, so "2 s before a
// deadline 10 s away" takes no wall-clock time and cannot flake.

// TestPreTimeoutBookmark: 2s before its deadline a watcher that allows
// bookmarks gets one, if the storage moved past what the watcher has seen.
func TestPreTimeoutBookmark(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newStorage(10)
		create(t, s, cm("x", nil)) // RV 1
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		opts := watchOpts("1", labels.SelectorFromSet(labels.Set{"app": "mine"}))
		opts.Predicate.AllowWatchBookmarks = true
		w := startWatch(t, ctx, s, prefix, opts)
		create(t, s, cm("y", nil)) // RV 2: after the watch's start, but not its to see
		start := time.Now()
		ev := <-w.ResultChan()
		if got := render(ev); got != "BOOKMARK 2 map[]" || time.Since(start) != 8*time.Second {
			t.Fatalf("got %s after %v, want a BOOKMARK at RV 2 after 8s (2s before the deadline)", got, time.Since(start))
		}
	})
}

// TestNoPreTimeoutBookmarkUnderTwoSeconds: with a deadline less than 2 s
// away the pre-timeout time has passed, and upstream schedules no bookmark.
func TestNoPreTimeoutBookmarkUnderTwoSeconds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newStorage(10)
		create(t, s, cm("x", nil))
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		opts := watchOpts("1", labels.SelectorFromSet(labels.Set{"app": "mine"}))
		opts.Predicate.AllowWatchBookmarks = true
		w := startWatch(t, ctx, s, prefix, opts)
		create(t, s, cm("y", nil))
		for ev := range w.ResultChan() { // ends with the context, at 1s
			t.Fatalf("got %s, want no bookmark for a watch shorter than 2s", render(ev))
		}
	})
}

// TestPeriodicBookmarks: without a deadline, a bookmark every
// BookmarkFrequency, once the storage has moved past the watch's start RV
// (cache_watcher.go, cacheWatcher.process: event.ResourceVersion > resourceVersion).
func TestPeriodicBookmarks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newStorage(10)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		opts := watchOpts("0", labels.SelectorFromSet(labels.Set{"app": "mine"}))
		opts.SendInitialEvents = ptr(false)
		opts.Predicate.AllowWatchBookmarks = true
		w := startWatch(t, ctx, s, prefix, opts)
		start := time.Now()
		create(t, s, cm("x", nil)) // RV 1, not ours
		if got := render(<-w.ResultChan()); got != "BOOKMARK 1 map[]" || time.Since(start) != time.Minute {
			t.Fatalf("got %s after %v, want BOOKMARK 1 after 1m", got, time.Since(start))
		}
		// Nothing changes in the second minute: the same bookmark again.
		if got := render(<-w.ResultChan()); got != "BOOKMARK 1 map[]" || time.Since(start) != 2*time.Minute {
			t.Fatalf("got %s after %v, want BOOKMARK 1 again after 2m", got, time.Since(start))
		}
		create(t, s, cm("y", nil)) // RV 2
		if got := render(<-w.ResultChan()); got != "BOOKMARK 2 map[]" || time.Since(start) != 3*time.Minute {
			t.Fatalf("got %s after %v, want BOOKMARK 2 after 3m", got, time.Since(start))
		}
	})
}

func ptr[T any](v T) *T { return &v }

// TestMain fails the package if any watcher goroutine outlives its test:
// Stop, a done context and Close must each end process.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestCloseEndsWatchers: Close ends every watch and refuses writes, as a
// server shutting down needs.
func TestCloseEndsWatchers(t *testing.T) {
	s := newStorage(10)
	w := startWatch(t, context.Background(), s, prefix, watchOpts("0", nil))
	s.Close()
	for ev := range w.ResultChan() {
		t.Fatalf("got %s after Close, want the watch to end", render(ev))
	}
	if err := s.Create(context.Background(), key(cm("a", nil)), cm("a", nil), nil, 0); !storage.IsInternalError(err) {
		t.Fatalf("Create after Close: %v, want an internal error", err)
	}
}

// TestGet: not found (or a zero object with IgnoreNotFound), and a
// resourceVersion in the future is refused as upstream refuses it.
func TestGet(t *testing.T) {
	s := newStorage(10)
	create(t, s, cm("a", map[string]string{"x": "y"}))
	out := &corev1.ConfigMap{}
	if err := s.Get(context.Background(), key(cm("a", nil)), storage.GetOptions{ResourceVersion: "1"}, out); err != nil || out.Labels["x"] != "y" {
		t.Fatalf("Get: %v %+v", err, out.ObjectMeta)
	}
	if err := s.Get(context.Background(), key(cm("b", nil)), storage.GetOptions{}, out); !storage.IsNotFound(err) {
		t.Fatalf("Get missing: %v, want not found", err)
	}
	if err := s.Get(context.Background(), key(cm("b", nil)), storage.GetOptions{IgnoreNotFound: true}, out); err != nil || out.Name != "" {
		t.Fatalf("Get missing, IgnoreNotFound: %v %+v, want a zero object", err, out.ObjectMeta)
	}
	if err := s.Get(context.Background(), key(cm("a", nil)), storage.GetOptions{ResourceVersion: "5"}, out); !storage.IsTooLargeResourceVersion(err) {
		t.Fatalf("Get at a future RV: %v, want Too large resource version", err)
	}
}
