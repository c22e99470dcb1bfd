package cacher

import (
	"context"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/storage"
	upstreamcacher "k8s.io/apiserver/pkg/storage/cacher"
	"k8s.io/utils/clock"

	"github.com/listwatch-labs/listwatch-labs/labs/04-cacher/internal/labtest"
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

// Upstream's Cacher (k8s.io/apiserver@v0.36.4), over upstream's etcd3
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
	cfg := PodConfig(rec, e.prefix, clock.RealClock{})
	c, err := upstreamcacher.NewCacherFromConfig(upstreamcacher.Config{
		Storage:             rec,
		Versioner:           storage.APIObjectVersioner{},
		GroupResource:       schema.GroupResource{Resource: "pods"},
		EventsHistoryWindow: upstreamcacher.DefaultEventFreshDuration,
		ResourcePrefix:      e.prefix,
		KeyFunc:             cfg.KeyFunc,
		GetAttrsFunc:        cfg.GetAttrsFunc,
		NewFunc:             cfg.NewFunc,
		NewListFunc:         cfg.NewListFunc,
		Codec:               labtest.Codec(),
		Clock:               clock.RealClock{},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.Wait(ctx); err != nil {
		t.Fatal(err)
	}
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
