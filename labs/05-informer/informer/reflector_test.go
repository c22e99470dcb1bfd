package informer

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	clocktesting "k8s.io/utils/clock/testing"
)

// TestBackoffSequence: 800ms doubling to a 30s cap, jitter up to +100%,
// reset 2 minutes after the last reset (upstream's `defaultBackoffInit` and
// its siblings: k8s.io/client-go@v0.37.0/tools/cache/reflector.go:57-67).
func TestBackoffSequence(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	jitter := 0.0
	b := newBackoff(clk, func() float64 { return jitter })
	want := []time.Duration{800 * time.Millisecond, 1600 * time.Millisecond, 3200 * time.Millisecond,
		6400 * time.Millisecond, 12800 * time.Millisecond, 25600 * time.Millisecond, 30 * time.Second, 30 * time.Second}
	for i, w := range want {
		if got := b.Step(); got != w {
			t.Fatalf("step %d: %v, want %v", i, got, w)
		}
	}
	jitter = 0.5
	if got := b.Step(); got != 45*time.Second {
		t.Errorf("capped step with jitter 0.5: %v, want 45s (30s + 50%%)", got)
	}
	clk.Step(2*time.Minute + time.Millisecond)
	jitter = 0
	if got := b.Step(); got != 800*time.Millisecond {
		t.Errorf("after 2m: %v, want the sequence reset to 800ms", got)
	}
}

// runReflector runs a Reflector over srv into a RealFIFO until the test's
// bubble ends; it returns the FIFO and a list of errors reported.
func runReflector(t *testing.T, srv *fakeServer, opts ReflectorOptions) (*Reflector, *RealFIFO, func() []string) {
	t.Helper()
	q := NewRealFIFO(nil)
	var mu sync.Mutex
	var errs []string
	opts.WatchErrorHandler = func(err error) {
		mu.Lock()
		defer mu.Unlock()
		errs = append(errs, err.Error())
	}
	r := NewReflector(srv, q, opts)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); r.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return r, q, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), errs...)
	}
}

// TestReflectorStreamingList: the first sync is one watch with
// sendInitialEvents=true, allowWatchBookmarks, resourceVersionMatch=
// NotOlderThan from "" and a timeout in [5m,10m); no LIST at all; the
// objects become one Replace at the bookmark's resourceVersion, and the same
// watch goes on.
func TestReflectorStreamingList(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newFakeServer(nil)
		srv.create("a", "1")
		srv.create("b", "1")
		r, q, _ := runReflector(t, srv, ReflectorOptions{})
		synctest.Wait()
		lists, watches := srv.requests()
		if len(lists) != 0 || len(watches) != 1 {
			t.Fatalf("requests: %d LIST, %d WATCH; want 0 and 1", len(lists), len(watches))
		}
		w := watches[0]
		if w.SendInitialEvents == nil || !*w.SendInitialEvents || !w.AllowWatchBookmarks ||
			w.ResourceVersionMatch != metav1.ResourceVersionMatchNotOlderThan || w.ResourceVersion != "" {
			t.Errorf("streaming list options: %+v", w)
		}
		if s := *w.TimeoutSeconds; s < 300 || s >= 600 {
			t.Errorf("timeoutSeconds %d, want in [300,600)", s)
		}
		if q.Len() != 1 || q.items[0].Type != ReplacedAll {
			t.Fatalf("queue: %+v, want one ReplacedAll", q.items)
		}
		if info := q.items[0].Object.(ReplacedAllInfo); info.ResourceVersion != "2" || len(info.Objects) != 2 {
			t.Errorf("ReplacedAll at %q with %d objects, want 2 and 2", info.ResourceVersion, len(info.Objects))
		}
		srv.create("c", "1")
		synctest.Wait()
		if _, watches := srv.requests(); len(watches) != 1 || q.Len() != 2 || q.items[1].Type != Added {
			t.Errorf("after a create: %d watches, queue %+v; want the same watch to deliver it", len(watches), q.items)
		}
		if rv := r.LastSyncResourceVersion(); rv != "3" {
			t.Errorf("LastSyncResourceVersion %q, want 3", rv)
		}
	})
}

// noWatchList wraps a fakeServer and refuses streaming lists, as a server
// (or a proxy in front of it) that does not know sendInitialEvents might.
type noWatchList struct{ *fakeServer }

