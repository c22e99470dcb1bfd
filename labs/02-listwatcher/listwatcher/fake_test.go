package listwatcher

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// fakeAPIServer is a fake for unit tests of this package only: an
// httptest server that answers the requests it gets, in order, with the
// handlers a test queued, and records each request's path and query. The
// lab's real tests run against a real apiserver (see ../lab_test.go).
type fakeAPIServer struct {
	t        *testing.T
	srv      *httptest.Server
	mu       sync.Mutex
	handlers []http.HandlerFunc
	requests []string // "PATH?QUERY" of every request, in order
	// unblock ends handlers waiting for the test to finish (held watches).
	unblock chan struct{}
}

func newFakeAPIServer(t *testing.T, handlers ...http.HandlerFunc) *fakeAPIServer {
	f := &fakeAPIServer{t: t, handlers: handlers, unblock: make(chan struct{})}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve)) // listens on 127.0.0.1
	t.Cleanup(func() {
		close(f.unblock)
		f.srv.Close()
	})
	return f
}

func (f *fakeAPIServer) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.requests = append(f.requests, r.URL.Path+"?"+r.URL.RawQuery)
	if len(f.handlers) == 0 {
		f.mu.Unlock()
		http.Error(w, "fake: no more answers queued", http.StatusTeapot)
		return
	}
	h := f.handlers[0]
	f.handlers = f.handlers[1:]
	f.mu.Unlock()
	h(w, r)
}

func (f *fakeAPIServer) Requests() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.requests...)
}

// listWatch is a ListWatch on the fake's configmaps in namespace ns.
func (f *fakeAPIServer) listWatch(ns string) *ListWatch {
	return &ListWatch{
		Client:    f.srv.Client(),
		Server:    f.srv.URL,
		Resource:  "configmaps",
		Namespace: ns,
		Kind:      schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"},
	}
}

// answer writes body with code as JSON. A list queued for a request that
// turns out to be a watch (the loop retried a watch where the test expected
// a LIST) is answered with a 400 that says so, not with the list, which the
// watch would fail to decode as an event and leave the reader puzzling over
// the decoder.
func answer(code int, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if q := r.URL.Query().Get("watch"); (q == "1" || q == "true") && strings.Contains(body, `List","apiVersion"`) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintf(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","message":%q,"reason":"BadRequest","code":400}`,
				"fake apiserver: the test expected a LIST here, and got a WATCH ("+r.URL.RawQuery+")")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		fmt.Fprint(w, body)
	}
}

// stream writes each line as one flushed chunk of a 200 watch response,
// then ends the response (a clean end, as after timeoutSeconds).
func stream(lines ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		for _, l := range lines {
			fmt.Fprintln(w, l)
			w.(http.Flusher).Flush()
		}
	}
}

// hold is a watch response that sends lines and then stays open until the
// client goes away or the test ends.
func (f *fakeAPIServer) hold(lines ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		stream(lines...)(w, r)
		select {
		case <-r.Context().Done():
		case <-f.unblock:
		}
	}
}

// cut sends lines, then half a frame, then drops the connection: the
// apiserver dying mid-watch.
func cut(lines ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		stream(lines...)(w, r)
		fmt.Fprint(w, `{"type":"ADDED","obj`)
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler) // net/http closes the connection, no log
	}
}

func cm(typ, name, rv string) string {
	return fmt.Sprintf(`{"type":%q,"object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":%q,"namespace":"ns","resourceVersion":%q}}}`, typ, name, rv)
}

func bookmark(rv string, initialEventsEnd bool) string {
	ann := ""
	if initialEventsEnd {
		ann = `,"annotations":{"k8s.io/initial-events-end":"true"}`
	}
	return fmt.Sprintf(`{"type":"BOOKMARK","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"resourceVersion":%q%s}}}`, rv, ann)
}

func list(rv, cont string, names ...string) string {
	items := ""
	for i, n := range names {
		if i > 0 {
			items += ","
		}
		items += fmt.Sprintf(`{"metadata":{"name":%q,"namespace":"ns","resourceVersion":"%d"}}`, n, i+1)
	}
	return fmt.Sprintf(`{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":%q,"continue":%q},"items":[%s]}`, rv, cont, items)
}

const expired = `{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old resource version: 15 (18)","reason":"Expired","code":410}}`
