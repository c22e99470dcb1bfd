package informer

// Differential tests: the same event sequences, generated at random from
// seeds, fed through the fake server to our SharedIndexInformer and to
// client-go's (`NewSharedIndexInformer` in k8s.io/client-go@v0.37.0/tools/cache/shared_informer.go,
// with its v0.37.0 defaults: RealFIFO, AtomicFIFO, batches, WatchListClient).
// Both run in a testing/synctest bubble, so every timer (backoff, watch
// timeouts, resync) is on the bubble's fake clock, and after each step
// synctest.Wait lets both settle before the next: the steps cut the handler
// calls into segments that must match.

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/listwatch-labs/listwatch-labs/labkit"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
)

// diffStep is one step of a scenario, applied to the fake server.
type diffStep struct {
	op    string // create, update, delete, bookmark, end-watches, expire, add-handler, burst
	names []string
	value string
}

func (s diffStep) String() string { return fmt.Sprintf("%s %v %s", s.op, s.names, s.value) }

// genScenario makes a scenario from seed: creates, updates, deletes,
// bookmarks, watches ended by the server, 410s after which objects vanish
// (or change, or appear) before the relist, and one handler added late.
func genScenario(seed uint64) (initial []string, steps []diffStep) {
	rng := rand.New(rand.NewPCG(seed, 42))
	pool := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
	exists := map[string]bool{}
	pick := func(want bool) (string, bool) {
		var c []string
		for _, n := range pool {
			if exists[n] == want {
				c = append(c, n)
			}
		}
		if len(c) == 0 {
			return "", false
		}
		return c[rng.IntN(len(c))], true
	}
	for range 3 {
		n, _ := pick(false)
		exists[n] = true
		initial = append(initial, n)
	}
	value := 0
	next := func() string { value++; return fmt.Sprint(value) }
	// writes returns up to k random writes, applied to exists.
	writes := func(k int) (names []string, ops []string) {
		for range k {
			switch rng.IntN(3) {
			case 0:
				if n, ok := pick(false); ok {
					exists[n] = true
					names, ops = append(names, n), append(ops, "create")
				}
			case 1:
				if n, ok := pick(true); ok {
					names, ops = append(names, n), append(ops, "update")
				}
			case 2:
				if n, ok := pick(true); ok {
					exists[n] = false
					names, ops = append(names, n), append(ops, "delete")
				}
			}
		}
		return names, ops
	}
	lateAt := 5 + rng.IntN(20)
	for i := range 40 {
		if i == lateAt {
			steps = append(steps, diffStep{op: "add-handler"})
			continue
		}
		switch r := rng.IntN(100); {
		case r < 55:
			names, ops := writes(1)
			if len(names) == 1 {
				steps = append(steps, diffStep{op: ops[0], names: names, value: next()})
			}
		case r < 65:
			steps = append(steps, diffStep{op: "bookmark"})
		case r < 73:
			steps = append(steps, diffStep{op: "end-watches"})
		case r < 85:
			// A 410, then writes nobody watches before the relist.
			names, ops := writes(1 + rng.IntN(4))
			steps = append(steps, diffStep{op: "expire", names: names, value: strings.Join(ops, ",") + ":" + next()})
		default:
			names, ops := writes(2 + rng.IntN(5))
			steps = append(steps, diffStep{op: "burst", names: names, value: strings.Join(ops, ",") + ":" + next()})
		}
	}
	return initial, steps
}

// applyWrites applies "create,update,delete:V" to names.
func applyWrites(srv *fakeServer, names []string, spec string) {
	ops, value, _ := strings.Cut(spec, ":")
	for i, op := range strings.Split(ops, ",") {
		if i >= len(names) {
			break
		}
		switch op {
		case "create":
			srv.create(names[i], value)
		case "update":
			srv.update(names[i], value)
		case "delete":
			srv.remove(names[i])
		}
	}
}

