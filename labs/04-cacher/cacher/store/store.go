// Package store holds the watch cache's current objects: an ordered store
// (a B-tree keyed by object key), its immutable snapshots, and the
// WatchCacheStorage that wraps them for the watchCache.
//
// Upstream twin: k8s.io/apiserver@v0.37.0/pkg/storage/cacher/store/store.go
// (the `Snapshot` interface and the `Element` type,
// k8s.io/apiserver@v0.37.0/pkg/storage/cacher/store/store.go:76-95).
//
// Left out: the `Indexer` interface's indexes (`ByIndex`) and `Count`.
// Upstream keeps one index per IndexerFunc (spec.nodeName for pods), so
// that a LIST with `fieldSelector=spec.nodeName=X` reads only that node's
// pods; ours reads the whole snapshot and filters. Our store has no
// interface of its own: one type, `btreeStore` (store_btree.go).
package store

import (
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
)

// Snapshot is a read-only view of the store: the live store (read under
// the watchCache's lock) or an immutable copy (read with no lock at all).
type Snapshot interface {
	// GetByKey returns the *Element with that key.
	GetByKey(key string) (item interface{}, exists bool, err error)
	// OrderedListPrefix returns the *Elements whose key starts with
	// prefix, in key order, after continueKey if it is not "".
	OrderedListPrefix(prefix, continueKey string) ([]interface{}, error)
}

// Element is one current object with what a watcher or a LIST needs to
// filter it without looking into it: its key, labels and fields, computed
// once when the object enters the cache.
type Element struct {
	Key    string
	Object runtime.Object
	Labels labels.Set
	Fields fields.Set
}
