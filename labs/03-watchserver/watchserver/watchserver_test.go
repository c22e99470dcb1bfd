package watchserver

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	"golang.org/x/net/websocket"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// fakeSource is a fake EventSource for unit tests of the WatchServer alone:
// the test decides what is queued and sees whether Stop was called.
type fakeSource struct {
	ch       chan *Event
	stopped  chan struct{}
	stopOnce sync.Once
}

func newFakeSource(buffer int) *fakeSource {
	return &fakeSource{ch: make(chan *Event, buffer), stopped: make(chan struct{})}
}

func (f *fakeSource) ResultChan() <-chan *Event { return f.ch }
func (f *fakeSource) Stop()                     { f.stopOnce.Do(func() { close(f.stopped) }) }

func (f *fakeSource) waitStopped(t *testing.T) {
	t.Helper()
	select {
	case <-f.stopped:
	case <-time.After(10 * time.Second):
		t.Fatal("the WatchServer did not stop its watcher: HandleHTTP/HandleWS must call Watching.Stop when it returns")
	}
}

func testEvent(typ watch.EventType, name string, rv uint64) *Event {
	cm := &corev1.ConfigMap{TypeMeta: configMapType, ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", ResourceVersion: formatRV(rv)}}
	return NewEvent(typ, cm, nil, rv)
}

// flushCounter is a ResponseWriter that records writes and counts flushes.
type flushCounter struct {
	*httptest.ResponseRecorder
	flushes int
}

func (f *flushCounter) Flush() { f.flushes++; f.ResponseRecorder.Flush() }

func TestFramesAreFlushedOnlyWhenNoEventIsWaiting(t *testing.T) {
	src := newFakeSource(5)
	var want strings.Builder
	for i := 1; i <= 5; i++ {
		ev := testEvent(watch.Added, "cm", uint64(i))
		src.ch <- ev
		want.Write(ev.Frame)
	}
	close(src.ch)
	rec := &flushCounter{ResponseRecorder: httptest.NewRecorder()}
	(&WatchServer{Watching: src, MediaType: "application/json"}).HandleHTTP(rec, httptest.NewRequest("GET", "/", nil))

	if got := rec.Body.String(); got != want.String() {
		t.Fatalf("body:\n%s\nwant the five frames in order:\n%s", got, want.String())
	}
	// One flush for the headers, one after the fifth event: while events
	// 1-4 were written, another was already waiting in the channel.
	if rec.flushes != 2 {
		t.Fatalf("flushes = %d, want 2 (headers, then once the queue is empty); flush only when len(events) == 0", rec.flushes)
	}
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Fatalf("Content-Type = %q", ct)
	}
	src.waitStopped(t)
}

func TestEveryLoneEventIsFlushed(t *testing.T) {
	src := newFakeSource(0) // unbuffered: never a second event waiting
	rec := &flushCounter{ResponseRecorder: httptest.NewRecorder()}
	done := make(chan struct{})
	go func() {
		defer close(done)
		(&WatchServer{Watching: src, MediaType: "application/json"}).HandleHTTP(rec, httptest.NewRequest("GET", "/", nil))
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

func TestTimeoutEndsTheStreamCleanly(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	src := newFakeSource(1)
	srv := httptest.NewServer(&WatchServer{Watching: src, MediaType: "application/json", Timeout: 200 * time.Millisecond})
	defer srv.Close()
	defer srv.Client().CloseIdleConnections()
	src.ch <- testEvent(watch.Added, "a", 1)

	resp, err := srv.Client().Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body) // returns at the timeout
	resp.Body.Close()
	if err != nil {
		t.Fatalf("reading until the timeout: %v; a timeout must end the response normally (last chunk), not break it", err)
	}
	if !strings.Contains(string(body), `"name":"a"`) {
		t.Fatalf("body %q lacks the event sent before the timeout", body)
	}
	src.waitStopped(t)
}

func TestClientDisconnectStopsTheWatcher(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	src := newFakeSource(1)
	srv := httptest.NewServer(&WatchServer{Watching: src, MediaType: "application/json"})
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
		(&WatchServer{Watching: src, MediaType: "application/json", ShuttingDown: shuttingDown}).ServeHTTP(w, r)
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
		srv := httptest.NewUnstartedServer(&WatchServer{Watching: src, MediaType: "application/json"})
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
	srv := httptest.NewServer(&WatchServer{Watching: src, MediaType: "application/json"})
	defer srv.Close()
	ws, err := websocket.Dial("ws"+strings.TrimPrefix(srv.URL, "http"), "", "http://127.0.0.1/")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []*Event{first, second} {
		var msg string
		if err := websocket.Message.Receive(ws, &msg); err != nil {
			t.Fatal(err)
		}
		if msg != string(want.Frame) {
			t.Fatalf("message %q, want the frame %q", msg, want.Frame)
		}
	}
	ws.Close() // the client leaves: the server must notice and stop
	src.waitStopped(t)
}

// TestEncodeOnce: all watchers of one event write the very same bytes.
func TestEncodeOnce(t *testing.T) {
	store := NewStore(10, 0)
	var watchers []*Watcher
	for range 3 {
		w, err := store.Watch(WatchOptions{SendInitialEvents: ptr(false)})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		watchers = append(watchers, w)
	}
	store.Create(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns"}})
	var frames [][]byte
	for _, w := range watchers {
		frames = append(frames, (<-w.ResultChan()).Frame)
	}
	for i := 1; i < len(frames); i++ {
		if &frames[i][0] != &frames[0][0] {
			t.Fatalf("watcher %d got its own copy of the frame; the store must hand every watcher the same *Event", i)
		}
	}
}

func ptr[T any](v T) *T { return &v }
