package store

// The ordered store and its snapshots.
//
// Upstream twin: k8s.io/apiserver@v0.37.0/pkg/storage/cacher/store/store_btree.go
// (`btreeStore`, k8s.io/apiserver@v0.37.0/pkg/storage/cacher/store/store_btree.go:143-272,
// and `storeSnapshotter`, k8s.io/apiserver@v0.37.0/pkg/storage/cacher/store/store_btree.go:432-519),
// on github.com/google/btree (upstream imports a fork of it,
// k8s.io/utils/third_party/forked/golang/btree), of the same degree
// (`btreeDegree`, 16, k8s.io/apiserver@v0.37.0/pkg/storage/cacher/store/store.go:58).
//
// A snapshot is `Clone` of the B-tree: O(1), since the two trees share
// their nodes and each copies a node before it changes it
// (copy-on-write). So the store can take one snapshot per event, and a
// reader can walk a snapshot while the store goes on changing.
//
// Left out: upstream's `threadedStoreIndexer` wrapper
// (k8s.io/apiserver@v0.37.0/pkg/storage/cacher/store/store_btree.go:40-44),
// which adds a lock and the indexes. Our btreeStore has no lock of its own:
// the watchCache's lock guards it (written under the write lock, read
// under the read lock), and a snapshot needs none.

import (
	"strings"
	"sync"

	"github.com/google/btree"
)

// btreeDegree is upstream's, chosen there by benchmark.
const btreeDegree = 16

type btreeStore struct {
	tree *btree.BTreeG[*Element]
}

var _ Snapshot = (*btreeStore)(nil)

func newBtreeStore(degree int) *btreeStore {
	return &btreeStore{tree: btree.NewG(degree, func(a, b *Element) bool { return a.Key < b.Key })}
}

// Clone returns an immutable snapshot of the store, in O(1). It must not be
// called concurrently with a write.
func (s *btreeStore) Clone() Snapshot {
	return &btreeStore{tree: s.tree.Clone()}
}

func (s *btreeStore) addOrUpdateElem(elem *Element) { s.tree.ReplaceOrInsert(elem) }

func (s *btreeStore) deleteElem(elem *Element) { s.tree.Delete(elem) }

// Replace empties the store and fills it with elems.
func (s *btreeStore) Replace(elems []*Element) {
	s.tree.Clear(false)
	for _, e := range elems {
		s.addOrUpdateElem(e)
	}
}

func (s *btreeStore) GetByKey(key string) (interface{}, bool, error) {
	item, ok := s.tree.Get(&Element{Key: key})
	if !ok {
		return nil, false, nil
	}
	return item, true, nil
}

func (s *btreeStore) Len() int { return s.tree.Len() }

// OrderedListPrefix walks the tree from the first key >= prefix (or >=
// continueKey) and stops at the first key outside the prefix: the
// keys come out in order, with no sort.
func (s *btreeStore) OrderedListPrefix(prefix, continueKey string) ([]interface{}, error) {
	start := continueKey
	if start == "" {
		start = prefix
	}
	var result []interface{}
	s.tree.AscendGreaterOrEqual(&Element{Key: start}, func(item *Element) bool {
		if !strings.HasPrefix(item.Key, prefix) {
			return false
		}
		result = append(result, item)
		return true
	})
	return result, nil
}

// Snapshotter keeps the store's snapshots by resourceVersion (upstream:
// `Snapshotter`, k8s.io/apiserver@v0.37.0/pkg/storage/cacher/store/store_btree.go:443-450).
type Snapshotter interface {
	Reset()
	GetLessOrEqual(rv uint64) (Snapshot, bool)
	Latest() (Snapshot, bool)
	Add(rv uint64, s *btreeStore)
	RemoveLess(rv uint64)
	Len() int
}

// NewSnapshotter returns an empty Snapshotter.
func NewSnapshotter() Snapshotter {
	return &storeSnapshotter{
		snapshots: btree.NewG(btreeDegree, func(a, b rvSnapshot) bool { return a.resourceVersion < b.resourceVersion }),
	}
}

type storeSnapshotter struct {
	mux       sync.RWMutex
	snapshots *btree.BTreeG[rvSnapshot]
}

type rvSnapshot struct {
	resourceVersion uint64
	snapshot        Snapshot
}

func (s *storeSnapshotter) Reset() {
	s.mux.Lock()
	defer s.mux.Unlock()
	s.snapshots.Clear(false)
}

// GetLessOrEqual returns the newest snapshot at or before rv: the store as
// it was at rv.
func (s *storeSnapshotter) GetLessOrEqual(rv uint64) (Snapshot, bool) {
	s.mux.RLock()
	defer s.mux.RUnlock()
	var result Snapshot
	s.snapshots.DescendLessOrEqual(rvSnapshot{resourceVersion: rv}, func(r rvSnapshot) bool {
		result = r.snapshot
		return false
	})
	return result, result != nil
}

// Latest returns the newest snapshot.
func (s *storeSnapshotter) Latest() (Snapshot, bool) {
	s.mux.RLock()
	defer s.mux.RUnlock()
	newest, ok := s.snapshots.Max()
	return newest.snapshot, ok
}

// Add takes a snapshot of the store at rv.
func (s *storeSnapshotter) Add(rv uint64, store *btreeStore) {
	s.mux.Lock()
	defer s.mux.Unlock()
	s.snapshots.ReplaceOrInsert(rvSnapshot{resourceVersion: rv, snapshot: store.Clone()})
}

// RemoveLess drops the snapshots older than rv.
func (s *storeSnapshotter) RemoveLess(rv uint64) {
	s.mux.Lock()
	defer s.mux.Unlock()
	for {
		oldest, ok := s.snapshots.Min()
		if !ok || oldest.resourceVersion >= rv {
			return
		}
		s.snapshots.DeleteMin()
	}
}

func (s *storeSnapshotter) Len() int {
	s.mux.RLock()
	defer s.mux.RUnlock()
	return s.snapshots.Len()
}

// orderedListSnapshot is a list already in key order, copied from the live
// store (upstream: the same `orderedListSnapshot`,
// k8s.io/apiserver@v0.37.0/pkg/storage/cacher/store/watch_cache_storage.go:127-145).
type orderedListSnapshot struct {
	Items []interface{}
}

var _ Snapshot = orderedListSnapshot{}

func (o orderedListSnapshot) GetByKey(key string) (interface{}, bool, error) {
	for _, item := range o.Items {
		if elem, ok := item.(*Element); ok && elem.Key == key {
			return item, true, nil
		}
	}
	return nil, false, nil
}

func (o orderedListSnapshot) OrderedListPrefix(prefix, continueKey string) ([]interface{}, error) {
	return o.Items, nil
}
