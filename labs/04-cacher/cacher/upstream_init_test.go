package cacher

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/utils/clock"
)

// recordingStorage records the lists and watches a Cacher asks of its
// storage and passes them on: a recording wrapper, named as such.
type recordingStorage struct {
	storage.Interface
	mu      sync.Mutex
	lists   int
	watches []storage.ListOptions
}

func (s *recordingStorage) GetList(ctx context.Context, key string, opts storage.ListOptions, listObj runtime.Object) error {
	s.mu.Lock()
	s.lists++
	s.mu.Unlock()
	return s.Interface.GetList(ctx, key, opts, listObj)
}

func (s *recordingStorage) Watch(ctx context.Context, key string, opts storage.ListOptions) (watch.Interface, error) {
	s.mu.Lock()
	s.watches = append(s.watches, opts)
	s.mu.Unlock()
	return s.Interface.Watch(ctx, key, opts)
}

// Upstream's Cacher (k8s.io/apiserver@v0.37.0), over upstream's etcd3
// store, loads without a LIST: its reflector watches the store with
// sendInitialEvents=true and bookmarks, and is ready once the store's
// initial events and initial-events-end bookmark have arrived. This
// lab's Cacher lists instead (README, "The reflector").
func TestUpstreamCacherLoadsByWatchList(t *testing.T) {
	e := newPodEnv(t, clock.RealClock{})
	e.create(t, "ns", "a", "", nil)
	e.create(t, "ns", "b", "", nil)
	upStore, closeUpStore := newUpstreamStore(t, e.prefix)
	defer closeUpStore()
	rec := &recordingStorage{Interface: upStore}
	c := upstreamCacherFor(t, benchPodConfig(rec, e.prefix))
	defer c.Stop()
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if rec.lists != 0 {
		t.Errorf("upstream's Cacher listed its storage %d times while loading, want 0 (a watch-list)", rec.lists)
	}
	if len(rec.watches) == 0 {
		t.Fatal("upstream's Cacher never watched its storage")
	}
	first := rec.watches[0]
	if first.SendInitialEvents == nil || !*first.SendInitialEvents || !first.Predicate.AllowWatchBookmarks {
		t.Errorf("first watch: sendInitialEvents %v, allowWatchBookmarks %v; want a watch-list (true, true)",
			first.SendInitialEvents, first.Predicate.AllowWatchBookmarks)
	}
}

// faultyWatchStorage passes watches on, and on inject() ends the current
// storage watch with one ERROR event, 500 InternalError, as etcd's "no
// leader" reaches the Cacher: a fault-injecting wrapper, named as such.
type faultyWatchStorage struct {
	storage.Interface
	mu      sync.Mutex
	watches int
	current chan struct{}
}

func (s *faultyWatchStorage) Watch(ctx context.Context, key string, opts storage.ListOptions) (watch.Interface, error) {
	w, err := s.Interface.Watch(ctx, key, opts)
	if err != nil {
		return nil, err
	}
	fault := make(chan struct{})
	s.mu.Lock()
	s.watches++
	s.current = fault
	s.mu.Unlock()
	out := make(chan watch.Event)
	done := make(chan struct{})
	go func() {
		defer close(out)
		defer w.Stop()
		for {
			select {
			case ev, ok := <-w.ResultChan():
				if !ok {
					return
				}
				select {
				case out <- ev:
				case <-done:
					return
				}
			case <-fault:
				status := apierrors.NewInternalError(errors.New("etcdserver: no leader (faultyWatchStorage)")).ErrStatus
				select {
				case out <- watch.Event{Type: watch.Error, Object: &status}:
				case <-done:
				}
				return
			case <-done:
				return
			}
		}
	}()
	return &funcWatcher{result: out, stop: sync.OnceFunc(func() { close(done) })}, nil
}

func (s *faultyWatchStorage) inject() {
	s.mu.Lock()
	defer s.mu.Unlock()
	close(s.current)
}

func (s *faultyWatchStorage) watchCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.watches
}

type funcWatcher struct {
	result chan watch.Event
	stop   func()
}

func (w *funcWatcher) ResultChan() <-chan watch.Event { return w.result }
func (w *funcWatcher) Stop()                          { w.stop() }

// An internal error on the storage watch (etcd's "no leader"): upstream's
// Cacher re-watches and keeps its watchers, because it sets
// MaxInternalErrorRetryDuration to 30 s; this lab's Cacher relists and
// ends them (each resumes from its last RV, as after any relist).
func TestInternalWatchErrorUpstreamKeepsWatchersOursRelists(t *testing.T) {
	e := newPodEnv(t, clock.RealClock{})
	e.create(t, "ns", "a", "", nil)
	upStore, closeUpStore := newUpstreamStore(t, e.prefix)
	defer closeUpStore()
	upFaulty := &faultyWatchStorage{Interface: upStore}
	up := upstreamCacherFor(t, benchPodConfig(upFaulty, e.prefix))
	defer up.Stop()
	labFaulty := &faultyWatchStorage{Interface: e.etcdPods}
	lab, err := NewCacherFromConfig(PodConfig(labFaulty, e.prefix, clock.RealClock{}))
	if err != nil {
		t.Fatal(err)
	}
	defer lab.Stop()
	waitFor(t, "lab cacher ready", lab.Ready)
	waitFor(t, "both storage watches open", func() bool { return upFaulty.watchCount() > 0 && labFaulty.watchCount() > 0 })

	rv, _ := e.store.GetCurrentResourceVersion(context.Background())
	opts := storage.ListOptions{ResourceVersion: fmt.Sprint(rv), Recursive: true, Predicate: everything()}
	upW, err := up.Watch(context.Background(), e.prefix, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer upW.Stop()
	labW, err := lab.Watch(context.Background(), e.prefix, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer labW.Stop()

	upBefore, labBefore := upFaulty.watchCount(), labFaulty.watchCount()
	upFaulty.inject()
	labFaulty.inject()
	waitFor(t, "both Cachers watching storage again", func() bool {
		return upFaulty.watchCount() > upBefore && labFaulty.watchCount() > labBefore
	})
	p := e.create(t, "ns", "b", "", nil)
	// Upstream's watcher is still there and gets the new pod.
	if ev := next(t, upW); describeAny(ev) != "ADDED b "+p.ResourceVersion {
		t.Errorf("upstream's watcher after the internal error: %s, want ADDED b", describeAny(ev))
	}
	// Ours was ended by the relist: its stream closes, with no ERROR.
	for ev := range labW.ResultChan() {
		t.Errorf("this lab's watcher after the internal error: %s, want its stream ended by the relist", describeAny(ev))
	}
	if m := lab.Metrics(); m.Relists < 2 {
		t.Errorf("this lab's Cacher: %d relists, want 2 (the first list and the one after the error)", m.Relists)
	}
}
