package watchserver

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/listwatch-labs/listwatch-labs/labkit"
	"go.uber.org/goleak"
	"golang.org/x/net/websocket"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"
)

// fakeSource is a fake watch.Interface for unit tests of the WatchServer
// alone: the test decides what is queued and sees whether Stop was called.
type fakeSource struct {
	ch       chan watch.Event
	stopped  chan struct{}
	stopOnce sync.Once
}

func newFakeSource(buffer int) *fakeSource {
	return &fakeSource{ch: make(chan watch.Event, buffer), stopped: make(chan struct{})}
}

func (f *fakeSource) ResultChan() <-chan watch.Event { return f.ch }
func (f *fakeSource) Stop()                          { f.stopOnce.Do(func() { close(f.stopped) }) }

func (f *fakeSource) waitStopped(t *testing.T) {
	t.Helper()
	select {
	case <-f.stopped:
	case <-time.After(10 * time.Second):
		t.Fatal("the WatchServer did not stop its watcher: HandleHTTP/HandleWS must call Watching.Stop when it returns")
	}
}

var testEncoder = JSONEncoder{Typer: scheme.Scheme}

func testEvent(typ watch.EventType, name string, rv uint64) watch.Event {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", ResourceVersion: strconv.FormatUint(rv, 10)}}
	return watch.Event{Type: typ, Object: cm}
}

// frame is what the WatchServer must write for ev.
func frame(t *testing.T, ev watch.Event) string {
	t.Helper()
	var buf bytes.Buffer
	if err := newWatchEncoder(testEncoder).Encode(ev, &buf); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

func newServer(src watch.Interface) *WatchServer {
	return &WatchServer{Watching: src, Encoder: testEncoder, MediaType: "application/json"}
}

// flushCounter is a ResponseWriter that records writes and counts flushes.
type flushCounter struct {
	*httptest.ResponseRecorder
	flushes int
}

func (f *flushCounter) Flush() { f.flushes++; f.ResponseRecorder.Flush() }

func TestFramesAreFlushedOnlyWhenNoEventIsWaiting(t *testing.T) {
	labkit.ChecksExercise(t, "flush-when-idle")
	src := newFakeSource(5)
	var want strings.Builder
	for i := 1; i <= 5; i++ {
		ev := testEvent(watch.Added, "cm", uint64(i))
		src.ch <- ev
		want.WriteString(frame(t, ev))
	}
	close(src.ch)
	rec := &flushCounter{ResponseRecorder: httptest.NewRecorder()}
	newServer(src).HandleHTTP(rec, httptest.NewRequest("GET", "/", nil))

	if got := rec.Body.String(); got != want.String() {
		t.Fatalf("the body is not the five frames in order; %s", labkit.Diff(want.String(), got))
	}
	// One flush for the headers, one after the fifth event: while events
	// 1-4 were written, another was already waiting in the channel.
	if rec.flushes != 2 {
		t.Fatalf("5 events, all already waiting in the channel, were written with %d flushes; want 2: one for the headers, one after the fifth event, when no other was waiting (a flush between two waiting events is a write to the client that buys nothing)", rec.flushes)
	}
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Fatalf("Content-Type = %q", ct)
	}
	src.waitStopped(t)
}

func TestEveryLoneEventIsFlushed(t *testing.T) {
	labkit.ChecksExercise(t, "flush-when-idle")
	src := newFakeSource(0) // unbuffered: never a second event waiting
	rec := &flushCounter{ResponseRecorder: httptest.NewRecorder()}
	done := make(chan struct{})
	go func() {
		defer close(done)
		newServer(src).HandleHTTP(rec, httptest.NewRequest("GET", "/", nil))
	}()
	for i := 1; i <= 3; i++ {
		src.ch <- testEvent(watch.Modified, "cm", uint64(i))
	}
	close(src.ch)
	<-done
	if rec.flushes != 4 {
		t.Fatalf("flushes = %d, want 4 (headers + each of 3 lone events)", rec.flushes)
	}
}

