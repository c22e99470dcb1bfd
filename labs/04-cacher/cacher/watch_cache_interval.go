package cacher

// watchCacheInterval: the events a new watcher sends before live ones.
//
// Upstream twin: k8s.io/apiserver@v0.37.0/pkg/storage/cacher/watch_cache_interval.go
// (`watchCacheInterval` and its sources,
// k8s.io/apiserver@v0.37.0/pkg/storage/cacher/watch_cache_interval.go:27-296).
// An interval is an iterator: the cacheWatcher calls Next on its own
// goroutine until it returns nil. Where the events come from is its
// source:
//   - snapshotCacheIntervalSource: a buffer filled when the interval was
//     made, under the watchCache's lock (the ring's events after the
//     watch's RV; or the live store's objects when there is no snapshot);
//   - lazySnapshotCacheIntervalSource: an immutable store snapshot, taken
//     under the lock in O(1). Its O(N) walk runs at the first Next, on the
//     watcher's goroutine, with no lock held: new in 1.37 (1.36 listed and
//     sorted the whole store under the lock: labs/04-cacher/DEEPER.md,
//     "What changed in 1.37").
//
// Left out: `historyCacheIntervalSource`, the lazy ring source (see
// watch_cache_history.go), and the `initialEventsEndBookmark` field: our
// cacheWatcher sends that bookmark itself (cache_watcher.go).

import (
	"fmt"

	"github.com/listwatch-labs/listwatch-labs/labs/04-cacher/cacher/store"
	"k8s.io/apimachinery/pkg/watch"
)

// cacheIntervalSource gives an interval its events.
type cacheIntervalSource interface {
	// Next returns the next event, nil at the end.
	Next() (*watchCacheEvent, error)
}

type watchCacheInterval struct {
	source cacheIntervalSource
	// resourceVersion is the RV the interval brings a watcher to.
	resourceVersion uint64
}

// Next returns the next event, nil at the end.
func (wci *watchCacheInterval) Next() (*watchCacheEvent, error) {
	return wci.source.Next()
}

// newCacheIntervalFromEvents serves events already copied out of the ring.
func newCacheIntervalFromEvents(resourceVersion uint64, events []*watchCacheEvent) *watchCacheInterval {
	return &watchCacheInterval{
		source:          &snapshotCacheIntervalSource{buffer: &watchCacheIntervalBuffer{buffer: events, endIndex: len(events)}},
		resourceVersion: resourceVersion,
	}
}

// newCacheIntervalFromStore copies the objects of snap (the live store,
// read under the caller's lock) into a buffer of ADDED events, in key
// order: only key itself if matchesSingle.
func newCacheIntervalFromStore(resourceVersion uint64, snap store.Snapshot, key string, matchesSingle bool) (*watchCacheInterval, error) {
	var items []interface{}
	if matchesSingle {
		item, exists, err := snap.GetByKey(key)
		if err != nil {
			return nil, err
		}
		if exists {
			items = append(items, item)
		}
	} else {
		var err error
		if items, err = snap.OrderedListPrefix("", ""); err != nil {
			return nil, err
		}
	}
	events := make([]*watchCacheEvent, len(items))
	for i, item := range items {
		elem, ok := item.(*store.Element)
		if !ok {
			return nil, fmt.Errorf("not a storeElement: %v", item)
		}
		events[i] = storeElementToWatchCacheEvent(elem, resourceVersion)
	}
	return newCacheIntervalFromEvents(resourceVersion, events), nil
}

// newCacheIntervalFromLazySnapshot serves the objects of an immutable
// snapshot: O(1) now, the walk at the first Next.
func newCacheIntervalFromLazySnapshot(resourceVersion uint64, snap store.Snapshot) *watchCacheInterval {
	return &watchCacheInterval{
		source:          &lazySnapshotCacheIntervalSource{snapshot: snap, resourceVersion: resourceVersion},
		resourceVersion: resourceVersion,
	}
}

// storeElementToWatchCacheEvent: an initial event carries the interval's
// RV, the cache's when the state was taken, as upstream's does.
func storeElementToWatchCacheEvent(elem *store.Element, resourceVersion uint64) *watchCacheEvent {
	return &watchCacheEvent{
		Type:            watch.Added,
		Object:          elem.Object,
		ObjLabels:       elem.Labels,
		ObjFields:       elem.Fields,
		Key:             elem.Key,
		ResourceVersion: resourceVersion,
	}
}

// snapshotCacheIntervalSource serves events from a pre-filled buffer.
type snapshotCacheIntervalSource struct {
	buffer *watchCacheIntervalBuffer
}

func (s *snapshotCacheIntervalSource) Next() (*watchCacheEvent, error) {
	event, _ := s.buffer.next()
	return event, nil
}

// lazySnapshotCacheIntervalSource serves events from an immutable snapshot,
// walked at the first Next.
type lazySnapshotCacheIntervalSource struct {
	snapshot        store.Snapshot
	resourceVersion uint64
	loaded          bool
	items           []interface{}
	currentIndex    int
}

func (s *lazySnapshotCacheIntervalSource) Next() (*watchCacheEvent, error) {
	if !s.loaded {
		items, err := s.snapshot.OrderedListPrefix("", "")
		if err != nil {
			return nil, err
		}
		s.items = items
		s.loaded = true
	}
	if s.currentIndex >= len(s.items) {
		return nil, nil
	}
	elem, ok := s.items[s.currentIndex].(*store.Element)
	if !ok {
		return nil, fmt.Errorf("not a storeElement: %v", s.items[s.currentIndex])
	}
	s.items[s.currentIndex] = nil // let the GC have what was sent
	s.currentIndex++
	return storeElementToWatchCacheEvent(elem, s.resourceVersion), nil
}

// watchCacheIntervalBuffer is a slice of events and a read position.
type watchCacheIntervalBuffer struct {
	buffer     []*watchCacheEvent
	startIndex int
	endIndex   int
}

// next returns the next event and clears its slot, so that an event the
// ring has dropped is not kept alive by a slow watcher's buffer.
func (wcib *watchCacheIntervalBuffer) next() (*watchCacheEvent, bool) {
	if wcib.startIndex == wcib.endIndex {
		return nil, false
	}
	next := wcib.buffer[wcib.startIndex]
	wcib.buffer[wcib.startIndex] = nil
	wcib.startIndex++
	return next, true
}