func (n noWatchList) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	if opts.SendInitialEvents != nil {
		return nil, apierrors.NewBadRequest("sendInitialEvents is forbidden for this server")
	}
	return n.fakeServer.WatchWithContext(ctx, opts)
}

// TestReflectorFallsBackToPaginatedList: when the streaming list fails, a
// LIST at resourceVersion "0" in pages (of 2 here, PageSize), then a watch from the list's
// resourceVersion.
func TestReflectorFallsBackToPaginatedList(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newFakeServer(nil)
		for _, n := range []string{"a", "b", "c"} {
			srv.create(n, "1")
		}
		q := NewRealFIFO(nil)
		r := NewReflector(noWatchList{srv}, q, ReflectorOptions{PageSize: 2})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go r.Run(ctx)
		synctest.Wait()
		lists, watches := srv.requests()
		if len(lists) != 2 || lists[0].ResourceVersion != "0" || lists[0].Limit != 2 || lists[1].Continue == "" {
			t.Fatalf("LISTs: %+v; want two pages, the first at RV 0", lists)
		}
		// (The refused streaming list never reached the fake server.)
		if len(watches) != 1 || watches[0].ResourceVersion != "3" || watches[0].SendInitialEvents != nil {
			t.Fatalf("watches: %+v; want one watch from 3", watches)
		}
		if info := q.items[0].Object.(ReplacedAllInfo); len(info.Objects) != 3 || info.ResourceVersion != "3" {
			t.Errorf("Replace: %d objects at %q, want 3 at 3", len(info.Objects), info.ResourceVersion)
		}
		cancel()
		synctest.Wait()
	})
}

// TestReflectorRewatchAfterTimeout: the server ends the watch after its
// timeoutSeconds; the Reflector watches again from the last resourceVersion
// (no relist, no initial events), having missed nothing.
func TestReflectorRewatchAfterTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newFakeServer(nil)
		srv.create("a", "1")
		_, q, _ := runReflector(t, srv, ReflectorOptions{})
		synctest.Wait()
		elapse(5 * time.Minute)
		srv.update("a", "2")
		elapse(5 * time.Minute) // past any timeout in [5m,10m)
		synctest.Wait()
		lists, watches := srv.requests()
		if len(lists) != 0 || len(watches) != 2 {
			t.Fatalf("%d LISTs, %d watches; want 0 and 2", len(lists), len(watches))
		}
		if w := watches[1]; w.ResourceVersion != "2" || w.SendInitialEvents != nil || !w.AllowWatchBookmarks {
			t.Errorf("rewatch options %+v, want from RV 2 without initial events", w)
		}
		srv.update("a", "3")
		synctest.Wait()
		var types []DeltaType
		for _, d := range q.items {
			types = append(types, d.Type)
		}
		if got := strings.Join(strs(types), " "); got != "ReplacedAll Updated Updated" {
			t.Errorf("queued %s, want ReplacedAll Updated Updated", got)
		}
	})
}

func strs[T ~string](in []T) []string {
	out := make([]string, len(in))
	for i, s := range in {
		out[i] = string(s)
	}
	return out
}

// TestReflectorRelistOn410: a watch that ends with 410 Expired sends the
// Reflector back to a streaming list after one backoff step: first at its
// resourceVersion (refused: too old), then from "" (the newest state). The
// list replaces the store, so an object deleted meanwhile is gone.
func TestReflectorRelistOn410(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newFakeServer(nil)
		srv.create("a", "1")
		srv.create("b", "1")
		_, q, errs := runReflector(t, srv, ReflectorOptions{Rand: func() float64 { return 0 }})
		synctest.Wait()
		srv.expire()
		srv.remove("b") // while nobody watches
		synctest.Wait()
		start := time.Now()
		elapse(time.Second)
		synctest.Wait()
		_, watches := srv.requests()
		if len(watches) != 3 {
			t.Fatalf("%d watches after the 410, want 3: %+v", len(watches), watches)
		}
		if watches[1].ResourceVersion != "2" || watches[2].ResourceVersion != "" || watches[2].SendInitialEvents == nil {
			t.Errorf("relist attempts from %q then %q, want 2 (refused) then \"\"", watches[1].ResourceVersion, watches[2].ResourceVersion)
		}
		last := q.items[len(q.items)-1]
		if info, ok := last.Object.(ReplacedAllInfo); !ok || len(info.Objects) != 1 || info.ResourceVersion != "3" {
			t.Errorf("last queued %+v, want a ReplacedAll of a alone at 3", last)
		}
		if got := errs(); len(got) != 1 || !strings.Contains(got[0], "too old resource version") {
			t.Errorf("reported %q, want the 410", got)
		}
		_ = start
	})
}