// TestTimeoutEndsTheStream runs in a synctest bubble: the 30 s timeout
// passes in fake time, as soon as the handler has nothing else to do.
func TestTimeoutEndsTheStream(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newFakeSource(1)
		server := newServer(src)
		server.Timeout = 30 * time.Second
		src.ch <- testEvent(watch.Added, "a", 1)
		rec := &flushCounter{ResponseRecorder: httptest.NewRecorder()}
		start := time.Now()
		server.HandleHTTP(rec, httptest.NewRequest("GET", "/", nil)) // returns at the timeout
		if waited := time.Since(start); waited != 30*time.Second {
			t.Fatalf("HandleHTTP returned after %v, want exactly the 30s timeout", waited)
		}
		if !strings.Contains(rec.Body.String(), `"name":"a"`) {
			t.Fatalf("body %q lacks the event sent before the timeout", rec.Body)
		}
		src.waitStopped(t)
	})
}

// TestTimeoutEndsTheResponseCleanly: over real HTTP/1.1, the end at the
// timeout is a normal end of the response (the last chunk), not a broken
// connection. Nothing here measures time: a 1 ms timeout only makes the
// test short.
func TestTimeoutEndsTheResponseCleanly(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	src := newFakeSource(1)
	server := newServer(src)
	server.Timeout = time.Millisecond
	srv := httptest.NewServer(server)
	defer srv.Close()
	defer srv.Client().CloseIdleConnections()
	resp, err := srv.Client().Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	_, err = io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatalf("reading until the timeout: %v; a timeout must end the response normally (last chunk), not break it", err)
	}
	src.waitStopped(t)
}

func TestClientDisconnectStopsTheWatcher(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	src := newFakeSource(1)
	srv := httptest.NewServer(newServer(src))
	defer srv.Close()
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()

	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL, nil)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	src.ch <- testEvent(watch.Added, "a", 1)
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	if err != nil || !strings.Contains(line, `"name":"a"`) {
		t.Fatalf("first frame %q, %v", line, err)
	}
	cancel() // the client goes away; nothing closes the source
	resp.Body.Close()
	src.waitStopped(t)
}

