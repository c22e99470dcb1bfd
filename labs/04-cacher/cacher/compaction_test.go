package cacher

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/storage"
	testingclock "k8s.io/utils/clock/testing"
)

// Compaction while the cache is between two etcd watches: the reflector's
// watch from its last revision gets 410, the cache relists, and every
// connected watcher's stream ends cleanly right after the last event it was
// owed: none missed, none twice, no gap papered over. A watch from a
// revision the cache no longer has gets the single ERROR 410.
func TestCompactionRelistsAndNoWatcherMissesAnEvent(t *testing.T) {
	checkLeaks(t)
	clk := testingclock.NewFakeClock(time.Now())
	e := newPodEnv(t, clk)
	ctx := context.Background()
	e.create(t, "ns", "a", "", nil)
	e.create(t, "ns", "b", "", nil)
	startRV, _ := e.store.GetCurrentResourceVersion(ctx)

	results := make([]*received, 5)
	var consumers sync.WaitGroup
	for i := range results {
		w, err := e.cacher.Watch(ctx, e.prefix, storage.ListOptions{ResourceVersion: fmt.Sprint(startRV), Recursive: true, Predicate: everything()})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		results[i] = &received{}
		consumers.Add(1)
		go consume(w, results[i], &consumers)
	}
	c := e.create(t, "ns", "c", "", nil)
	a := e.update(t, "ns", "a", func(p *v1.Pod) { p.Labels = map[string]string{"v": "2"} })
	want := []string{"ADDED c " + c.ResourceVersion, "MODIFIED a " + a.ResourceVersion}
	for _, r := range results {
		waitFor(t, "watchers got c and a", func() bool { return r.len() == len(want) })
	}

	// The next time the reflector watches, first: two writes it will not
	// see live, and a compaction past its revision.
	var once sync.Once
	e.store.SetBeforeWatch(func(storage.ListOptions) {
		once.Do(func() {
			e.create(t, "ns", "d", "", nil)
			last := e.create(t, "ns", "e", "", nil)
			if _, err := etcdServer.Client.Compact(ctx, int64(rvOf(last)), clientv3.WithCompactPhysical()); err != nil {
				t.Error(err)
			}
		})
	})
	// End the etcd watch cleanly (CountingStorage.BreakWatches stops it, as a
	// storage that dropped its connection could; etcd's client would resume).
	e.store.BreakWatches()
	waitFor(t, "the resumed watch got 410", func() bool { return e.cacher.Metrics().ExpiredWatches == 1 })
	clk.Step(relistBackoff)
	waitFor(t, "relisted", func() bool { return e.cacher.Metrics().Relists == 2 })
	if m := e.cacher.Metrics(); !strings.Contains(m.LastReflectorError, "too old") {
		t.Errorf("last reflector error %q, want etcd's 410 for the watch", m.LastReflectorError)
	}

	consumers.Wait() // every stream ended
	for i, r := range results {
		if got := strings.Join(r.events, "\n"); got != strings.Join(want, "\n") {
			t.Errorf("watcher %d got\n%s\nwant\n%s", i, got, strings.Join(want, "\n"))
		}
	}
	// After its relist the reflector watches storage again, in its own
	// goroutine: wait for that watch, then check there was never a second.
	waitFor(t, "the relisted cache watches storage again", func() bool { return e.store.Open() == 1 })
	if e.store.MaxOpen.Load() != 1 {
		t.Errorf("storage watches: max open %d; want one at a time", e.store.MaxOpen.Load())
	}

	// Resuming from the last RV a watcher saw: the cache's history now
	// starts at the relist, so that is 410, one ERROR event.
	w, err := e.cacher.Watch(ctx, e.prefix, storage.ListOptions{ResourceVersion: a.ResourceVersion, Recursive: true, Predicate: everything()})
	if err != nil {
		t.Fatal(err)
	}
	ev := <-w.ResultChan()
	if status, ok := ev.Object.(*metav1.Status); ev.Type != watch.Error || !ok || status.Code != 410 {
		t.Errorf("resume from %s: %s, want ERROR 410", a.ResourceVersion, describe(ev))
	}
	if _, open := <-w.ResultChan(); open {
		t.Error("more after the ERROR")
	}
	// A fresh watch sees the current state, including what was written
	// while the cache was not watching.
	fresh, err := e.cacher.Watch(ctx, e.prefix, storage.ListOptions{ResourceVersion: "0", Recursive: true, Predicate: everything()})
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Stop()
	var names []string
	for range 5 {
		names = append(names, strings.Fields(describe(next(t, fresh)))[1])
	}
	if fmt.Sprint(names) != "[a b c d e]" {
		t.Errorf("after the relist the cache has %v", names)
	}
}
