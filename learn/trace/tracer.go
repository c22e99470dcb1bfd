package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/client-go/tools/cache"
)

// Mark is when one hop saw the traced write, since the writer sent it.
type Mark struct {
	At     time.Duration `json:"at"`
	Detail string        `json:"detail,omitempty"` // what was seen (event type, RV)
}

// replyMark is the writer's own Create returning: off the watch path, but
// the one time the real stack shows of its write from outside.
const replyMark = "writer's Create returned"

// Tracer records, for the object being written now, the first time each hop
// sees it. Writes go one at a time: begin names the object, the hops mark
// it, and end returns the marks. Every hop is observed from outside the
// layer's code: a wrapper around an interface the layers already meet at
// (storage.Interface, watch.Interface, the HTTP body,
// cache.ListerWatcherWithContext) or a hook the layer offers (the
// informer's transform and index functions, the handler).
type Tracer struct {
	Stack string
	last  string // the hop that ends a write

	mu     sync.Mutex
	name   string // the object being traced; "" between writes
	needle []byte // its name as it appears in a JSON frame
	start  time.Time
	marks  map[string]Mark
	done   chan struct{} // closed when the last hop is marked
}

func newTracer(stack, last string) *Tracer {
	return &Tracer{Stack: stack, last: last}
}

// begin starts tracing the write of the object called name: time zero.
func (t *Tracer) begin(name string) <-chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.name, t.needle = name, []byte(`"name":"`+name+`"`)
	t.marks = map[string]Mark{}
	t.done = make(chan struct{})
	t.start = time.Now()
	return t.done
}

// end stops tracing the current write and returns its marks.
func (t *Tracer) end() map[string]Mark {
	t.mu.Lock()
	defer t.mu.Unlock()
	marks := t.marks
	t.name, t.needle, t.marks = "", nil, nil
	return marks
}

// mark records hop for the object called name, if it is the traced one and
// the hop has not seen it yet.
func (t *Tracer) mark(hop, name, detail string) {
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.name == "" || name != t.name {
		return
	}
	if _, seen := t.marks[hop]; seen {
		return
	}
	t.marks[hop] = Mark{At: now.Sub(t.start), Detail: detail}
	if hop == t.last {
		close(t.done)
	}
}

// markObject marks hop if obj is the traced object.
func (t *Tracer) markObject(hop string, obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	if c, ok := obj.(runtime.CacheableObject); ok {
		obj = c.GetObject()
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return
	}
	t.mark(hop, m.GetName(), "rv "+m.GetResourceVersion())
}

// markEvent marks hop if ev adds or modifies the traced object.
func (t *Tracer) markEvent(hop string, ev watch.Event) {
	if ev.Type == watch.Added || ev.Type == watch.Modified {
		t.markObject(hop, ev.Object)
	}
}

// markBytes marks hop if window holds the traced object's name in a JSON
// frame.
func (t *Tracer) markBytes(hop string, window []byte) {
	t.mu.Lock()
	needle, name := t.needle, t.name
	t.mu.Unlock()
	if name != "" && bytes.Contains(window, needle) {
		t.mark(hop, name, "frame bytes")
	}
}

// traceWatch forwards every event of in, marking the hop when the traced
// object passes. It is a watch.Interface of its own: Stop stops in and ends
// the forwarding goroutine.
type traceWatch struct {
	in     watch.Interface
	out    chan watch.Event
	done   chan struct{}
	once   sync.Once
	finish chan struct{}
}

func newTraceWatch(in watch.Interface, onEvent func(watch.Event)) *traceWatch {
	w := &traceWatch{in: in, out: make(chan watch.Event), done: make(chan struct{}), finish: make(chan struct{})}
	go func() {
		defer close(w.finish)
		defer close(w.out)
		for ev := range in.ResultChan() {
			onEvent(ev)
			select {
			case w.out <- ev:
			case <-w.done:
				return
			}
		}
	}()
	return w
}

func (w *traceWatch) ResultChan() <-chan watch.Event { return w.out }
func (w *traceWatch) Stop() {
	w.once.Do(func() {
		close(w.done)
		w.in.Stop()
	})
	<-w.finish
}

// traceStorage is a storage.Interface whose watches report when the traced
// object leaves the storage they wrap, and whose Create reports the object
// going in (beforeCreate) and coming back stored (afterCreate), when set.
type traceStorage struct {
	storage.Interface
	onEvent      func(watch.Event)
	beforeCreate func(obj runtime.Object)
	afterCreate  func(out runtime.Object)
}

func (s traceStorage) Create(ctx context.Context, key string, obj, out runtime.Object, ttl uint64) error {
	if s.beforeCreate != nil {
		s.beforeCreate(obj)
	}
	err := s.Interface.Create(ctx, key, obj, out, ttl)
	if err == nil && s.afterCreate != nil {
		s.afterCreate(out)
	}
	return err
}

func (s traceStorage) Watch(ctx context.Context, key string, opts storage.ListOptions) (watch.Interface, error) {
	w, err := s.Interface.Watch(ctx, key, opts)
	if err != nil || s.onEvent == nil {
		return w, err
	}
	return newTraceWatch(w, s.onEvent), nil
}

// traceLW wraps a ListerWatcher: its watches report decoded events.
type traceLW struct {
	cache.ListerWatcherWithContext
	onEvent func(watch.Event)
}

func (l traceLW) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	w, err := l.ListerWatcherWithContext.WatchWithContext(ctx, opts)
	if err != nil {
		return nil, err
	}
	return newTraceWatch(w, l.onEvent), nil
}

// traceTransport marks the moment the bytes of the traced object's frame
// are read from a watch response body (before any decoding).
type traceTransport struct {
	next   http.RoundTripper
	onRead func(window []byte)
}

func (t traceTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err != nil || !strings.Contains(req.URL.RawQuery, "watch=") {
		return resp, err
	}
	resp.Body = &traceBody{ReadCloser: resp.Body, t: t}
	return resp, nil
}

type traceBody struct {
	io.ReadCloser
	t    traceTransport
	tail []byte // the end of the previous read: a frame may span two reads
}

func (b *traceBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		window := append(b.tail, p[:n]...)
		b.t.onRead(window)
		if len(window) > 256 {
			window = window[len(window)-256:]
		}
		b.tail = append(b.tail[:0], window...)
	}
	return n, err
}

// List and Watch make traceLW a cache.ListerWatcher too (what client-go's
// NewSharedIndexInformer takes); client-go then finds the context-aware
// methods above and uses them.
func (l traceLW) List(opts metav1.ListOptions) (runtime.Object, error) {
	return l.ListWithContext(context.Background(), opts)
}

func (l traceLW) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return l.WatchWithContext(context.Background(), opts)
}