func TestServerShutdownEndsEveryStream(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	shuttingDown := make(chan struct{})
	sources := []*fakeSource{newFakeSource(1), newFakeSource(1)}
	var next int
	var mu sync.Mutex
	server := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		src := sources[next]
		next++
		mu.Unlock()
		server := newServer(src)
		server.ShuttingDown = shuttingDown
		server.ServeHTTP(w, r)
	})}
	server.RegisterOnShutdown(func() { close(shuttingDown) })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- server.Serve(ln) }()
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()

	var bodies []io.ReadCloser
	for range sources {
		resp, err := client.Get("http://" + ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		bodies = append(bodies, resp.Body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := server.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v (a watch that ignores ShuttingDown keeps its connection busy forever)", err)
	}
	for i, body := range bodies {
		if _, err := io.ReadAll(body); err != nil {
			t.Fatalf("stream %d: %v, want a clean end", i, err)
		}
		body.Close()
		sources[i].waitStopped(t)
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		t.Fatal(err)
	}
}

func TestHTTP1IsChunkedAndHTTP2IsAStream(t *testing.T) {
	for _, h2 := range []bool{false, true} {
		src := newFakeSource(2)
		src.ch <- testEvent(watch.Added, "a", 1)
		src.ch <- testEvent(watch.Modified, "a", 2)
		close(src.ch)
		srv := httptest.NewUnstartedServer(newServer(src))
		srv.EnableHTTP2 = h2
		srv.StartTLS()
		resp, err := srv.Client().Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		srv.Client().CloseIdleConnections()
		srv.Close()
		lines := strings.Split(strings.TrimSuffix(string(body), "\n"), "\n")
		if len(lines) != 2 || !strings.HasPrefix(lines[0], `{"type":"ADDED"`) || !strings.HasPrefix(lines[1], `{"type":"MODIFIED"`) {
			t.Fatalf("h2=%v: body %q, want two newline-delimited frames", h2, body)
		}
		switch {
		case h2 && resp.ProtoMajor != 2:
			t.Fatalf("proto %s, want HTTP/2", resp.Proto)
		case h2 && len(resp.TransferEncoding) != 0:
			t.Fatalf("HTTP/2 has no chunked encoding, got %v", resp.TransferEncoding)
		case !h2 && (resp.ProtoMajor != 1 || len(resp.TransferEncoding) != 1 || resp.TransferEncoding[0] != "chunked"):
			t.Fatalf("HTTP/1.1: proto %s, Transfer-Encoding %v, want chunked", resp.Proto, resp.TransferEncoding)
		}
	}
}

func TestWebsocketSendsOneMessagePerEvent(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	src := newFakeSource(2)
	first, second := testEvent(watch.Added, "a", 1), testEvent(watch.Deleted, "a", 2)
	src.ch <- first
	src.ch <- second
	srv := httptest.NewServer(newServer(src))
	defer srv.Close()
	ws, err := websocket.Dial("ws"+strings.TrimPrefix(srv.URL, "http"), "", "http://127.0.0.1/")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []watch.Event{first, second} {
		var msg string
		if err := websocket.Message.Receive(ws, &msg); err != nil {
			t.Fatal(err)
		}
		if msg != frame(t, want) {
			t.Fatalf("message %q, want the frame %q", msg, frame(t, want))
		}
	}
	ws.Close() // the client leaves: the server must notice and stop
	src.waitStopped(t)
}

// countingCachingObject is a fake runtime.CacheableObject: it caches one
// serialization per identifier, like the storages' caching objects, and
// counts how often it had to encode.
type countingCachingObject struct {
	runtime.Object
	mu      sync.Mutex
	cache   map[runtime.Identifier][]byte
	encodes int
}

func (c *countingCachingObject) CacheEncode(id runtime.Identifier, encode func(runtime.Object, io.Writer) error, w io.Writer) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.cache[id]; !ok {
		var buf bytes.Buffer
		if err := encode(c.Object.DeepCopyObject(), &buf); err != nil {
			return err
		}
		c.cache[id] = buf.Bytes()
		c.encodes++
	}
	_, err := w.Write(c.cache[id])
	return err
}

func (c *countingCachingObject) GetObject() runtime.Object { return c.Object.DeepCopyObject() }

// TestEncodeOnce: three WatchServers write the same event; the object is
// encoded once, and all three write the same bytes. The same object sent as
// another event type is a different frame, so it is encoded again.
func TestEncodeOnce(t *testing.T) {
	shared := &countingCachingObject{Object: testEvent(watch.Added, "a", 1).Object, cache: map[runtime.Identifier][]byte{}}
	var bodies []string
	for _, typ := range []watch.EventType{watch.Added, watch.Added, watch.Added, watch.Modified} {
		src := newFakeSource(1)
		src.ch <- watch.Event{Type: typ, Object: shared}
		close(src.ch)
		rec := &flushCounter{ResponseRecorder: httptest.NewRecorder()}
		newServer(src).HandleHTTP(rec, httptest.NewRequest("GET", "/", nil))
		bodies = append(bodies, rec.Body.String())
	}
	if shared.encodes != 2 || bodies[0] != bodies[1] || bodies[1] != bodies[2] || !strings.HasPrefix(bodies[3], `{"type":"MODIFIED"`) {
		t.Fatalf("%d encodes, bodies %q: want one encoding for the three ADDED frames (use CacheEncode when the object is a runtime.CacheableObject) and one for MODIFIED", shared.encodes, bodies)
	}
	if want := frame(t, testEvent(watch.Added, "a", 1)); bodies[0] != want {
		t.Fatalf("cached frame %q, want %q", bodies[0], want)
	}
}
