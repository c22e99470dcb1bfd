// Upstream: k8s.io/client-go@v0.37.0/tools/cache/delta_fifo.go (DeltaType,
// Delta, Deltas, DeletedFinalStateUnknown) and the_real_fifo.go
// (ReplacedAllInfo, BookmarkInfo).
//
// Left out: SyncAllInfo (our SyncAll delta has a nil Object),
// Deltas.Oldest/Newest helpers beyond what we use, and the
// copyDeltas defensive copy (our queues never hand out a slice they keep).

package informer

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/cache"
)

// DeltaType says what happened to an object.
type DeltaType string

const (
	// Added, Updated and Deleted come from watch events.
	Added   DeltaType = "Added"
	Updated DeltaType = "Updated"
	Deleted DeltaType = "Deleted"
	// Replaced is one object of a relist in a DeltaFIFO, which cannot tell
	// whether the object changed.
	Replaced DeltaType = "Replaced"
	// Sync is one object of a periodic resync in a DeltaFIFO.
	Sync DeltaType = "Sync"
	// ReplacedAll is a whole relist in a RealFIFO, queued as one item
	// (AtomicFIFO); its Object is a ReplacedAllInfo.
	ReplacedAll DeltaType = "ReplacedAll"
	// SyncAll is a whole resync in a RealFIFO, as one item; Object is nil.
	SyncAll DeltaType = "SyncAll"
	// Bookmark carries a watch bookmark's resourceVersion through a
	// RealFIFO to the cache; Object is a BookmarkInfo.
	Bookmark DeltaType = "Bookmark"
)

// Delta is one change: its type and the object after it (for Deleted, the
// last state known, or a DeletedFinalStateUnknown).
type Delta struct {
	Type   DeltaType
	Object any
}

// Deltas is every change to one object, oldest first.
type Deltas []Delta

// Newest is the last Delta, or nil.
func (d Deltas) Newest() *Delta {
	if len(d) == 0 {
		return nil
	}
	return &d[len(d)-1]
}

// ReplacedAllInfo is the content of a relist: every object and the list's
// resourceVersion.
type ReplacedAllInfo struct {
	ResourceVersion string
	Objects         []any
}

// BookmarkInfo is the resourceVersion of a watch bookmark.
type BookmarkInfo struct {
	ResourceVersion string
}

// DeletedFinalStateUnknown is client-go's own tombstone type, not a copy: a
// handler written for client-go checks for cache.DeletedFinalStateUnknown,
// and must find it here too. It is what OnDelete receives for an object that
// vanished while we were not watching (found missing by a relist): Obj is
// the last state we knew, which may be stale.
type DeletedFinalStateUnknown = cache.DeletedFinalStateUnknown

// MetaNamespaceKey is the cache key of an object: "namespace/name", or
// "name" for a cluster-scoped one; a tombstone's key is the key it carries.
// Upstream: cache.DeletionHandlingMetaNamespaceKeyFunc.
func MetaNamespaceKey(obj any) (string, error) {
	if d, ok := obj.(DeletedFinalStateUnknown); ok {
		return d.Key, nil
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return "", fmt.Errorf("object has no meta: %w", err)
	}
	if ns := m.GetNamespace(); ns != "" {
		return ns + "/" + m.GetName(), nil
	}
	return m.GetName(), nil
}

// TransformFunc rewrites an object before it enters the queue (and so the
// cache and the handlers), e.g. to drop fields nobody reads. Write it to be
// idempotent: upstream applies it twice to an object of a streaming list,
// in the Reflector's temporary store (`WithTransformer`:
// k8s.io/client-go@v0.37.0/tools/cache/reflector.go:832-836), then in the
// FIFO (`addReplaceToItemsLocked`: k8s.io/client-go@v0.37.0/tools/cache/the_real_fifo.go:295-308);
// ours applies it once. Upstream: cache.TransformFunc.
type TransformFunc func(obj any) (any, error)

// StripManagedFields is a TransformFunc that drops metadata.managedFields,
// often the largest part of a small object and read by no controller.
// Upstream leaves writing it to the user (`WithTransform`:
// k8s.io/client-go@v0.37.0/informers/factory.go:108).
func StripManagedFields(obj any) (any, error) {
	if m, err := meta.Accessor(obj); err == nil {
		m.SetManagedFields(nil)
	}
	return obj, nil
}

// ErrFIFOClosed is returned by Pop and PopBatch after Close.
var ErrFIFOClosed = fmt.Errorf("FIFO is closed")
