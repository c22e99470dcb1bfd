// Upstream: k8s.io/apiserver@v0.36.4/pkg/storage/cacher/caching_object.go
// (cachingObject: an object that remembers its serialization per encoder) and
// pkg/endpoints/handlers/watch.go + watch_encoder.go (newWatchEncoder, which
// writes {"type":..,"object":..} through a Framer).
//
// Upstream keeps the object and caches its bytes lazily, once per encoder
// (JSON, protobuf, CBOR, each group version). We serve one media type,
// application/json, so an event carries its finished frame: the
// newline-terminated {"type":..,"object":..} line, built once when the store
// records the change and then written as is to every watcher.

package watchserver

import (
	"encoding/json"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// Event is one watch event with its wire bytes.
//
// Frame is immutable once the Event is built: many watchers hold the same
// *Event and write the same Frame slice concurrently, which is the whole
// point (encode once, however many watchers). Object is kept for filtering
// (label and field selectors) and for tests; it must not be modified either.
type Event struct {
	Type   watch.EventType
	Object *corev1.ConfigMap // nil for ERROR events
	// Prev is the object before a MODIFIED or DELETED change, so a watcher
	// whose selector matched before but not after can be told DELETED.
	Prev  *corev1.ConfigMap
	RV    uint64
	Frame []byte
}

// encodeFrame builds one newline-delimited JSON frame around an object's
// encoded bytes: {"type":"ADDED","object":{...}}\n, the shape of
// metav1.WatchEvent. It is the only place a frame is made. The object's
// bytes are copied in as they are: they came from json.Marshal, so they are
// valid JSON, and the event type is one of watch's fixed, quote-free names.
// (Marshalling a struct with a json.RawMessage would re-scan and copy them.)
func encodeFrame(typ watch.EventType, object []byte) []byte {
	const head, mid, tail = `{"type":"`, `","object":`, "}\n"
	frame := make([]byte, 0, len(head)+len(typ)+len(mid)+len(object)+len(tail))
	frame = append(frame, head...)
	frame = append(frame, typ...)
	frame = append(frame, mid...)
	frame = append(frame, object...)
	return append(frame, tail...)
}

// encodeObject is the JSON encoding of any API object.
func encodeObject(obj any) []byte {
	b, err := json.Marshal(obj)
	if err != nil {
		panic("watchserver: cannot encode " + err.Error())
	}
	return b
}

// NewEvent encodes obj once and returns the event every watcher will share.
func NewEvent(typ watch.EventType, obj, prev *corev1.ConfigMap, rv uint64) *Event {
	return &Event{Type: typ, Object: obj, Prev: prev, RV: rv, Frame: encodeFrame(typ, encodeObject(obj))}
}

// ErrorEvent is the ERROR event that carries a Status inside a 200 stream,
// e.g. 410 Expired for a resourceVersion older than the history.
func ErrorEvent(status *metav1.Status) *Event {
	s := *status
	s.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
	return &Event{Type: watch.Error, Frame: encodeFrame(watch.Error, encodeObject(&s))}
}

// bookmarkObject is what a BOOKMARK carries: an object of the watched kind
// with only metadata.resourceVersion (and, for the end of the initial
// events, the k8s.io/initial-events-end annotation) set.
func bookmarkEvent(rv uint64, initialEventsEnd bool) *Event {
	cm := &corev1.ConfigMap{TypeMeta: configMapType}
	cm.ResourceVersion = formatRV(rv)
	if initialEventsEnd {
		cm.Annotations = map[string]string{metav1.InitialEventsAnnotationKey: "true"}
	}
	return &Event{Type: watch.Bookmark, RV: rv, Frame: encodeFrame(watch.Bookmark, encodeObject(cm))}
}