// informerUnderTest is what the runner needs of either informer.
type informerUnderTest struct {
	addHandler  func(h cache.ResourceEventHandler) func() bool // returns HasSynced
	run         func(ctx context.Context)
	cache       func() []any
	cacheRV     func() string
	reflectorRV func() string
}

// listerWatcher is what both informers take: client-go's
// NewSharedIndexInformer a cache.ListerWatcher, ours the WithContext one.
// The fake server and the replay of a recording are both.
type listerWatcher interface {
	cache.ListerWatcher
	cache.ListerWatcherWithContext
}

func ourInformer(srv listerWatcher) informerUnderTest {
	inf := NewSharedIndexInformer(srv, Options{Transform: StripManagedFields, Indexers: Indexers{NamespaceIndex: NamespaceIndexFunc}})
	return informerUnderTest{
		addHandler: func(h cache.ResourceEventHandler) func() bool {
			reg, err := inf.AddEventHandler(h)
			if err != nil {
				panic(err)
			}
			return reg.HasSynced
		},
		run:         inf.Run,
		cache:       inf.GetIndexer().List,
		cacheRV:     inf.GetIndexer().LastStoreSyncResourceVersion,
		reflectorRV: inf.LastSyncResourceVersion,
	}
}

func clientGoInformer(srv listerWatcher) informerUnderTest {
	inf := cache.NewSharedIndexInformerWithOptions(srv, &corev1.ConfigMap{}, cache.SharedIndexInformerOptions{
		Indexers: cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc},
	})
	if err := inf.SetTransform(func(obj any) (any, error) { return StripManagedFields(obj) }); err != nil {
		panic(err)
	}
	return informerUnderTest{
		addHandler: func(h cache.ResourceEventHandler) func() bool {
			reg, err := inf.AddEventHandler(h)
			if err != nil {
				panic(err)
			}
			return reg.HasSynced
		},
		run:         inf.RunWithContext,
		cache:       inf.GetStore().List,
		cacheRV:     inf.GetIndexer().LastStoreSyncResourceVersion,
		reflectorRV: inf.LastSyncResourceVersion,
	}
}

// diffResult is what one run produced: per handler, the canonical segments;
// the final cache; the resourceVersions.
type diffResult struct {
	handlers []string
	cache    string
	rvs      string
}

// handlerSet is the recorders registered on one informer under test, and
// whether each has seen its HasSynced turn true.
type handlerSet struct {
	inf       informerUnderTest
	recs      []*recorder
	synced    []func() bool
	wasSynced []bool
}

// add registers a new recorder, its segments aligned with the first one's.
func (h *handlerSet) add() {
	r := newRecorder()
	if len(h.recs) > 0 {
		for range h.recs[0].segments[1:] {
			r.cut()
		}
	}
	h.recs = append(h.recs, r)
	h.synced = append(h.synced, h.inf.addHandler(r))
	h.wasSynced = append(h.wasSynced, false)
}

// cut ends every recorder's segment, first noting "synced" in those whose
// HasSynced has just turned true.
func (h *handlerSet) cut() {
	for i, r := range h.recs {
		if !h.wasSynced[i] && h.synced[i]() {
			h.wasSynced[i] = true
			r.record("", "synced")
		}
		r.cut()
	}
}

// result is the handlers' canonical calls, the cache and the resourceVersions.
func (h *handlerSet) result() diffResult {
	var res diffResult
	for _, r := range h.recs {
		res.handlers = append(res.handlers, r.canonical())
	}
	res.cache = cacheContent(h.inf.cache())
	res.rvs = fmt.Sprintf("cache at %s, reflector at %s", h.inf.cacheRV(), h.inf.reflectorRV())
	return res
}

