package watchapi

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

// A stream recorded from a v1.36.4 apiserver with curl (trimmed objects).
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
	defer close(release)

	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	ev, err := NewDecoder(resp.Body).Next()
	if err != nil || ev.Type != Added {
		t.Fatalf("got %v %v, want the ADDED event while the stream is still open", ev.Type, err)
	}
}

func TestOptionsQuery(t *testing.T) {
	got := Options{ResourceVersion: "42", AllowWatchBookmarks: true, TimeoutSeconds: 30, LabelSelector: "tier=web"}.Query()
	want := "allowWatchBookmarks=true&labelSelector=tier%3Dweb&resourceVersion=42&timeoutSeconds=30&watch=1"
	if got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}
