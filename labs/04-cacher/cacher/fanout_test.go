package cacher

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/storage"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/listwatch-labs/listwatch-labs/labkit"
	"github.com/listwatch-labs/listwatch-labs/labs/04-cacher/internal/labtest"
)

// The fan-out test: many watchers with different selectors, concurrent
// writers, and a check of every watcher's stream against etcd's own history.
//
// Normal suite: 200 watchers, 2,000 writes from 4 writers.
// Soak (LAB04_SOAK=1): 1,000 watchers, 10,000 writes.

const (
	writers       = 4
	namespaces    = 5
	nodes         = 10
	podsPerWriter = 25
)

// watcherSpec is one watcher's selection: a key (a whole resource or one
// namespace), an optional label selector app=web, an optional node.
type watcherSpec struct {
	key   string
	label labels.Selector
	field fields.Selector
}

func (s watcherSpec) String() string {
	return fmt.Sprintf("key=%s labels=%v fields=%v", s.key, s.label, s.field)
}

// received is what one counting consumer saw: "TYPE name rv" per event.
type received struct {
	mu     sync.Mutex
	events []string
	closed bool
}

func (r *received) len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.events)
}

func consume(w watch.Interface, r *received, wg *sync.WaitGroup) {
	defer wg.Done()
	for ev := range w.ResultChan() {
		r.mu.Lock()
		r.events = append(r.events, describe(ev))
		r.mu.Unlock()
	}
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
}

func TestFanOutEveryWatcherGetsExactlyItsEvents(t *testing.T) {
	labkit.ChecksExercise(t, "trigger-values", "cache-watcher-convert")
	checkLeaks(t)
	numWatchers, numWrites := 200, 2000
	if os.Getenv("LAB04_SOAK") == "1" {
		numWatchers, numWrites = 1000, 10000
	}
	// Fake time that never moves: the dispatcher's time budget never runs
	// out, so a consumer slowed down by a loaded machine (or the race
	// detector) is waited for instead of cut off. This test checks what is
	// delivered; TestSlowWatcherIsTerminatedWithinTheBudget checks the
	// budget.
	e := newPodEnv(t, testingclock.NewFakeClock(time.Now()))
	ctx := context.Background()
	startRV, err := e.store.GetCurrentResourceVersion(ctx)
	if err != nil {
		t.Fatal(err)
	}

	// Mixed selectors: a quarter each of everything, label app=web, one
	// namespace, and one node (the trigger-indexed kind a kubelet uses).
	specs := make([]watcherSpec, numWatchers)
	for i := range specs {
		s := watcherSpec{key: e.prefix, label: labels.Everything(), field: fields.Everything()}
		switch i % 4 {
		case 1:
			s.label = labels.SelectorFromSet(labels.Set{"app": "web"})
		case 2:
			s.key = fmt.Sprintf("%s/ns-%d", e.prefix, i%namespaces)
		case 3:
			s.field = fields.OneTermEqualSelector("spec.nodeName", fmt.Sprintf("node-%d", i%nodes))
		}
		specs[i] = s
	}
	results := make([]*received, numWatchers)
	watchers := make([]watch.Interface, numWatchers)
	var consumers sync.WaitGroup
	for i, s := range specs {
		w, err := e.cacher.Watch(ctx, s.key, storage.ListOptions{ResourceVersion: fmt.Sprint(startRV), Recursive: true,
			Predicate: labtest.Predicate(s.label, s.field)})
		if err != nil {
			t.Fatal(err)
		}
		watchers[i], results[i] = w, &received{}
		consumers.Add(1)
		go consume(w, results[i], &consumers)
	}

	// Four writers, each on its own 25 pods: create, relabel, move to
	// another node, delete, at random.
	var writersWG sync.WaitGroup
	for wi := range writers {
		writersWG.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(wi), 42))
			exists := map[string]bool{}
			for range numWrites / writers {
				n := rng.IntN(podsPerWriter)
				name := fmt.Sprintf("w%d-p%d", wi, n)
				// A pod keeps its namespace for life: derived from its number.
				ns := fmt.Sprintf("ns-%d", n%namespaces)
				if !exists[name] {
					p := &v1.Pod{}
					p.Namespace, p.Name = ns, name
					p.Labels = map[string]string{"app": []string{"web", "db"}[rng.IntN(2)]}
					p.Spec.NodeName = fmt.Sprintf("node-%d", rng.IntN(nodes))
					if err := e.cacher.Create(ctx, e.key(ns, name), p, nil, 0); err != nil {
						t.Error(err)
						return
					}
					exists[name] = true
					continue
				}
				if rng.IntN(3) == 0 {
					if err := e.cacher.Delete(ctx, e.key(ns, name), &v1.Pod{}, nil, nil, nil, storage.DeleteOptions{}); err != nil {
						t.Error(err)
						return
					}
					delete(exists, name)
					continue
				}
				label, node := []string{"web", "db"}[rng.IntN(2)], fmt.Sprintf("node-%d", rng.IntN(nodes))
				err := e.cacher.GuaranteedUpdate(ctx, e.key(ns, name), &v1.Pod{}, false, nil,
					func(in runtime.Object, _ storage.ResponseMeta) (runtime.Object, *uint64, error) {
						p := in.(*v1.Pod)
						p.Labels["app"] = label
						p.Spec.NodeName = node
						p.Annotations = map[string]string{"n": fmt.Sprint(rng.Int())} // never a no-op
						return p, nil, nil
					}, nil)
				if err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	writersWG.Wait()
	if t.Failed() {
		t.FailNow()
	}
	endRV, err := e.store.GetCurrentResourceVersion(ctx)
	if err != nil {
		t.Fatal(err)
	}

	// etcd's own history of this resource, read with a raw etcd watch.
	history := etcdHistory(t, e.prefix, int64(startRV), numWrites)
	if last := history[len(history)-1].rev; last > int64(endRV) {
		t.Fatalf("etcd history goes to %d, past the end %d", last, endRV)
	}
	expected := make([][]string, numWatchers)
	total := 0
	bySpec := map[string][]string{} // watchers with the same selection expect the same stream
	for i, s := range specs {
		stream, ok := bySpec[s.String()]
		if !ok {
			stream = expectedStream(history, e.prefix, s)
			bySpec[s.String()] = stream
		}
		expected[i] = stream
		total += len(stream)
	}
	allReceived := func() bool {
		for i, r := range results {
			if r.len() < len(expected[i]) {
				return false
			}
		}
		return true
	}
	if err := wait.PollUntilContextTimeout(ctx, time.Millisecond, 30*time.Second, true,
		func(context.Context) (bool, error) { return allReceived(), nil }); err != nil {
		for i, r := range results {
			if r.len() < len(expected[i]) {
				r.mu.Lock()
				t.Errorf("watcher %d (%s): %d of %d events, closed %v; first difference:\n%s", i, specs[i], len(r.events), len(expected[i]),
					r.closed, firstDifference(r.events, expected[i]))
				r.mu.Unlock()
			}
		}
		t.Fatalf("not every watcher received its events; metrics %+v", e.cacher.Metrics())
	}
	waitFor(t, "dispatcher idle", func() bool { return e.cacher.Metrics().EventsDispatched == int64(numWrites) })
	for _, w := range watchers {
		w.Stop()
	}
	consumers.Wait()
	for i, r := range results {
		if got, want := strings.Join(r.events, "\n"), strings.Join(expected[i], "\n"); got != want {
			t.Errorf("watcher %d (%s): %d events, want %d; first difference:\n%s", i, specs[i], len(r.events), len(expected[i]),
				firstDifference(r.events, expected[i]))
		}
	}
	m := e.cacher.Metrics()
	t.Logf("%d watchers, %d writes, %d deliveries; terminated %d, blocked dispatches %d, ring capacity %d",
		numWatchers, numWrites, total, m.WatchersTerminated, m.BlockedDispatches, m.RingCapacity)
	if m.WatchersTerminated != 0 {
		t.Errorf("%d watchers terminated; every consumer reads at once", m.WatchersTerminated)
	}
	if e.store.Opened.Load() != 1 || e.store.MaxOpen.Load() != 1 || e.store.Open() != 1 {
		t.Errorf("storage watches: opened %d, max open %d, open now %d; want exactly one throughout",
			e.store.Opened.Load(), e.store.MaxOpen.Load(), e.store.Open())
	}
}

