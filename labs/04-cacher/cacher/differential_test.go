package cacher

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/storage"
	etcdfeature "k8s.io/apiserver/pkg/storage/feature"
	"k8s.io/utils/clock"

	"github.com/listwatch-labs/listwatch-labs/labkit"
	"github.com/listwatch-labs/listwatch-labs/labs/04-cacher/internal/labtest"
)

// The same watches through this lab's Cacher and through
// k8s.io/apiserver@v0.37.0's, side by side on the same etcd keys: the
// streams must be identical. This is what makes the claims of this package
// about upstream's behaviour checkable: selector changes as DELETED, the
// trigger index, the 410 wording, the streaming list's bookmark, and the
// three states of sendInitialEvents (unset, true, false).
func TestDifferentialAgainstUpstreamCacher(t *testing.T) {
	labkit.ChecksExercise(t, "trigger-values", "cache-watcher-convert")
	// Upstream's `waitUntilFreshLocked`, when a read must wait, starts a
	// goroutine that wakes its waiters after `blockTimeout` (3 s) and lives
	// that long even when the wait ended at once
	// (k8s.io/apiserver@v0.37.0/pkg/storage/cacher/watch_cache.go:340-352):
	// not a leak of ours. (A fresh read starts none since 1.37:
	// TestUpstreamFreshReadStartsNoWakeUpGoroutine.)
	checkLeaks(t, goleak.IgnoreTopFunction("k8s.io/apiserver/pkg/storage/cacher.(*watchCache).waitUntilFreshLocked.func2"))
	// Move etcd's revision past 1 first, so that RV 1 is older than what
	// both caches list at (see the too-old check below).
	for i := range 3 {
		if _, err := etcdServer.Client.Put(context.Background(), fmt.Sprint("/lab04-bump/", i), "x"); err != nil {
			t.Fatal(err)
		}
	}
	e := newPodEnv(t, clock.RealClock{})
	up, stop := newUpstreamCacher(t, e.prefix, true)
	defer stop()
	ctx := context.Background()
	// Upstream serves streaming lists only once it knows etcd supports
	// progress requests, asking `DefaultFeatureSupportChecker`
	// (k8s.io/apiserver@v0.37.0/pkg/storage/cacher/cacher.go:576-578),
	// which checks per client.
	etcdfeature.DefaultFeatureSupportChecker.CheckClient(ctx, etcdServer.Client, storage.RequestWatchProgress)
	waitFor(t, "etcd feature check", func() bool {
		return etcdfeature.DefaultFeatureSupportChecker.Supports(storage.RequestWatchProgress)
	})

	// And this lab's Cacher in front of upstream's etcd3 store: the Cacher
	// works over any storage.Interface.
	upStore, closeUpStore := newUpstreamStore(t, e.prefix)
	defer closeUpStore()
	labOverUpstream, err := NewCacherFromConfig(PodConfig(upStore, e.prefix, clock.RealClock{}))
	if err != nil {
		t.Fatal(err)
	}
	defer labOverUpstream.Stop()
	waitFor(t, "lab cacher over upstream etcd3 ready", labOverUpstream.Ready)
	e.create(t, "ns-0", "seed", "node-0", map[string]string{"app": "web"})
	startRV, _ := e.store.GetCurrentResourceVersion(ctx)
	type spec struct {
		key  string
		pred storage.SelectionPredicate
	}
	nodePred := labtest.Predicate(nil, fields.OneTermEqualSelector("spec.nodeName", "node-1"))
	// Upstream uses the trigger only when the registry names the field in
	// `IndexFields` (k8s.io/apiserver@v0.37.0/pkg/storage/cacher/cacher.go:555-565).
	nodePred.IndexFields = []string{"spec.nodeName"}
	specs := []spec{
		{e.prefix, everything()},
		{e.prefix, labtest.Predicate(labels.SelectorFromSet(labels.Set{"app": "web"}), nil)},
		{e.prefix + "/ns-1", everything()},
		{e.prefix, nodePred},
	}
	impls := map[string]watchStorage{"lab": e.cacher, "upstream": up, "lab/upstream-etcd3": labOverUpstream}
	results := map[string][]*received{}
	var consumers sync.WaitGroup
	for name, impl := range impls {
		for _, s := range specs {
			w, err := impl.Watch(ctx, s.key, storage.ListOptions{ResourceVersion: fmt.Sprint(startRV), Recursive: true, Predicate: s.pred})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			r := &received{}
			results[name] = append(results[name], r)
			consumers.Add(1)
			go func() {
				defer consumers.Done()
				for ev := range w.ResultChan() {
					r.mu.Lock()
					r.events = append(r.events, describeAny(ev))
					r.mu.Unlock()
				}
				r.mu.Lock()
				r.closed = true // the implementation ended the watch
				r.mu.Unlock()
			}()
		}
	}

	// 150 random writes on 15 pods in 3 namespaces and 3 nodes.
	rng := rand.New(rand.NewPCG(7, 7))
	exists := map[string]bool{}
	for range 150 {
		n := rng.IntN(15)
		name, ns := fmt.Sprint("p", n), fmt.Sprint("ns-", n%3)
		switch {
		case !exists[name]:
			e.create(t, ns, name, fmt.Sprint("node-", rng.IntN(3)), map[string]string{"app": []string{"web", "db"}[rng.IntN(2)]})
			exists[name] = true
		case rng.IntN(4) == 0:
			e.delete(t, ns, name)
			delete(exists, name)
		default:
			label, node := []string{"web", "db"}[rng.IntN(2)], fmt.Sprint("node-", rng.IntN(3))
			e.update(t, ns, name, func(p *v1.Pod) {
				p.Labels["app"], p.Spec.NodeName = label, node
				p.Annotations = map[string]string{"n": fmt.Sprint(rng.Int())}
			})
		}
	}
	endRV, _ := e.store.GetCurrentResourceVersion(ctx)
	// Done when every stream has reached etcd's last revision or both
	// implementations agree and have been quiet; compare then.
	lastRV := func(r *received) string {
		r.mu.Lock()
		defer r.mu.Unlock()
		if len(r.events) == 0 {
			return ""
		}
		return r.events[len(r.events)-1]
	}
	same := func() bool {
		for i := range specs {
			if !sameEvents(results["lab"][i], results["upstream"][i]) ||
				!sameEvents(results["lab"][i], results["lab/upstream-etcd3"][i]) {
				return false
			}
		}
		return strings.HasSuffix(lastRV(results["lab"][0]), fmt.Sprint(" ", endRV))
	}
	if err := wait.PollUntilContextTimeout(ctx, time.Millisecond, 20*time.Second, true,
		func(context.Context) (bool, error) { return same(), nil }); err != nil {
		// Say how they differ: which streams, how long, ended or not.
		for i, s := range specs {
			for _, other := range []string{"upstream", "lab/upstream-etcd3"} {
				if !sameEvents(results["lab"][i], results[other][i]) {
					a, b := results[other][i], results["lab"][i]
					a.mu.Lock()
					b.mu.Lock()
					t.Errorf("spec %d (%s %v): %s has %d events (ended: %v), lab %d (ended: %v); etcd at %d:\n%s", i, s.key, s.pred,
						other, len(a.events), a.closed, len(b.events), b.closed, endRV,
						labkit.Diff(strings.Join(a.events, "\n"), strings.Join(b.events, "\n")))
					b.mu.Unlock()
					a.mu.Unlock()
				}
			}
		}
		t.Fatalf("timed out waiting for both implementations to deliver the same streams up to etcd's revision %d (lab's last: %q)", endRV, lastRV(results["lab"][0]))
	}
	for i, s := range specs {
		lab, upstream := results["lab"][i], results["upstream"][i]
		lab.mu.Lock()
		upstream.mu.Lock()
		if len(lab.events) == 0 {
			t.Errorf("spec %d (%s %v): no events", i, s.key, s.pred)
		}
		t.Logf("spec %d (%s, labels %v, fields %v): %d identical events", i, s.key, s.pred.Label, s.pred.Field, len(lab.events))
		lab.mu.Unlock()
		upstream.mu.Unlock()
	}

	// A watch from before both caches' history: the same single ERROR, word
	// for word.
	tooOld := map[string]string{}
	for name, impl := range impls {
		w, err := impl.Watch(ctx, e.prefix, storage.ListOptions{ResourceVersion: "1", Recursive: true, Predicate: everything()})
		if err != nil {
			t.Fatal(err)
		}
		tooOld[name] = describeAny(next(t, w))
		if _, open := <-w.ResultChan(); open {
			t.Errorf("%s: more than one event after the ERROR", name)
		}
		w.Stop()
	}
	if tooOld["lab"] != tooOld["upstream"] || tooOld["lab"] != tooOld["lab/upstream-etcd3"] || !strings.Contains(tooOld["lab"], "410 Expired too old resource version: 1 (") {
		t.Errorf("watch from RV 1:\nlab:      %s\nupstream: %s\nlab over upstream etcd3: %s", tooOld["lab"], tooOld["upstream"], tooOld["lab/upstream-etcd3"])
	}

	// A streaming list: the same ADDED events in the same order, then the
	// initial-events-end bookmark.
	streams := map[string]string{}
	for name, impl := range impls {
		yes := true
		pred := labtest.Predicate(labels.SelectorFromSet(labels.Set{"app": "web"}), nil)
		pred.AllowWatchBookmarks = true
		wctx, cancel := context.WithTimeout(ctx, time.Minute)
		w, err := impl.Watch(wctx, e.prefix, storage.ListOptions{Recursive: true, Predicate: pred, SendInitialEvents: &yes,
			ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan})
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		var evs []string
		for ev := range w.ResultChan() {
			evs = append(evs, describeAny(ev))
			if ev.Type != watch.Added {
				break
			}
		}
		w.Stop()
		cancel()
		streams[name] = strings.Join(evs, "\n")
	}
	if streams["lab"] != streams["upstream"] || streams["lab"] != streams["lab/upstream-etcd3"] || !strings.Contains(streams["lab"], "BOOKMARK initial-events-end") {
		t.Errorf("streaming list:\nlab:\n%s\nupstream:\n%s\nlab over upstream etcd3:\n%s\nlab against upstream, %s", streams["lab"], streams["upstream"], streams["lab/upstream-etcd3"], labkit.Diff(streams["upstream"], streams["lab"]))
	}

	// sendInitialEvents has three states. Unset with RV "" or "0": the
	// current objects as ADDED, then changes (the legacy watch). false
	// with RV "0": no initial events, changes after the cache's RV. false
	// with RV "": no initial events, changes after etcd's current
	// revision. Each watch is opened on every implementation, then one
	// write is made: the streams up to that write must be the same.
	no := false
	for _, mode := range []struct {
		name              string
		rv                string
		sendInitialEvents *bool
		legacy            bool
	}{
		{"unset, RV 0", "0", nil, true},
		{"unset, RV \"\"", "", nil, true},
		{"false, RV 0", "0", &no, false},
		{"false, RV \"\"", "", &no, false},
	} {
		watches := map[string]watch.Interface{}
		for name, impl := range impls {
			w, err := impl.Watch(ctx, e.prefix, storage.ListOptions{ResourceVersion: mode.rv, Recursive: true, Predicate: everything(),
				SendInitialEvents: mode.sendInitialEvents, ResourceVersionMatch: resourceVersionMatchFor(mode.sendInitialEvents)})
			if err != nil {
				t.Fatalf("%s: %s: %v", mode.name, name, err)
			}
			watches[name] = w
		}
		p := e.update(t, "ns-0", "seed", func(p *v1.Pod) { p.Annotations = map[string]string{"mode": mode.name} })
		want := fmt.Sprintf("MODIFIED seed %s", p.ResourceVersion)
		got := map[string]string{}
		for name, w := range watches {
			var evs []string
			for {
				ev := next(t, w)
				evs = append(evs, describeAny(ev))
				if evs[len(evs)-1] == want {
					break
				}
			}
			w.Stop()
			got[name] = strings.Join(evs, "\n")
		}
		if got["lab"] != got["upstream"] || got["lab"] != got["lab/upstream-etcd3"] {
			t.Errorf("%s:\nlab:\n%s\nupstream:\n%s\nlab over upstream etcd3:\n%s", mode.name, got["lab"], got["upstream"], got["lab/upstream-etcd3"])
		}
		// The legacy watch starts with the state; the others with the write.
		if initial := strings.Count(got["upstream"], "\n"); mode.legacy != (initial > 0) {
			t.Errorf("%s: %d events before the write, want them only for the legacy watch:\n%s", mode.name, initial, got["upstream"])
		}
		t.Logf("sendInitialEvents %s: %d identical events", mode.name, strings.Count(got["lab"], "\n")+1)
	}
}

