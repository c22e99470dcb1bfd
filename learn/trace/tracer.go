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

// Hop is one layer the write went through, and when it got there.
type Hop struct {
	Name   string        `json:"name"`   // e.g. "Cacher -> WatchServer"
	From   string        `json:"from"`   // participant the event leaves
	To     string        `json:"to"`     // participant it reaches
	Where  string        `json:"where"`  // the code that was observed
	At     time.Duration `json:"at"`     // since the write was sent
	Detail string        `json:"detail"` // what was seen (event type, RV)
}

// Tracer records, for one object name, the first time each hop sees it.
// Every hop is observed from outside the layer's code: a wrapper around an
// interface the layers already meet at (storage.Interface, watch.Interface,
// the HTTP body, cache.ListerWatcherWithContext) or a hook the layer offers
// (the informer's transform and index functions, the handler).
type Tracer struct {
	Stack string
	Name  string // the traced object's name

	mu    sync.Mutex
	start time.Time
	hops  []Hop
	seen  map[string]bool
	wait  chan struct{} // closed when the last hop is recorded
	last  string
}

func newTracer(stack, name, last string) *Tracer {
	return &Tracer{Stack: stack, Name: name, seen: map[string]bool{}, wait: make(chan struct{}), last: last}
}

// begin marks the write being sent: time zero.
func (t *Tracer) begin() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.start = time.Now()
}

func (t *Tracer) mark(name, from, to, where, detail string) {
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.start.IsZero() || t.seen[name] {
		return
	}
	t.seen[name] = true
	t.hops = append(t.hops, Hop{Name: name, From: from, To: to, Where: where, At: now.Sub(t.start), Detail: detail})
	if name == t.last {
		close(t.wait)
	}
}

func (t *Tracer) Hops() []Hop {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]Hop(nil), t.hops...)
}

// isTraced reports whether obj is the traced object, and describes it.
func (t *Tracer) isTraced(obj any) (bool, string) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	m, err := meta.Accessor(obj)
	if err != nil || m.GetName() != t.Name {
		return false, ""
	}
	return true, "rv " + m.GetResourceVersion()
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
// object leaves the storage they wrap.
type traceStorage struct {
	storage.Interface
	onEvent func(watch.Event)
}

func (s traceStorage) Watch(ctx context.Context, key string, opts storage.ListOptions) (watch.Interface, error) {
	w, err := s.Interface.Watch(ctx, key, opts)
	if err != nil {
		return nil, err
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
	onRead func()
	needle []byte
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
		if bytes.Contains(window, b.t.needle) {
			b.t.onRead()
		}
		if len(window) > 256 {
			window = window[len(window)-256:]
		}
		b.tail = append(b.tail[:0], window...)
	}
	return n, err
}

// eventDetail describes an event for a hop.
func (t *Tracer) eventDetail(ev watch.Event) (bool, string) {
	if ev.Type != watch.Added && ev.Type != watch.Modified {
		return false, ""
	}
	obj := ev.Object
	if c, ok := obj.(runtime.CacheableObject); ok {
		obj = c.GetObject()
	}
	ok, d := t.isTraced(obj)
	return ok, string(ev.Type) + " " + d
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
