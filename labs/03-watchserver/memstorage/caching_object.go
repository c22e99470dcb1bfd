// Upstream: k8s.io/apiserver@v0.37.0/pkg/storage/cacher/caching_object.go
// (cachingObject: a runtime.Object that remembers its serializations, one per
// encoder identifier, so the WatchServers of N watchers encode an event once).
//
// Ours keeps the idea and the contract of runtime.CacheableObject (encode a
// deep copy on a miss, write the cached bytes on a hit) and leaves out what the
// cacher needs it for beyond watching: the metav1.Object accessors that update
// the wrapped object in place and invalidate the cache. Our wrapped object is
// never modified after the event is built, so there is nothing to invalidate.

package memstorage

import (
	"bytes"
	"io"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// cachingObject wraps the object of one watch event. Every watcher of the
// event gets the same *cachingObject, so the first WatchServer to encode it
// for a given encoder (JSON, a Table encoder, ...) pays, and the others copy
// bytes.
type cachingObject struct {
	object runtime.Object // never modified once wrapped

	mu sync.Mutex // guards serializations (the map, not the entries)
	// serializations holds one entry per encoder identifier; an entry is
	// filled once, by whichever watcher gets there first.
	serializations map[runtime.Identifier]*serialization
}

type serialization struct {
	once sync.Once
	raw  []byte
	err  error
}

var _ runtime.CacheableObject = &cachingObject{}

func newCachingObject(obj runtime.Object) *cachingObject {
	return &cachingObject{object: obj, serializations: map[runtime.Identifier]*serialization{}}
}

// CacheEncode writes the serialization for id, encoding it on the first call.
// As the runtime.CacheableObject contract asks, encode gets a deep copy: an
// encoder may set apiVersion/kind on what it is given.
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
		s.err = encode(o.object.DeepCopyObject(), &buf)
		s.raw = buf.Bytes()
	})
	if s.err != nil {
		return s.err
	}
	_, err := w.Write(s.raw)
	return err
}

// GetObject returns a deep copy of the wrapped object: the caller owns it.
func (o *cachingObject) GetObject() runtime.Object { return o.object.DeepCopyObject() }

// GetObjectKind reports the wrapped object's kind. Nobody may set it: the
// object is shared by every watcher of the event.
func (o *cachingObject) GetObjectKind() schema.ObjectKind { return o.object.GetObjectKind() }

// DeepCopyObject copies the object; the copy starts with an empty cache.
func (o *cachingObject) DeepCopyObject() runtime.Object {
	return newCachingObject(o.object.DeepCopyObject())
}