// resourceVersionMatchFor: API validation requires NotOlderThan with
// sendInitialEvents, and no match without it.
func resourceVersionMatchFor(sendInitialEvents *bool) metav1.ResourceVersionMatch {
	if sendInitialEvents == nil {
		return ""
	}
	return metav1.ResourceVersionMatchNotOlderThan
}

func sameEvents(a, b *received) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.Join(a.events, "\n") == strings.Join(b.events, "\n")
}

// describeAny is "TYPE name rv" for any object with metadata (upstream
// wraps objects with `setCachingObjects`,
// k8s.io/apiserver@v0.37.0/pkg/storage/cacher/cacher.go:965-994), "ERROR code reason message" for a
// Status, and marks the initial-events-end bookmark.
func describeAny(ev watch.Event) string {
	if s, ok := ev.Object.(*metav1.Status); ok {
		return fmt.Sprintf("ERROR %d %s %s", s.Code, s.Reason, s.Message)
	}
	m, err := meta.Accessor(ev.Object)
	if err != nil {
		return fmt.Sprintf("%s %T", ev.Type, ev.Object)
	}
	if ev.Type == watch.Bookmark {
		if m.GetAnnotations()[metav1.InitialEventsAnnotationKey] == "true" {
			return "BOOKMARK initial-events-end"
		}
		return "BOOKMARK " + m.GetResourceVersion()
	}
	return fmt.Sprintf("%s %s %s", ev.Type, m.GetName(), m.GetResourceVersion())
}
