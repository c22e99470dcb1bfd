package cacher

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/utils/clock"
	testingclock "k8s.io/utils/clock/testing"
)

// countingDeafProgressStorage counts RequestWatchProgress calls and does
// not pass them on, so no progress notification ever arrives: a counting
// wrapper and a fake for one layer, named as such.
type countingDeafProgressStorage struct {
	storage.Interface
	requests atomic.Int64
}

func (s *countingDeafProgressStorage) RequestWatchProgress(context.Context) error {
	s.requests.Add(1)
	return nil
}

// Ten consistent LISTs wait at once for a cache that cannot catch up: the
// Cacher's one progress requester asks etcd once every 100 ms for all of
// them (about 31 requests in the 3 s they wait), not once per reader (310).
func TestOneProgressRequesterForAllWaitingReaders(t *testing.T) {
	checkLeaks(t)
	clk := testingclock.NewFakeClock(time.Now())
	e := newPodEnv(t, clock.RealClock{})
	counting := &countingDeafProgressStorage{Interface: e.etcdPods}
	c, err := NewCacherFromConfig(PodConfig(counting, e.prefix, clk))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	waitFor(t, "ready", c.Ready)
	// etcd's revision moves on in another resource: no event reaches this
	// cache, so only a progress notification could bring it there.
	other := newPodEnv(t, clock.RealClock{})
	other.create(t, "ns", "x", "", nil)

	const readers = 10
	done := make(chan error, readers)
	for range readers {
		go func() {
			done <- c.GetList(context.Background(), e.prefix, storage.ListOptions{Recursive: true, Predicate: everything()}, &v1.PodList{})
		}()
	}
	waitFor(t, "every reader waiting", func() bool { return c.progress.waiters() == readers })
	// Fake time: the clock's waiters are each reader's 3 s timer, the
	// requester's 100 ms timer and the dispatcher's bookmark ticker.
	const steps = int(blockTimeout / progressRequestPeriod)
	for range steps {
		waitFor(t, "the readers and the requester on their timers", func() bool { return clk.Waiters() == readers+2 })
		clk.Step(progressRequestPeriod)
	}
	for range readers {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("a reader never fell back to etcd")
		}
	}
	sent, counted := counting.requests.Load(), c.Metrics().ProgressRequests
	t.Logf("%d readers, %d progress requests over %v", readers, sent, blockTimeout)
	if sent != counted {
		t.Errorf("storage saw %d progress requests, the Cacher counted %d", sent, counted)
	}
	// One at once, then one per period while anyone waits.
	if sent < int64(steps)-1 || sent > int64(steps)+1 {
		t.Errorf("%d progress requests for %d readers over %d periods: want one per period (%d..%d), shared by all readers",
			sent, readers, steps, steps-1, steps+1)
	}
	if m := c.Metrics(); m.ConsistentReadsFallback != readers {
		t.Errorf("metrics %+v: want %d fallbacks", m, readers)
	}
}

// failingListStorage fails every list and watch, so a Cacher over it never
// becomes ready: a fake for one layer, named as such.
type failingListStorage struct{ storage.Interface }

var errStorageDown = errors.New("etcd is down (failingListStorage)")

func (failingListStorage) GetList(context.Context, string, storage.ListOptions, runtime.Object) error {
	return errStorageDown
}

func (failingListStorage) Get(context.Context, string, storage.GetOptions, runtime.Object) error {
	return errStorageDown
}

// A Cacher that is not ready refuses watches and cache-served lists at once
// with 429 and a Retry-After, sends a GET with an RV and an unselective
// limited LIST to storage instead, and never waits.
func TestNotReadyIs429WithRetryAfter(t *testing.T) {
	checkLeaks(t)
	clk := testingclock.NewFakeClock(time.Now())
	e := newPodEnv(t, clock.RealClock{})
	c, err := NewCacherFromConfig(PodConfig(failingListStorage{e.etcdPods}, e.prefix, clk))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	ctx := context.Background()
	waitFor(t, "the first list failed", func() bool { return c.Metrics().ReflectorErrors > 0 })
	if c.Ready() {
		t.Fatal("ready over a storage whose lists fail")
	}
	check := func(what string, err error, retryAfter int) {
		t.Helper()
		var status apierrors.APIStatus
		if !errors.As(err, &status) || status.Status().Code != http.StatusTooManyRequests {
			t.Fatalf("%s: %v, want 429", what, err)
		}
		if got, ok := apierrors.SuggestsClientDelay(err); !ok || got != retryAfter {
			t.Errorf("%s: Retry-After %d (%v), want %d", what, got, ok, retryAfter)
		}
		if msg := status.Status().Message; msg != "storage is (re)initializing: "+errStorageDown.Error() {
			t.Errorf("%s: message %q", what, msg)
		}
	}
	_, err = c.Watch(ctx, e.prefix, storage.ListOptions{ResourceVersion: "0", Recursive: true, Predicate: everything()})
	check("watch, just started", err, 1)
	err = c.GetList(ctx, e.prefix, storage.ListOptions{ResourceVersion: "", Recursive: true, Predicate: everything()}, &v1.PodList{})
	check("consistent list", err, 1)
	// e^(0.06 * 60) = 36.6: clamped to 30 s.
	clk.Step(time.Minute)
	err = c.GetList(ctx, e.prefix, storage.ListOptions{ResourceVersion: "0", Recursive: true, Predicate: everything()}, &v1.PodList{})
	check("list RV 0, a minute later", err, 30)
	// These go to storage, which answers (here: fails) for itself.
	limited := everything()
	limited.Limit = 10
	if err := c.GetList(ctx, e.prefix, storage.ListOptions{ResourceVersion: "0", Recursive: true, Predicate: limited}, &v1.PodList{}); !errors.Is(err, errStorageDown) {
		t.Errorf("limited list RV 0 while not ready: %v, want the storage's answer", err)
	}
	if err := c.Get(ctx, e.prefix+"/ns/a", storage.GetOptions{ResourceVersion: "1"}, &v1.Pod{}); !errors.Is(err, errStorageDown) {
		t.Errorf("get RV 1 while not ready: %v, want the storage's answer", err)
	}
}
