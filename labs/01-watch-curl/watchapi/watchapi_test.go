package watchapi

import (
	"errors"
	"go/parser"
	"go/token"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/listwatch-labs/listwatch-labs/labkit"
	"go.uber.org/goleak"
)

// A stream recorded with curl from a 1.36 apiserver (trimmed objects); v1.37.0
// sends a plain watch the same way (scenario initial-events reads one live).
const recorded = `{"type":"ADDED","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"cm-a","namespace":"lab","resourceVersion":"287"},"data":{"color":"blue"}}}
{"type":"MODIFIED","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"cm-a","namespace":"lab","resourceVersion":"288"},"data":{"color":"green"}}}
{"type":"BOOKMARK","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"resourceVersion":"290","annotations":{"k8s.io/initial-events-end":"true"}}}}
{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old resource version: 266 (271)","reason":"Expired","code":410}}
`

func TestDecodeRecordedStream(t *testing.T) {
	d := NewDecoder(strings.NewReader(recorded))
	var got []string
	for {
		ev, err := d.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if ev.Type == Error {
			s, err := ev.Status()
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, "ERROR "+s.Error())
			continue
		}
		m, err := ev.Meta()
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, ev.Type+" "+m.Metadata.Name+" "+m.Metadata.ResourceVersion+" "+m.Metadata.Annotations["k8s.io/initial-events-end"])
	}
	want := []string{
		"ADDED cm-a 287 ",
		"MODIFIED cm-a 288 ",
		"BOOKMARK  290 true",
		"ERROR too old resource version: 266 (271) (410 Expired)",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestDecodeBrokenStreams(t *testing.T) {
	labkit.ChecksExercise(t, "cut-off-stream")
	for name, tc := range map[string]struct {
		in   string
		want error
	}{
		"cut off inside an event": {`{"type":"ADDED","object":{"kind":"Conf`, ErrCutOff},
		"not json":                {"<html>502 Bad Gateway</html>", nil},
		"no type":                 {`{"object":{}}`, nil},
		"no object":               {`{"type":"ADDED"}`, nil},
	} {
		_, err := NewDecoder(strings.NewReader(tc.in)).Next()
		if err == nil || err == io.EOF {
			t.Errorf("%s: got %v, want an error", name, err)
			continue
		}
		if tc.want != nil && !errors.Is(err, tc.want) {
			t.Errorf("%s: got %v, want %v", name, err, tc.want)
		}
	}
}

// TestDecoderReturnsEventsAsTheyArrive: the decoder must hand out an event as
// soon as its frame is complete, not when the body ends. A fake apiserver
// (httptest) sends one event and then holds the stream open until the test
// has read it.
func TestDecoderReturnsEventsAsTheyArrive(t *testing.T) {
	defer goleak.VerifyNone(t)
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, strings.SplitAfter(recorded, "\n")[0])
		w.(http.Flusher).Flush()
		<-release
	}))
	defer srv.Close()
	var once sync.Once
	endStream := func() { once.Do(func() { close(release) }) }
	defer endStream()

	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	type result struct {
		ev  WatchEvent
		err error
	}
	got := make(chan result, 1)
	go func() {
		ev, err := NewDecoder(resp.Body).Next()
		got <- result{ev, err}
	}()
	// A deadline, not a wait: the event is already sent, so a decoder that
	// hands it out as it arrives returns at once.
	deadline := time.NewTimer(10 * time.Second)
	defer deadline.Stop()
	select {
	case r := <-got:
		if r.err != nil || r.ev.Type != Added {
			t.Fatalf("got %v %v, want the ADDED event while the stream is still open", r.ev.Type, r.err)
		}
	case <-deadline.C:
		endStream() // so the decoder goroutine can return
		<-got
		t.Fatal("no event after 10s while the stream is open: the decoder waits for the body to end")
	}
}

func TestOptionsQuery(t *testing.T) {
	labkit.ChecksExercise(t, "watch-query")
	got := Options{ResourceVersion: "42", AllowWatchBookmarks: true, TimeoutSeconds: 30, LabelSelector: "tier=web"}.Query()
	want := "allowWatchBookmarks=true&labelSelector=tier%3Dweb&resourceVersion=42&timeoutSeconds=30&watch=1"
	if got != want {
		t.Errorf("Query() = %s\nits parameters, one a line, %s", got, labkit.Diff(strings.ReplaceAll(want, "&", "\n"), strings.ReplaceAll(got, "&", "\n")))
	}
}

// TestOpenRefused: a watch the apiserver refuses before streaming is an
// *HTTPError carrying the code and the Status body (a fake apiserver,
// httptest, answers as v1.37.0 does to resourceVersion=abc; the go-watch
// scenario shows the real one).
func TestOpenRefused(t *testing.T) {
	labkit.ChecksExercise(t, "refused-watch")
	defer goleak.VerifyNone(t)
	status := `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"resourceVersion: Invalid value: \"abc\"","code":500}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("watch") != "1" || r.URL.Path != "/api/v1/namespaces/lab/configmaps" {
			t.Errorf("request %s", r.URL)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusInternalServerError)
		io.WriteString(w, status+"\n")
	}))
	defer srv.Close()
	// Runs before goleak's check (defers run last first), also when the
	// test fails: a failure shows the message, not a goroutine dump.
	defer srv.Client().CloseIdleConnections()
	body, err := Open(t.Context(), srv.Client(), URL(srv.URL+"/", "lab", "configmaps", Options{ResourceVersion: "abc"}))
	if body != nil {
		body.Close() // the stream it should not have opened
	}
	var httpErr *HTTPError
	switch {
	case err == nil:
		t.Fatalf("Open returned no error (a stream), want an *HTTPError: HTTP 500, body %s", labkit.Quote(status))
	case !errors.As(err, &httpErr):
		t.Fatalf("Open returned %T %s, want an *HTTPError: HTTP 500, body %s", err, labkit.Quote(err.Error()), labkit.Quote(status))
	case httpErr.Code != 500 || httpErr.Body != status:
		// Both bodies quoted: a stray newline shows as \n, a trailing space as ·.
		t.Fatalf("Open returned an *HTTPError that differs:\n  want: HTTP 500, body %s\n  got:  HTTP %d, body %s", labkit.Quote(status), httpErr.Code, labkit.Quote(httpErr.Body))
	}
}

// TestOnlyStandardLibrary: the package's doc promises net/http and
// encoding/json, no client-go. Every import of its non-test files must be
// from the standard library (no dot in the first path element).
func TestOnlyStandardLibrary(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		parsed, err := parser.ParseFile(fset, f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range parsed.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if first, _, _ := strings.Cut(path, "/"); strings.Contains(first, ".") {
				t.Errorf("%s imports %s: watchapi must need nothing but the standard library", f, path)
			}
		}
	}
}