// TestReflectorBacksOffWhileRefused: with the apiserver down (connection
// refused) the Reflector retries after 0.8s, 1.6s, 3.2s ... (jitter pinned
// to 0), measured on the bubble's fake clock.
func TestReflectorBacksOffWhileRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newFakeServer(nil)
		var mu sync.Mutex
		var at []time.Duration
		start := time.Now()
		srv.setRefuse(true)
		lw := &timedLW{fakeServer: srv, note: func() {
			mu.Lock()
			defer mu.Unlock()
			at = append(at, time.Since(start))
		}}
		q := NewRealFIFO(nil)
		r := NewReflector(lw, q, ReflectorOptions{Rand: func() float64 { return 0 }, DisableWatchList: true})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); r.Run(ctx) }()
		elapse(13 * time.Second)
		cancel()
		<-done
		mu.Lock()
		defer mu.Unlock()
		want := []time.Duration{0, 800 * time.Millisecond, 2400 * time.Millisecond, 5600 * time.Millisecond, 12 * time.Second}
		if len(at) != len(want) {
			t.Fatalf("LIST attempts at %v, want %v", at, want)
		}
		for i := range want {
			if at[i] != want[i] {
				t.Fatalf("LIST attempts at %v, want %v", at, want)
			}
		}
	})
}

// TestReflectorReportsEachRefusedStreamingList: a streaming list that is
// refused (the apiserver down, or a stale port) is retried with backoff, as
// upstream does, and each attempt is reported to the WatchErrorHandler: the
// informer command prints the first error and every retry instead of
// nothing.
func TestReflectorReportsEachRefusedStreamingList(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newFakeServer(nil)
		srv.setRefuse(true)
		_, _, errs := runReflector(t, srv, ReflectorOptions{Rand: func() float64 { return 0 }})
		synctest.Wait()
		if got := errs(); len(got) != 1 {
			t.Fatalf("reported %q at once, want the first refusal", got)
		}
		elapse(800*time.Millisecond + 1600*time.Millisecond)
		synctest.Wait()
		got := errs()
		_, watches := srv.requests()
		if len(got) != 3 || len(watches) != 3 {
			t.Fatalf("after two backoff steps: %d watches, reported %q; want 3 of each", len(watches), got)
		}
		for _, e := range got {
			if e != "streaming list failed, backing off: "+errConnectionRefused.Error() {
				t.Errorf("reported %q, want the refusal with \"backing off\"", e)
			}
		}
	})
}

type timedLW struct {
	*fakeServer
	note func()
}

func (l *timedLW) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	l.note()
	return l.fakeServer.ListWithContext(ctx, opts)
}

// TestReflectorRelistsAfterOtherErrors: an ERROR event that is not a 410 ends the
// watch and is reported; the Reflector relists and carries on.
func TestReflectorRelistsAfterOtherErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newFakeServer(nil)
		srv.create("a", "1")
		_, _, errs := runReflector(t, srv, ReflectorOptions{})
		synctest.Wait()
		srv.mu.Lock()
		for w := range srv.watchers {
			w.send(watch.Event{Type: watch.Error, Object: &apierrors.NewInternalError(errors.New("etcd is sad")).ErrStatus})
		}
		srv.mu.Unlock()
		elapse(2 * time.Second)
		synctest.Wait()
		if got := errs(); len(got) != 1 || !strings.Contains(got[0], "etcd is sad") {
			t.Errorf("reported %q", got)
		}
		if _, watches := srv.requests(); len(watches) != 2 || watches[1].SendInitialEvents == nil {
			t.Errorf("watches %+v, want a second streaming list", watches)
		}
	})
}

var _ = corev1.ConfigMap{}
