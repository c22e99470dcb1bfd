// Upstream: k8s.io/client-go@v0.37.0/rest/watch/decoder.go (Decoder.Decode),
// fed by k8s.io/apimachinery@v0.37.0/pkg/util/framer/framer.go
// (NewJSONFramedReader) and pkg/runtime/serializer/streaming/streaming.go
// (decoder.Decode, which caps a frame at 16 MiB by default: `maxBytes`,
// k8s.io/apimachinery@v0.37.0/pkg/runtime/serializer/streaming/streaming.go:62-67).
//
// Left out: every wire format but JSON, and JSON that is not one compact
// value per line. Upstream's JSON framer runs a json.Decoder over the body,
// so any whitespace layout works; the apiserver writes each watch event as
// one line ending in "\n", so we split on newlines, which lets us decode a
// frame in place without copying it. We also decode the object straight into
// the one kind the watch is about instead of asking a scheme which kind the
// bytes claim to be: a watch is on one resource, so any other kind is an
// error here, where upstream would decode it and let the Reflector complain.

package listwatcher

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
)

// MaxFrameSize is the largest watch event we accept, 16 MiB, the same cap as
// upstream's streaming decoder. etcd refuses values over 1.5 MiB by default,
// so a bigger frame means a broken or hostile stream; without a cap, one
// endless line would grow the buffer until the process dies.
const MaxFrameSize = 16 << 20

// ErrFrameTooLarge is returned (wrapped) for a frame over MaxFrameSize.
var ErrFrameTooLarge = errors.New("watch frame larger than 16 MiB")

// Decoder reads watch events from a stream of newline-delimited JSON, one
// event at a time, as the bytes arrive: it never holds more than one frame.
//
// Each frame must be {"type":T,"object":O} with T one of ADDED, MODIFIED,
// DELETED, BOOKMARK (O is of the watched kind) or ERROR (O is a failure
// Status). Anything else ends the stream with an error that names what was
// wrong; after an error, the Decoder must not be used again.
//
// It implements watch.Decoder (Decode, Close), the interface upstream's
// StreamWatcher consumes. It is not safe for concurrent use.
type Decoder struct {
	r    *bufio.Reader
	body io.Closer // closed by Close, if the reader is one
	kind schema.GroupVersionKind
	// maxFrame is MaxFrameSize; FuzzDecode lowers it so the fuzzer can reach
	// the limit with small inputs.
	maxFrame int
	// frame holds a frame that arrived in more than one read; reused.
	frame []byte
	// event is reused for every frame: json.RawMessage keeps its capacity
	// across Unmarshal calls, so the object bytes are copied, not allocated.
	event struct {
		Type   watch.EventType `json:"type"`
		Object json.RawMessage `json:"object"`
	}
}

// NewDecoder returns a Decoder of the events in r about objects of kind.
func NewDecoder(r io.Reader, kind schema.GroupVersionKind) *Decoder {
	d := &Decoder{r: bufio.NewReaderSize(r, 64<<10), kind: kind, maxFrame: MaxFrameSize}
	if c, ok := r.(io.Closer); ok {
		d.body = c
	}
	return d
}

// Close closes the underlying reader, if it is an io.Closer.
func (d *Decoder) Close() {
	if d.body != nil {
		d.body.Close()
	}
}

