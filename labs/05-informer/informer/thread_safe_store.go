// Upstream: k8s.io/client-go@v0.37.0/tools/cache/thread_safe_store.go
// (threadSafeMap, storeIndex.updateIndices) and store.go/index.go (the
// Indexer interface: an Indexer is a Store keyed by MetaNamespaceKey).
//
// Left out: Index(name, obj) and GetIndexers, metrics, and the split between
// Store (keys computed from objects) and ThreadSafeStore (keys given): ours
// computes keys itself. Where ours differs, our choice: an index function
// that fails leaves the store unchanged and returns the error, where
// upstream's `updateSingleIndex` panics
// (k8s.io/client-go@v0.37.0/tools/cache/thread_safe_store.go:174-197).

package informer

import (
	"fmt"
	"sort"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/sets"
)

// IndexFunc returns the values an object is indexed under (none, one or
// several). Upstream: cache.IndexFunc, the same signature, so upstream's
// cache.MetaNamespaceIndexFunc can be used here as it is.
type IndexFunc func(obj any) ([]string, error)

// Indexers names the index functions: index name -> IndexFunc.
type Indexers map[string]IndexFunc

// index maps an indexed value to the keys of the objects indexed under it.
// A value whose set becomes empty is deleted: a stale entry would make
// ListIndexFuncValues report values no object has.
type index map[string]sets.Set[string]

// Indexer is the informer's cache: objects by key, plus one index per
// IndexFunc, kept exact under Add, Update, Delete and Replace.
//
// Invariant (checked by TestIndexerProperty over random operations): for
// every index name and value v, indices[name][v] is exactly the set of keys
// whose current object's IndexFunc returns v; no value maps to an empty set.
type Indexer struct {
	// lock guards items, indexers, indices and rv. Readers (Listers, the
	// handlers) take it shared; the informer's single writer takes it alone.
	lock     sync.RWMutex
	items    map[string]any
	indexers Indexers
	indices  map[string]index
	// rv is the resourceVersion of the newest change applied (an object's,
	// a list's or a bookmark's). Upstream keeps it under the AtomicFIFO
	// gate, not InformerResourceVersion:
	// `threadSafeMap.LastStoreSyncResourceVersion` returns "" unless
	// AtomicFIFO is on (k8s.io/client-go@v0.37.0/tools/cache/thread_safe_store.go:435-444).
	rv string
}

// NewIndexer returns an empty Indexer with indexers.
func NewIndexer(indexers Indexers) *Indexer {
	c := &Indexer{items: map[string]any{}, indexers: Indexers{}, indices: map[string]index{}}
	for name, f := range indexers {
		c.indexers[name] = f
		c.indices[name] = index{}
	}
	return c
}

// indexValues computes every index value of obj (nil obj: none), before any
// change is made, so a failing IndexFunc leaves the store as it was.
func (c *Indexer) indexValues(obj any) (map[string][]string, error) {
	if obj == nil {
		return nil, nil
	}
	values := make(map[string][]string, len(c.indexers))
	for name, f := range c.indexers {
		v, err := f(obj)
		if err != nil {
			return nil, fmt.Errorf("index %q: %w", name, err)
		}
		values[name] = v
	}
	return values, nil
}

// setLocked stores obj under key (obj nil: removes key), moving key from the
// index values of the old object to those of the new one.
func (c *Indexer) setLocked(key string, obj any) error {
	newValues, err := c.indexValues(obj)
	if err != nil {
		return err
	}
	old, existed := c.items[key]
	var oldValues map[string][]string
	if existed {
		// The old object was indexed without error when it came in.
		oldValues, _ = c.indexValues(old)
	}
	for name := range c.indexers {
		idx := c.indices[name]
		for _, v := range oldValues[name] {
			deleteKeyFromIndex(idx, v, key) // index_delete.go
		}
		for _, v := range newValues[name] {
			set := idx[v]
			if set == nil {
				set = sets.New[string]()
				idx[v] = set
			}
			set.Insert(key)
		}
	}
	if obj == nil {
		delete(c.items, key)
	} else {
		c.items[key] = obj
	}
	return nil
}

func (c *Indexer) noteRVLocked(obj any) {
	if m, err := meta.Accessor(obj); err == nil && m.GetResourceVersion() != "" {
		c.rv = m.GetResourceVersion()
	}
}

// Add stores obj (replacing what was under its key).
func (c *Indexer) Add(obj any) error { return c.Update(obj) }

// Update stores obj under its key.
func (c *Indexer) Update(obj any) error {
	key, err := MetaNamespaceKey(obj)
	if err != nil {
		return err
	}
	c.lock.Lock()
	defer c.lock.Unlock()
	if err := c.setLocked(key, obj); err != nil {
		return err
	}
	c.noteRVLocked(obj)
	return nil
}

// Delete removes obj's key (obj may be a DeletedFinalStateUnknown).
func (c *Indexer) Delete(obj any) error {
	key, err := MetaNamespaceKey(obj)
	if err != nil {
		return err
	}
	c.lock.Lock()
	defer c.lock.Unlock()
	if err := c.setLocked(key, nil); err != nil {
		return err
	}
	if _, tombstone := obj.(DeletedFinalStateUnknown); !tombstone {
		c.noteRVLocked(obj)
	}
	return nil
}

// storeOp is one change of a batch: obj under key, or key removed (delete).
type storeOp struct {
	key    string
	obj    any
	delete bool
}

