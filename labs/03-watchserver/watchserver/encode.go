// Upstream: k8s.io/apiserver@v0.37.0/pkg/endpoints/handlers/response.go
// (newWatchEncoder and watchEncoder.Encode: encode the event's object with
// the embedded encoder, wrap it in {"type":..,"object":..}, write it through
// the framer; and, when the object is a runtime.CacheableObject, let the
// object cache the whole frame under an identifier that names the encoders
// and the event type: `CacheEncode`, k8s.io/apiserver@v0.37.0/pkg/endpoints/handlers/response.go:173-181).
//
// That last step is what makes "encode once" work: the storage hands every
// watcher of one change the same object (upstream's cacher wraps it in a
// cachingObject, pkg/storage/cacher/caching_object.go; lab 03's memstorage
// does the same), the first WatchServer to write it encodes, the others copy
// the cached bytes. We frame JSON only: one newline-terminated line per event.

package watchserver

import (
	"bytes"
	"encoding/json"
	"io"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// watchEncoder writes the frames of one watch. It is not shared between
// watches: its buffers are reused from one event to the next.
type watchEncoder struct {
	embedded runtime.Encoder // encodes the event's object
	perType  map[watch.EventType]*typeEncoder
	object   bytes.Buffer // the encoded object
	frame    bytes.Buffer // the frame around it
}

// typeEncoder is what CacheEncode needs for one event type: the
// identifier of the frame and the function that makes it. Both are built
// once per watch, not once per event.
type typeEncoder struct {
	id     runtime.Identifier
	encode func(runtime.Object, io.Writer) error
}

func newWatchEncoder(embedded runtime.Encoder) *watchEncoder {
	return &watchEncoder{embedded: embedded, perType: map[watch.EventType]*typeEncoder{}}
}

// Encode writes one event as a frame: {"type":"ADDED","object":{...}}\n.
func (e *watchEncoder) Encode(ev watch.Event, w io.Writer) error {
	te := e.forType(ev.Type)
	if co, ok := ev.Object.(runtime.CacheableObject); ok {
		return co.CacheEncode(te.id, te.encode, w)
	}
	return te.encode(ev.Object, w)
}

// forType returns the encoder for one event type. The identifier names what
// a cached frame depends on: the object encoder and the event type (the same
// object may be sent as ADDED to one watcher and MODIFIED to another).
func (e *watchEncoder) forType(typ watch.EventType) *typeEncoder {
	te, ok := e.perType[typ]
	if !ok {
		te = &typeEncoder{
			id:     runtime.Identifier("watch;encoder=" + string(e.embedded.Identifier()) + ";type=" + string(typ)),
			encode: func(obj runtime.Object, w io.Writer) error { return e.doEncode(typ, obj, w) },
		}
		e.perType[typ] = te
	}
	return te
}

// doEncode builds the frame by hand rather than marshalling a
// metav1.WatchEvent: the object's bytes are already JSON, and the event
// type is one of watch's fixed, quote-free names, so there is nothing to
// escape and no reason to scan the object's bytes a second time.
func (e *watchEncoder) doEncode(typ watch.EventType, obj runtime.Object, w io.Writer) error {
	e.object.Reset()
	if err := e.embedded.Encode(obj, &e.object); err != nil {
		return err
	}
	e.frame.Reset()
	e.frame.WriteString(`{"type":"`)
	e.frame.WriteString(string(typ))
	e.frame.WriteString(`","object":`)
	e.frame.Write(bytes.TrimSuffix(e.object.Bytes(), []byte("\n")))
	e.frame.WriteString("}\n")
	_, err := w.Write(e.frame.Bytes())
	return err
}

// JSONEncoder is the object encoder the lab's API server uses: plain JSON,
// with apiVersion and kind filled in from Typer when the object lacks them
// (as upstream's versioning encoder does; a Status or a bookmark object from
// a storage often has no kind). It never modifies the object it is given,
// which may be shared with other watchers: it sets the kind on a copy.
type JSONEncoder struct {
	Typer runtime.ObjectTyper
}

func (e JSONEncoder) Encode(obj runtime.Object, w io.Writer) error {
	if obj.GetObjectKind().GroupVersionKind().Empty() && e.Typer != nil {
		if kinds, _, err := e.Typer.ObjectKinds(obj); err == nil && len(kinds) > 0 {
			obj = obj.DeepCopyObject()
			obj.GetObjectKind().SetGroupVersionKind(kinds[0])
		}
	}
	return json.NewEncoder(w).Encode(obj)
}

func (JSONEncoder) Identifier() runtime.Identifier { return "lab03-json" }
