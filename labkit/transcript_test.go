package labkit

import (
	"os"
	"strings"
	"testing"
)

// The streams in testdata/streams were recorded with curl from a labcluster
// (Kubernetes v1.36.4): see testdata/streams/README.md.

func transcriptOf(t *testing.T, fields []string, files ...string) string {
	t.Helper()
	tr := NewTranscript(fields...)
	for _, f := range files {
		b, err := os.ReadFile("testdata/streams/" + f)
		if err != nil {
			t.Fatal(err)
		}
		if err := tr.AddStream(strings.NewReader(string(b))); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
	}
	return tr.String()
}

func TestTranscriptRecordedWatch(t *testing.T) {
	got := transcriptOf(t, []string{"data.color"}, "create-patch-delete.json")
	want := `ADDED ConfigMap cm-a rv1 data.color=blue
MODIFIED ConfigMap cm-a rv2 data.color=green
DELETED ConfigMap cm-a rv3 data.color=green
ADDED ConfigMap cm-b rv4 data.color=red
ADDED ConfigMap cm-c rv5 data.color=red
`
	if got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}

func TestTranscriptListThenWatchShareNumbering(t *testing.T) {
	// The List was taken after the watch above: its items carry the same
	// resourceVersions as the ADDED events, so they get the same labels, and
	// the List's own resourceVersion is at or after the newest of them.
	got := transcriptOf(t, nil, "create-patch-delete.json", "list.json")
	want := `ADDED ConfigMap cm-a rv1
MODIFIED ConfigMap cm-a rv2
DELETED ConfigMap cm-a rv3
ADDED ConfigMap cm-b rv4
ADDED ConfigMap cm-c rv5
LIST ConfigMapList >=rv5 items=3
ITEM ConfigMap cm-b rv4
ITEM ConfigMap cm-c rv5
ITEM ConfigMap kube-root-ca.crt rv6
`
	if got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}

func TestTranscriptInitialEventsBookmark(t *testing.T) {
	got := transcriptOf(t, nil, "initial-events.json")
	want := `ADDED ConfigMap cm-b rv1
ADDED ConfigMap cm-c rv2
ADDED ConfigMap kube-root-ca.crt rv3
BOOKMARK ConfigMap >=rv2 k8s.io/initial-events-end=true
`
	if got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}

func TestTranscriptStatuses(t *testing.T) {
	got := transcriptOf(t, nil, "status-500.json", "expired.json")
	want := `STATUS Failure 500 (none) "resourceVersion: Invalid value: \"abc\": strconv.ParseUint: parsing \"abc\": invalid syntax"
ERROR Status Failure 410 Expired "too old resource version: >=rv0 (>=rv0)"
`
	if got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}

func TestTranscriptCollectionRVIsRelative(t *testing.T) {
	tr := NewTranscript()
	for _, f := range []string{
		`{"type":"ADDED","object":{"kind":"ConfigMap","metadata":{"name":"a","resourceVersion":"100"}}}`,
		`{"type":"BOOKMARK","object":{"kind":"ConfigMap","metadata":{"resourceVersion":"100"}}}`,
		`{"type":"BOOKMARK","object":{"kind":"ConfigMap","metadata":{"resourceVersion":"150"}}}`,
		`{"type":"MODIFIED","object":{"kind":"ConfigMap","metadata":{"name":"a","resourceVersion":"120"}}}`,
		`{"type":"ERROR","object":{"kind":"Status","status":"Failure","code":410,"reason":"Expired","message":"too old resource version: 100 (149)"}}`,
	} {
		if err := tr.Add([]byte(f)); err != nil {
			t.Fatal(err)
		}
	}
	want := `ADDED ConfigMap a rv1
BOOKMARK ConfigMap >=rv1
BOOKMARK ConfigMap >=rv1
MODIFIED ConfigMap a rv2
ERROR Status Failure 410 Expired "too old resource version: >=rv1 (>=rv2)"
`
	if got := tr.String(); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}

func TestTranscriptBadInput(t *testing.T) {
	for name, in := range map[string]string{
		"cut off":      `{"type":"ADDED","object":{"kind":"ConfigMap"`,
		"no object":    `{"type":"ADDED"}`,
		"unknown type": `{"type":"RENAMED","object":{}}`,
		"not an event": `{"kind":"ConfigMap"}`,
		"not json":     `hello`,
	} {
		err := NewTranscript().AddStream(strings.NewReader(in))
		if err == nil {
			t.Errorf("%s: no error for %q", name, in)
		}
	}
}

func TestDescribeChunksRecorded(t *testing.T) {
	raw, err := os.ReadFile("testdata/streams/raw-chunked.txt")
	if err != nil {
		t.Fatal(err)
	}
	got, err := DescribeChunks(raw)
	if err != nil {
		t.Fatal(err)
	}
	// Five events replayed from the watch cache at once: written before any
	// flush, they fill Go's 2 KiB chunking buffer, so the first chunk ends in
	// the middle of the fifth frame.
	want := `chunk 1: 4 frames (ADDED ConfigMap cm-a, MODIFIED ConfigMap cm-a, DELETED ConfigMap cm-a, ADDED ConfigMap cm-b) + the start of the next
chunk 2: 1 frame (ADDED ConfigMap cm-c, begun in chunk 1)
end: terminating chunk
`
	if got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}

func TestDescribeChunksBroken(t *testing.T) {
	for name, in := range map[string]string{
		"size not hex":       "zz\r\n{}\r\n0\r\n\r\n",
		"no crlf after data": "5\r\nhello!!0\r\n\r\n",
		"no size crlf":       "5",
		"ends inside frame":  "2\r\n{}\r\n0\r\n\r\n",
	} {
		if _, err := DescribeChunks([]byte(in)); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	got, err := DescribeChunks([]byte("3\r\n{}\n\r\n"))
	want := "chunk 1: 1 frame (not a watch event)\nend: no terminating chunk (the connection was cut)\n"
	if err != nil || got != want {
		t.Errorf("cut stream: got %q, %v; want %q", got, err, want)
	}
}

func TestTranscriptSquashBookmarks(t *testing.T) {
	frames := []string{
		`{"type":"ADDED","object":{"kind":"ConfigMap","metadata":{"name":"a","resourceVersion":"10"}}}`,
		`{"type":"BOOKMARK","object":{"kind":"ConfigMap","metadata":{"resourceVersion":"11"}}}`,
		`{"type":"BOOKMARK","object":{"kind":"ConfigMap","metadata":{"resourceVersion":"12"}}}`,
	}
	for _, squash := range []bool{false, true} {
		tr := NewTranscript()
		tr.SquashBookmarks = squash
		for _, f := range frames {
			if err := tr.Add([]byte(f)); err != nil {
				t.Fatal(err)
			}
		}
		want := 3
		if squash {
			want = 2
		}
		if got := len(tr.Lines()); got != want {
			t.Errorf("squash=%v: %d lines, want %d:\n%s", squash, got, want, tr)
		}
	}
}