// apply makes a batch of changes under one lock, so a Lister never sees
// half a batch while it is applied (upstream: threadSafeMap.Transaction).
// A RealFIFO batch's keys are distinct (PopBatch guarantees it); a
// DeltaFIFO's Deltas are all one key's, applied in order. It stops
// at the first error: the changes before it stay applied, and the informer
// then drops the batch's notifications (handleBatch).
func (c *Indexer) apply(ops []storeOp) error {
	c.lock.Lock()
	defer c.lock.Unlock()
	for _, op := range ops {
		obj := op.obj
		if op.delete {
			obj = nil
		}
		if err := c.setLocked(op.key, obj); err != nil {
			return err
		}
		if _, tombstone := op.obj.(DeletedFinalStateUnknown); !tombstone {
			c.noteRVLocked(op.obj)
		}
	}
	return nil
}

// Replace makes objs the whole content, rebuilding every index.
func (c *Indexer) Replace(objs []any, resourceVersion string) error {
	items := make(map[string]any, len(objs))
	for _, obj := range objs {
		key, err := MetaNamespaceKey(obj)
		if err != nil {
			return err
		}
		items[key] = obj
	}
	c.lock.Lock()
	defer c.lock.Unlock()
	indices := make(map[string]index, len(c.indexers))
	for name := range c.indexers {
		indices[name] = index{}
	}
	for key, obj := range items {
		values, err := c.indexValues(obj)
		if err != nil {
			return err
		}
		for name, vs := range values {
			for _, v := range vs {
				if indices[name][v] == nil {
					indices[name][v] = sets.New[string]()
				}
				indices[name][v].Insert(key)
			}
		}
	}
	c.items, c.indices, c.rv = items, indices, resourceVersion
	return nil
}

// Bookmark records a bookmark's resourceVersion.
func (c *Indexer) Bookmark(resourceVersion string) {
	c.lock.Lock()
	defer c.lock.Unlock()
	c.rv = resourceVersion
}

// LastStoreSyncResourceVersion is the resourceVersion of the newest change
// applied: the cache is at least this fresh.
func (c *Indexer) LastStoreSyncResourceVersion() string {
	c.lock.RLock()
	defer c.lock.RUnlock()
	return c.rv
}

// Get returns the object stored under obj's key.
func (c *Indexer) Get(obj any) (any, bool, error) {
	key, err := MetaNamespaceKey(obj)
	if err != nil {
		return nil, false, err
	}
	return c.GetByKey(key)
}

// GetByKey returns the object stored under key.
func (c *Indexer) GetByKey(key string) (any, bool, error) {
	c.lock.RLock()
	defer c.lock.RUnlock()
	obj, ok := c.items[key]
	return obj, ok, nil
}

// List returns every object, sorted by key (upstream: map order).
func (c *Indexer) List() []any {
	c.lock.RLock()
	defer c.lock.RUnlock()
	keys := make([]string, 0, len(c.items))
	for k := range c.items {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]any, len(keys))
	for i, k := range keys {
		out[i] = c.items[k]
	}
	return out
}

// ListKeys returns every key, sorted.
func (c *Indexer) ListKeys() []string {
	c.lock.RLock()
	defer c.lock.RUnlock()
	keys := make([]string, 0, len(c.items))
	for k := range c.items {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// ByIndex returns the objects indexed under value in the index name, sorted
// by key.
func (c *Indexer) ByIndex(name, value string) ([]any, error) {
	c.lock.RLock()
	defer c.lock.RUnlock()
	idx, ok := c.indices[name]
	if !ok {
		return nil, fmt.Errorf("index with name %s does not exist", name)
	}
	keys := sets.List(idx[value])
	out := make([]any, len(keys))
	for i, k := range keys {
		out[i] = c.items[k]
	}
	return out, nil
}

// IndexKeys returns the keys indexed under value in the index name, sorted.
func (c *Indexer) IndexKeys(name, value string) ([]string, error) {
	c.lock.RLock()
	defer c.lock.RUnlock()
	idx, ok := c.indices[name]
	if !ok {
		return nil, fmt.Errorf("index with name %s does not exist", name)
	}
	return sets.List(idx[value]), nil
}

// ListIndexFuncValues returns every value of the index name that at least
// one object has, sorted.
func (c *Indexer) ListIndexFuncValues(name string) []string {
	c.lock.RLock()
	defer c.lock.RUnlock()
	values := make([]string, 0, len(c.indices[name]))
	for v := range c.indices[name] {
		values = append(values, v)
	}
	sort.Strings(values)
	return values
}

// AddIndexers adds index functions and indexes the objects already stored,
// as upstream's `threadSafeMap.AddIndexers` does
// (k8s.io/client-go@v0.37.0/tools/cache/thread_safe_store.go:502-518);
// upstream's informer refuses only once it has `stopped`
// (k8s.io/client-go@v0.37.0/tools/cache/shared_informer.go:959-968). A learner adding an index to a running informer
// sees it filled at once.
func (c *Indexer) AddIndexers(indexers Indexers) error {
	c.lock.Lock()
	defer c.lock.Unlock()
	for name := range indexers {
		if _, dup := c.indexers[name]; dup {
			return fmt.Errorf("indexer conflict: %v", name)
		}
	}
	for name, f := range indexers {
		idx := index{}
		for key, obj := range c.items {
			vs, err := f(obj)
			if err != nil {
				return fmt.Errorf("index %q: %w", name, err)
			}
			for _, v := range vs {
				if idx[v] == nil {
					idx[v] = sets.New[string]()
				}
				idx[v].Insert(key)
			}
		}
		c.indexers[name] = f
		c.indices[name] = idx
	}
	return nil
}
