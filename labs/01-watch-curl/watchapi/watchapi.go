// Package watchapi is lab 01's lesson package (the lesson is
// labs/01-watch-curl/README.md): the client half of the watch API, rebuilt by
// hand.
//
// It reads a Kubernetes watch stream with nothing but net/http
// and encoding/json: the same bytes curl shows, decoded one event at a time.
// It needs no client-go: the caller hands it an *http.Client that carries the
// TLS settings and the bearer token (cmd/watch builds one from a kubeconfig,
// in internal/watchcmd).
//
// Upstream counterparts, at Kubernetes v1.37.0:
//   - k8s.io/apimachinery@v0.37.0/pkg/apis/meta/v1/watch.go, type WatchEvent:
//     the wire form of one event, {"type": ..., "object": ...}.
//   - k8s.io/client-go@v0.37.0/rest/watch/decoder.go, Decoder.Decode: turns
//     frames into (type, object) pairs. An ERROR frame is no exception:
//     `Decoder.Decode` returns (watch.Error, *metav1.Status, nil)
//     (k8s.io/client-go@v0.37.0/rest/watch/decoder.go:47-66), and it is the
//     consumer that makes an error of the Status (the Reflector calls
//     `apierrors.FromObject`, k8s.io/client-go@v0.37.0/tools/cache/reflector.go:1010-1011). Our Next does the
//     same: an ERROR is an event, and WatchEvent.Status decodes its Status.
//   - k8s.io/apimachinery@v0.37.0/pkg/util/framer/framer.go, NewJSONFramedReader:
//     splits the body into JSON values.
//
// Left out: protobuf and CBOR (client-go can ask for protobuf with an Accept
// header; CBOR is alpha and off by default at v1.37; curl and we get JSON),
// decoding objects into typed Go structs (we keep the raw JSON), and the
// retry and resume logic of lab 02.
package watchapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// Event types, as the apiserver writes them (k8s.io/apimachinery/pkg/watch).
const (
	Added    = "ADDED"
	Modified = "MODIFIED"
	Deleted  = "DELETED"
	Bookmark = "BOOKMARK"
	Error    = "ERROR"
)

// WatchEvent is one frame of a JSON watch stream. Object stays raw: a lesson
// about the wire should show the wire.
type WatchEvent struct {
	Type   string          `json:"type"`
	Object json.RawMessage `json:"object"`
}

// Meta is the part of an object every event line prints.
type Meta struct {
	Kind     string `json:"kind"`
	Metadata struct {
		Name            string            `json:"name"`
		Namespace       string            `json:"namespace"`
		ResourceVersion string            `json:"resourceVersion"`
		Annotations     map[string]string `json:"annotations"`
	} `json:"metadata"`
}

// Status is the error the apiserver sends in an ERROR event (metav1.Status).
type Status struct {
	Status  string `json:"status"`
	Message string `json:"message"`
	Reason  string `json:"reason"`
	Code    int    `json:"code"`
}

func (s *Status) Error() string {
	return fmt.Sprintf("%s (%d %s)", s.Message, s.Code, s.Reason)
}

// Options are the query parameters of a watch, named as in metav1.ListOptions.
type Options struct {
	ResourceVersion     string
	AllowWatchBookmarks bool
	TimeoutSeconds      int
	LabelSelector       string
	FieldSelector       string
}

// URL is the watch URL of a core/v1 resource collection in a namespace:
// SERVER/api/v1/namespaces/NAMESPACE/RESOURCE?watch=1&...
func URL(server, namespace, resource string, o Options) string {
	return fmt.Sprintf("%s/api/v1/namespaces/%s/%s?%s",
		strings.TrimSuffix(server, "/"), url.PathEscape(namespace), url.PathEscape(resource), o.Query())
}

// HTTPError is a watch the apiserver refused before any stream started (bad
// parameters, no permission): a plain HTTP error whose body is a Status.
type HTTPError struct {
	Code int
	Body string
}

func (e *HTTPError) Error() string { return fmt.Sprintf("HTTP %d: %s", e.Code, e.Body) }

// Open sends the watch GET with client (which carries the TLS settings and
// the bearer token) and returns the response body, still open: the stream.
// The caller closes it; cancelling ctx ends the watch. A refused watch is an
// *HTTPError.
func Open(ctx context.Context, client *http.Client, watchURL string) (io.ReadCloser, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, watchURL, nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	if err := refused(resp); err != nil { // refused.go
		return nil, err
	}
	return resp.Body, nil
}

// Decoder reads events from a watch response body as they arrive.
// json.Decoder reads only as far as the next complete value, so an event is
// returned as soon as its last byte is in; nothing waits for the body to end.
type Decoder struct {
	dec *json.Decoder
}

func NewDecoder(body io.Reader) *Decoder {
	return &Decoder{dec: json.NewDecoder(body)}
}

// ErrCutOff means the stream ended inside an event: the connection broke.
var ErrCutOff = errors.New("watch stream cut off inside an event")

// Next returns the next event. At the clean end of the stream (the server's
// timeout, or it closed the watch) it returns io.EOF. An ERROR event is
// returned as an event; Status turns its object into an error.
func (d *Decoder) Next() (WatchEvent, error) {
	var ev WatchEvent
	if err := d.dec.Decode(&ev); err != nil {
		return ev, streamError(err) // stream_error.go
	}
	if ev.Type == "" || len(ev.Object) == 0 {
		return ev, fmt.Errorf("watch stream: a frame without type or object")
	}
	return ev, nil
}

// Meta decodes the kind and metadata of the event's object.
func (ev WatchEvent) Meta() (Meta, error) {
	var m Meta
	err := json.Unmarshal(ev.Object, &m)
	return m, err
}

// Status decodes the object of an ERROR event.
func (ev WatchEvent) Status() (*Status, error) {
	if ev.Type != Error {
		return nil, fmt.Errorf("a %s event carries no Status", ev.Type)
	}
	var s Status
	if err := json.Unmarshal(ev.Object, &s); err != nil {
		return nil, err
	}
	return &s, nil
}