// historyEvent is one etcd event, decoded.
type historyEvent struct {
	rev  int64
	cur  *v1.Pod // nil for a delete
	prev *v1.Pod // nil for a create
}

// etcdHistory reads the first n etcd events under prefix after revision
// from, with a raw etcd watch: the ground truth the Cacher must reproduce.
func etcdHistory(t *testing.T, prefix string, from int64, n int) []historyEvent {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	codec := labtest.Codec()
	decode := func(b []byte) *v1.Pod {
		p := &v1.Pod{}
		if _, _, err := codec.Decode(b, nil, p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	var out []historyEvent
	ch := etcdServer.Client.Watch(ctx, "/registry"+prefix+"/", clientv3.WithPrefix(), clientv3.WithRev(from+1), clientv3.WithPrevKV())
	for resp := range ch {
		if err := resp.Err(); err != nil {
			t.Fatal(err)
		}
		for _, ev := range resp.Events {
			h := historyEvent{rev: ev.Kv.ModRevision}
			if ev.Type == clientv3.EventTypePut {
				h.cur = decode(ev.Kv.Value)
			}
			if ev.PrevKv != nil {
				h.prev = decode(ev.PrevKv.Value)
			}
			out = append(out, h)
		}
		if len(out) >= n {
			return out
		}
	}
	t.Fatalf("etcd history: %d events, want %d", len(out), n)
	return nil
}

// expectedStream is what a watcher with spec must receive, derived from
// etcd's history with the rule of cache_watcher.go's convertToWatchEvent.
func expectedStream(history []historyEvent, resourcePrefix string, s watcherSpec) []string {
	pred := labtest.Predicate(s.label, s.field)
	keyPrefix := s.key + "/"
	matches := func(p *v1.Pod, key string) bool {
		if p == nil || !strings.HasPrefix(key, keyPrefix) {
			return false
		}
		ok, _ := pred.Matches(p)
		return ok
	}
	var out []string
	for _, h := range history {
		p := h.cur
		if p == nil {
			p = h.prev
		}
		key := resourcePrefix + "/" + p.Namespace + "/" + p.Name
		cur, prev := matches(h.cur, key), matches(h.prev, key)
		switch {
		case cur && prev:
			out = append(out, fmt.Sprintf("MODIFIED %s %d", p.Name, h.rev))
		case cur:
			out = append(out, fmt.Sprintf("ADDED %s %d", p.Name, h.rev))
		case prev:
			out = append(out, fmt.Sprintf("DELETED %s %d", p.Name, h.rev))
		}
	}
	return out
}

func firstDifference(got, want []string) string {
	for i := range max(len(got), len(want)) {
		var g, w string
		if i < len(got) {
			g = got[i]
		}
		if i < len(want) {
			w = want[i]
		}
		if g != w {
			return fmt.Sprintf("  event %d: got %q, want %q", i, g, w)
		}
	}
	return "  (none)"
}