func runScenario(t *testing.T, newInformer func(listerWatcher) informerUnderTest, initial []string, steps []diffStep) diffResult {
	var res diffResult
	synctest.Test(t, func(t *testing.T) {
		srv := newFakeServer(nil)
		for _, n := range initial {
			srv.create(n, "0")
		}
		inf := newInformer(srv)
		handlers := &handlerSet{inf: inf}
		handlers.add()
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); inf.run(ctx) }()
		settle := func(d time.Duration) {
			elapse(d) // inside synctest: the bubble's fake clock moves, at once
			synctest.Wait()
			handlers.cut()
		}
		settle(time.Second)
		for _, s := range steps {
			d := 2 * time.Second
			switch s.op {
			case "create":
				srv.create(s.names[0], s.value)
			case "update":
				srv.update(s.names[0], s.value)
			case "delete":
				srv.remove(s.names[0])
			case "bookmark":
				srv.bookmark()
			case "end-watches":
				srv.endWatches()
			case "expire":
				srv.expire()
				applyWrites(srv, s.names, s.value)
				d = 3 * time.Minute // past the longest backoff step
			case "burst":
				applyWrites(srv, s.names, s.value)
			case "add-handler":
				handlers.add()
			}
			settle(d)
		}
		res = handlers.result()
		cancel()
		<-done
	})
	return res
}

// TestDifferentialRandomScenarios: for each seed, the handler calls of every
// handler (per step, per object in order), the final cache and the final
// resourceVersions are identical between our informer and client-go's.
func TestDifferentialRandomScenarios(t *testing.T) {
	labkit.ChecksExercise(t, "relist-final-state-unknown")
	seeds := uint64(30)
	if testing.Short() {
		seeds = 5
	}
	for seed := range seeds {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			initial, steps := genScenario(seed)
			ours := runScenario(t, ourInformer, initial, steps)
			theirs := runScenario(t, clientGoInformer, initial, steps)
			for _, d := range ours.diff(theirs) {
				t.Errorf("scenario: %v %v\n%s", initial, steps, d)
			}
			if !strings.Contains(ours.handlers[0], "(final state unknown)") && strings.Contains(fmt.Sprint(steps), "expire") && strings.Contains(fmt.Sprint(steps), "delete") {
				t.Logf("seed %d: no delete went unseen (fine, but the scenario shows less)", seed)
			}
		})
	}
}

// diff lists how ours differs from theirs (client-go's): the number of
// handlers (two each), each handler's calls, the cache, the resourceVersions.
func (ours diffResult) diff(theirs diffResult) []string {
	if len(ours.handlers) != 2 || len(theirs.handlers) != 2 {
		return []string{fmt.Sprintf("handlers: ours %d, client-go %d; want 2 each", len(ours.handlers), len(theirs.handlers))}
	}
	var out []string
	for i := range ours.handlers {
		if ours.handlers[i] != theirs.handlers[i] {
			out = append(out, fmt.Sprintf("handler %d differs (- client-go, + ours); %s", i, lineDiff(ours.handlers[i], theirs.handlers[i])))
		}
	}
	if ours.cache != theirs.cache {
		out = append(out, fmt.Sprintf("final cache differs (- client-go, + ours); %s", lineDiff(ours.cache, theirs.cache)))
	}
	if ours.rvs != theirs.rvs {
		out = append(out, fmt.Sprintf("resourceVersions: ours %s; client-go %s", ours.rvs, theirs.rvs))
	}
	return out
}

// lineDiff shows where two transcripts part: labkit.Diff, with client-go's
// as the one wanted ("-") and ours as the one got ("+").
func lineDiff(ours, theirs string) string {
	return labkit.Diff(theirs, ours)
}