// readFrame returns the next non-empty line without its "\n". The slice is
// valid until the next call. At the end of the stream it returns io.EOF, or
// io.ErrUnexpectedEOF if the stream ended in the middle of a frame.
func (d *Decoder) readFrame() ([]byte, error) {
	for {
		line, err := d.r.ReadSlice('\n')
		if err == nil {
			// The common case: the whole frame is in the bufio buffer,
			// decode it from there with no copy.
			if line = bytes.TrimSpace(line); len(line) > 0 {
				return line, nil
			}
			continue
		}
		// The frame is longer than the buffer (or the stream ended):
		// gather it in d.frame, up to MaxFrameSize.
		d.frame = append(d.frame[:0], line...)
		for err == bufio.ErrBufferFull {
			line, err = d.r.ReadSlice('\n')
			if len(d.frame)+len(line) > d.maxFrame+1 { // +1: the "\n"
				return nil, fmt.Errorf("%w: %d bytes and counting; the rest of the stream is not read", ErrFrameTooLarge, len(d.frame)+len(line))
			}
			d.frame = append(d.frame, line...)
		}
		frame := bytes.TrimSpace(d.frame)
		switch {
		case err == nil && len(frame) > 0:
			return frame, nil
		case err == nil:
			continue
		case err == io.EOF && len(frame) == 0:
			return nil, io.EOF
		case err == io.EOF && json.Valid(frame):
			return frame, nil // a last frame without its "\n"
		case err == io.EOF:
			return nil, fmt.Errorf("stream ended inside a frame after %d bytes: %w", len(frame), io.ErrUnexpectedEOF)
		default:
			return nil, err
		}
	}
}

// Decode blocks until the next event has arrived and returns it. The object
// is a new *corev1.ConfigMap (or whatever kind the watch is on) for ADDED,
// MODIFIED, DELETED and BOOKMARK, and a *metav1.Status for ERROR; turn the
// latter into an error with StatusError. At the clean end of the stream
// Decode returns io.EOF.
func (d *Decoder) Decode() (watch.EventType, runtime.Object, error) {
	frame, err := d.readFrame()
	if err != nil {
		return "", nil, err
	}
	d.event.Type, d.event.Object = "", d.event.Object[:0]
	if err := json.Unmarshal(frame, &d.event); err != nil {
		return "", nil, fmt.Errorf("frame is not a watch event (%v): %s", err, excerpt(frame))
	}
	if len(d.event.Object) == 0 || string(d.event.Object) == "null" {
		return "", nil, fmt.Errorf("%s event without an object: %s", d.event.Type, excerpt(frame))
	}
	switch d.event.Type {
	case watch.Added, watch.Modified, watch.Deleted, watch.Bookmark:
		obj, err := newObject(d.kind)
		if err != nil {
			return "", nil, err
		}
		if err := json.Unmarshal(d.event.Object, obj); err != nil {
			return "", nil, fmt.Errorf("%s event: object is not a %s (%v): %s", d.event.Type, d.kind.Kind, err, excerpt(frame))
		}
		// TypeMeta was filled from the object's own apiVersion and kind.
		if got := obj.GetObjectKind().GroupVersionKind(); got != d.kind {
			return "", nil, fmt.Errorf("%s event carries kind %q apiVersion %q, this watch is on %q %q",
				d.event.Type, got.Kind, got.GroupVersion(), d.kind.Kind, d.kind.GroupVersion())
		}
		return d.event.Type, obj, nil
	case watch.Error:
		status := &metav1.Status{}
		if err := json.Unmarshal(d.event.Object, status); err != nil {
			return "", nil, fmt.Errorf("ERROR event: object is not a Status (%v): %s", err, excerpt(frame))
		}
		if status.Kind != "Status" {
			return "", nil, fmt.Errorf("ERROR event carries kind %q, want Status: %s", status.Kind, excerpt(frame))
		}
		// An ERROR event reports a failure; a Status saying "Success" in
		// one is a broken stream, not an error to hand to the caller.
		if status.Status != metav1.StatusFailure {
			return "", nil, fmt.Errorf("ERROR event carries a Status that is not a failure (status %q): %s", status.Status, excerpt(frame))
		}
		return watch.Error, status, nil
	default:
		return "", nil, fmt.Errorf("unknown watch event type %q: %s", d.event.Type, excerpt(frame))
	}
}

// excerpt shows the start of a bad frame in an error message.
func excerpt(frame []byte) string {
	const max = 120
	if len(frame) <= max {
		return fmt.Sprintf("%q", frame)
	}
	return fmt.Sprintf("%q... (%d bytes)", frame[:max], len(frame))
}
