package cacher

// cachingObject: encode an event once for all its watchers.
//
// Upstream twin: the `cachingObject` type of
// k8s.io/apiserver@v0.37.0/pkg/storage/cacher/caching_object.go:64-84,
// created per dispatched event by `setCachingObjects`
// (k8s.io/apiserver@v0.37.0/pkg/storage/cacher/cacher.go:965-994).
//
// A watch server encodes each event it sends. With 1,000 watchers of one
// resource, that is 1,000 identical encodings of every event. The dispatcher
// therefore wraps each event's objects in a cachingObject, which implements
// runtime.CacheableObject: an encoder that sees one calls CacheEncode, and
// the first call for a given encoder identifier encodes, the others copy
// the bytes. apimachinery's JSON serializer checks for a `CacheableObject`
// (k8s.io/apimachinery@v0.37.0/pkg/runtime/serializer/json/json.go:220-223),
// and so do the protobuf serializer and the versioning codec
// (`CacheableObject`, k8s.io/apimachinery@v0.37.0/pkg/runtime/serializer/protobuf/protobuf.go:194;
// k8s.io/apimachinery@v0.37.0/pkg/runtime/serializer/versioning/versioning.go:212). Lab 03's watch encoder uses CacheEncode when it
// is available.
//
// Left out: upstream's copy-on-write. Its cachingObject implements every
// metav1.Object setter by copying the object and dropping the cached
// encodings (`conditionalSet`,
// k8s.io/apiserver@v0.37.0/pkg/storage/cacher/caching_object.go:227-246). Ours is read-only: getters read the shared object, and the only
// change the Cacher itself makes (the resourceVersion of a DELETED made from
// a selector change) happens on a DeepCopyObject of the event's plain
// PrevObject (convert.go), never on the shared cachingObject. A consumer that wants to modify the
// object takes GetObject(), a private copy.

import (
	"bytes"
	"fmt"
	"io"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

type cachingObject struct {
	// Object is the wrapped object's metadata, so that meta.Accessor works
	// on a cachingObject. Read only (see above).
	metav1.Object

	object runtime.Object

	mu             sync.Mutex // guards serializations
	serializations map[runtime.Identifier]*serialization
}

// serialization is one encoding of the object, made once.
type serialization struct {
	once sync.Once
	raw  []byte
	err  error
}

var _ runtime.CacheableObject = (*cachingObject)(nil)

func newCachingObject(obj runtime.Object) (*cachingObject, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, fmt.Errorf("cachingObject needs an object with metadata: %w", err)
	}
	return &cachingObject{Object: m, object: obj, serializations: map[runtime.Identifier]*serialization{}}, nil
}

// CacheEncode writes the encoding made by encode for id, encoding it on the
// first call for that id only.
func (o *cachingObject) CacheEncode(id runtime.Identifier, encode func(runtime.Object, io.Writer) error, w io.Writer) error {
	o.mu.Lock()
	s, ok := o.serializations[id]
	if !ok {
		s = &serialization{}
		o.serializations[id] = s
	}
	o.mu.Unlock()
	s.once.Do(func() {
		var buf bytes.Buffer
		// The encoder may set the apiVersion/kind of what it encodes:
		// give it a copy, never the shared object.
		s.err = encode(o.object.DeepCopyObject(), &buf)
		s.raw = buf.Bytes()
	})
	if s.err != nil {
		return s.err
	}
	_, err := w.Write(s.raw)
	return err
}

// GetObject returns a private copy of the wrapped object.
func (o *cachingObject) GetObject() runtime.Object { return o.object.DeepCopyObject() }

// GetObjectKind reports the wrapped object's kind.
func (o *cachingObject) GetObjectKind() schema.ObjectKind { return o.object.GetObjectKind() }

// DeepCopyObject returns a new cachingObject over a copy, with an empty cache.
func (o *cachingObject) DeepCopyObject() runtime.Object {
	c, _ := newCachingObject(o.object.DeepCopyObject())
	return c
}

// setCachingObjects returns a copy of ev whose delivered object is wrapped,
// for one dispatch: Object for ADDED, MODIFIED and DELETED (for a deletion,
// Object is the last state, which our etcd3 store has stamped with the
// deletion's RV, and which is what a watcher is sent). PrevObject stays
// plain: it is sent only in the rare DELETED made from a selector change,
// which copies it anyway. The ring keeps the plain event, so encodings live
// only as long as the dispatch.
//
// Upstream wraps the same objects for ADDED and MODIFIED, and leaves
// PrevObject of an update plain for the same reason; for a deletion it
// wraps PrevObject instead, stamped with the deletion's RV, and never
// Object (`setCachingObjects`,
// k8s.io/apiserver@v0.37.0/pkg/storage/cacher/cacher.go:965-994), because
// its `convertToWatchEvent` sends PrevObject for a deletion
// (k8s.io/apiserver@v0.37.0/pkg/storage/cacher/cache_watcher.go:373-412).
// The content is the same; ours sends Object, which spares the stamping.
func setCachingObjects(ev *watchCacheEvent) *watchCacheEvent {
	co, err := newCachingObject(ev.Object)
	if err != nil {
		return ev
	}
	wrapped := *ev
	wrapped.Object = co
	return &wrapped
}