// TestDifferentialResync: with a 30s resync period, over 95 seconds of the
// bubble's clock with a few changes in between, the handler that resyncs
// and the one that does not (resync period 0) get the same calls from both
// informers: resyncs at 30s, 60s and 90s for the first, none for the other,
// and no LIST or watch request beyond the first.
func TestDifferentialResync(t *testing.T) {
	type run struct {
		handlers [2]string
		requests string
	}
	scenario := func(t *testing.T, useClientGo bool) run {
		var out run
		synctest.Test(t, func(t *testing.T) {
			srv := newFakeServer(nil)
			srv.create("a", "0")
			srv.create("b", "0")
			resyncing, quiet := newRecorder(), newRecorder()
			var runInformer func(context.Context)
			if useClientGo {
				inf := cache.NewSharedIndexInformer(srv, &corev1.ConfigMap{}, 30*time.Second, cache.Indexers{})
				inf.SetTransform(func(obj any) (any, error) { return StripManagedFields(obj) })
				inf.AddEventHandler(resyncing)
				inf.AddEventHandlerWithResyncPeriod(quiet, 0)
				runInformer = inf.RunWithContext
			} else {
				inf := NewSharedIndexInformer(srv, Options{ResyncPeriod: 30 * time.Second, Transform: StripManagedFields})
				inf.AddEventHandler(resyncing)
				inf.AddEventHandlerWithResyncPeriod(quiet, 0)
				runInformer = inf.Run
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { defer close(done); runInformer(ctx) }()
			for i, d := range []time.Duration{10, 25, 20, 40} {
				elapse(d * time.Second) // fake time (synctest): no wall-clock wait
				synctest.Wait()
				if i == 1 {
					srv.update("a", "1")
				}
				if i == 2 {
					srv.create("c", "2")
				}
				synctest.Wait()
				resyncing.cut()
				quiet.cut()
			}
			out.handlers = [2]string{resyncing.canonical(), quiet.canonical()}
			lists, watches := srv.requests()
			out.requests = fmt.Sprintf("%d LIST, %d WATCH", len(lists), len(watches))
			cancel()
			<-done
		})
		return out
	}
	ours, theirs := scenario(t, false), scenario(t, true)
	if ours != theirs {
		t.Errorf("ours:\n%s\n%s\n%s\nclient-go:\n%s\n%s\n%s", ours.handlers[0], ours.handlers[1], ours.requests, theirs.handlers[0], theirs.handlers[1], theirs.requests)
	}
	if n := strings.Count(ours.handlers[0], "rv1 v=0 -> b"); n != 0 {
		t.Errorf("a resync paired different objects")
	}
	if n := strings.Count(ours.handlers[0], "OnUpdate b rv2 v=0 -> b rv2 v=0"); n != 3 {
		t.Errorf("%d resyncs of b in 95s, want 3 (at 30s, 60s, 90s):\n%s", n, ours.handlers[0])
	}
	if strings.Contains(ours.handlers[1], "-> b rv2") {
		t.Errorf("the handler without resync got a resync:\n%s", ours.handlers[1])
	}
	if ours.requests != "0 LIST, 1 WATCH" {
		t.Errorf("requests: %s, want the one streaming list", ours.requests)
	}
}

// TestDifferentialBlockedHandler: in both informers, a handler that blocks
// does not delay another handler of the same informer.
func TestDifferentialBlockedHandler(t *testing.T) {
	for _, useClientGo := range []bool{false, true} {
		t.Run(fmt.Sprintf("clientgo=%v", useClientGo), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := newFakeServer(nil)
				stuck, free := newRecorder(), newRecorder()
				stuck.block = make(chan struct{})
				var runInformer func(context.Context)
				if useClientGo {
					inf := cache.NewSharedIndexInformer(srv, &corev1.ConfigMap{}, 0, cache.Indexers{})
					inf.AddEventHandler(stuck)
					inf.AddEventHandler(free)
					runInformer = inf.RunWithContext
				} else {
					inf := NewSharedIndexInformer(srv, Options{})
					inf.AddEventHandler(stuck)
					inf.AddEventHandler(free)
					runInformer = inf.Run
				}
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan struct{})
				go func() { defer close(done); runInformer(ctx) }()
				synctest.Wait()
				for i := range 50 {
					srv.create(fmt.Sprintf("cm-%02d", i), "1")
				}
				synctest.Wait()
				if n := free.count(); n != 50 {
					t.Errorf("free handler got %d of 50 calls while the other was stuck", n)
				}
				close(stuck.block)
				synctest.Wait()
				if n := stuck.count(); n != 50 {
					t.Errorf("stuck handler got %d of 50 calls once released", n)
				}
				cancel()
				<-done
			})
		})
	}
}

// TestDifferentialShutDownEventHandler: removing a handler, on our informer
// and on client-go's (RemoveEventHandler and the `ShutDownEventHandler` that
// 1.37 added: k8s.io/client-go@v0.37.0/tools/cache/shared_informer.go:1145-1155).
// A handler is stuck in its first call, with two more queued for it.
// RemoveEventHandler returns at once: it does not wait for that call.
// ShutDownEventHandler (after it, so also showing that a second removal
// does nothing) waits until the call returns, and then the handler gets
// nothing more: not the two that were queued, not the next change. The
// other handler gets every change. A handler removed from an informer that
// never ran shuts down at once.
func TestDifferentialShutDownEventHandler(t *testing.T) {
	for _, useClientGo := range []bool{false, true} {
		t.Run(fmt.Sprintf("clientgo=%v", useClientGo), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := newFakeServer(nil)
				held, other := newRecorder(), newRecorder()
				held.block = make(chan struct{})
				var runInformer func(context.Context)
				var remove, shutDown func() error
				if useClientGo {
					inf := cache.NewSharedIndexInformer(srv, &corev1.ConfigMap{}, 0, cache.Indexers{})
					reg, _ := inf.AddEventHandler(held)
					inf.AddEventHandler(other)
					runInformer = inf.RunWithContext
					remove = func() error { return inf.RemoveEventHandler(reg) }
					shutDown = func() error { return cache.ShutDownEventHandler(inf, reg) }

					idle := cache.NewSharedIndexInformer(srv, &corev1.ConfigMap{}, 0, cache.Indexers{})
					idleReg, _ := idle.AddEventHandler(newRecorder())
					if err := cache.ShutDownEventHandler(idle, idleReg); err != nil {
						t.Errorf("ShutDownEventHandler on an informer that never ran: %v", err)
					}
				} else {
					inf := NewSharedIndexInformer(srv, Options{})
					reg, _ := inf.AddEventHandler(held)
					inf.AddEventHandler(other)
					runInformer = inf.Run
					remove = func() error { return inf.RemoveEventHandler(reg) }
					shutDown = func() error { return ShutDownEventHandler(inf, reg) }

					idle := NewSharedIndexInformer(srv, Options{})
					idleReg, _ := idle.AddEventHandler(newRecorder())
					if err := ShutDownEventHandler(idle, idleReg); err != nil {
						t.Errorf("ShutDownEventHandler on an informer that never ran: %v", err)
					}
				}
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan struct{})
				go func() { defer close(done); runInformer(ctx) }()
				synctest.Wait()
				for i := range 3 {
					srv.create(fmt.Sprintf("cm-%d", i), "1")
				}
				synctest.Wait() // held is inside OnAdd cm-0, cm-1 and cm-2 queued for it

				if err := remove(); err != nil {
					t.Fatalf("RemoveEventHandler: %v", err)
				}
				shutDownReturned := make(chan error, 1)
				go func() { shutDownReturned <- shutDown() }()
				synctest.Wait()
				select {
				case err := <-shutDownReturned:
					t.Fatalf("ShutDownEventHandler returned (%v) while the handler was still in a call", err)
				default:
				}
				srv.create("cm-3", "1")
				close(held.block) // the call in progress returns
				synctest.Wait()
				select {
				case err := <-shutDownReturned:
					if err != nil {
						t.Errorf("ShutDownEventHandler: %v", err)
					}
				default:
					t.Fatal("ShutDownEventHandler still waiting after the handler's call returned")
				}
				srv.create("cm-4", "1")
				synctest.Wait()
				if got, want := held.lines(), []string{"OnAdd cm-0 rv1 v=1 managedFields"}; !slices.Equal(got, want) {
					t.Errorf("removed handler's calls: %q, want only the one in progress, %q", got, want)
				}
				if n := other.count(); n != 5 {
					t.Errorf("the other handler got %d calls, want 5", n)
				}
				cancel()
				<-done
			})
		})
	}
}
