package labkit

import (
	"fmt"
	"math/rand/v2"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// The streams in testdata/streams were recorded with curl from a labcluster
// (Kubernetes v1.37.0): see testdata/streams/README.md.

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
	// kube-root-ca.crt was made before the watch began, so although it is
	// seen last, its label is the smallest: labels follow resourceVersion
	// order, not the order of appearance.
	got := transcriptOf(t, nil, "create-patch-delete.json", "list.json")
	want := `ADDED ConfigMap cm-a rv2
MODIFIED ConfigMap cm-a rv3
DELETED ConfigMap cm-a rv4
ADDED ConfigMap cm-b rv5
ADDED ConfigMap cm-c rv6
LIST ConfigMapList >=rv6 items=3
ITEM ConfigMap cm-b rv5
ITEM ConfigMap cm-c rv6
ITEM ConfigMap kube-root-ca.crt rv1
`
	if got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}

func TestTranscriptInitialEventsBookmark(t *testing.T) {
	got := transcriptOf(t, nil, "initial-events.json")
	// The initial events come in key order (namespace/name), not in
	// resourceVersion order; the bookmark is at or after all of them.
	want := `ADDED ConfigMap cm-b rv2
ADDED ConfigMap cm-c rv3
ADDED ConfigMap kube-root-ca.crt rv1
BOOKMARK ConfigMap >=rv3 k8s.io/initial-events-end=true
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
	// 150 is at or above both object resourceVersions (100 and 120), so the
	// second BOOKMARK is >=rv2 although it came before the MODIFIED event.
	want := `ADDED ConfigMap a rv1
BOOKMARK ConfigMap >=rv1
BOOKMARK ConfigMap >=rv2
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

// TestTranscriptLabelsFollowRVOrder feeds frames with random resourceVersions
// in shuffled order and checks the rule of labkit/README.md on every pair of
// lines: object labels compare as the real resourceVersions do, and a
// collection's >=rvN names the biggest object resourceVersion at or below it.
func TestTranscriptLabelsFollowRVOrder(t *testing.T) {
	label := regexp.MustCompile(`(>=)?rv(\d+)`)
	for seed := uint64(0); seed < 200; seed++ {
		r := rand.New(rand.NewPCG(seed, 1))
		type entry struct {
			rv         uint64
			collection bool
		}
		var entries []entry
		tr := NewTranscript()
		for i := 0; i < 2+r.IntN(20); i++ {
			e := entry{rv: 1 + r.Uint64N(50), collection: r.IntN(4) == 0}
			var frame string
			switch {
			case e.collection:
				frame = fmt.Sprintf(`{"type":"BOOKMARK","object":{"kind":"ConfigMap","metadata":{"resourceVersion":"%d"}}}`, e.rv)
			default:
				typ := []string{"ADDED", "MODIFIED", "DELETED"}[r.IntN(3)]
				frame = fmt.Sprintf(`{"type":%q,"object":{"kind":"ConfigMap","metadata":{"name":"o%d","resourceVersion":"%d"}}}`, typ, i, e.rv)
			}
			if err := tr.Add([]byte(frame)); err != nil {
				t.Fatal(err)
			}
			entries = append(entries, e)
		}
		lines := tr.Lines()
		if len(lines) != len(entries) {
			t.Fatalf("seed %d: %d lines for %d frames", seed, len(lines), len(entries))
		}
		labels := make([]int, len(lines))
		for i, l := range lines {
			m := label.FindStringSubmatch(l)
			if m == nil || (m[1] == ">=") != entries[i].collection {
				t.Fatalf("seed %d: line %q has the wrong kind of label", seed, l)
			}
			labels[i], _ = strconv.Atoi(m[2])
		}
		for i := range entries {
			for j := range entries {
				a, b := entries[i], entries[j]
				switch {
				case !a.collection && !b.collection:
					if (a.rv < b.rv) != (labels[i] < labels[j]) || (a.rv == b.rv) != (labels[i] == labels[j]) {
						t.Fatalf("seed %d: rv %d is %q, rv %d is %q:\n%s", seed, a.rv, lines[i], b.rv, lines[j], tr)
					}
				case a.collection && !b.collection:
					// >=rvN: every object at or below the collection RV has
					// a label <= N, every object above it a label > N.
					if (b.rv <= a.rv) != (labels[j] <= labels[i]) {
						t.Fatalf("seed %d: collection rv %d is %q, object rv %d is %q:\n%s", seed, a.rv, lines[i], b.rv, lines[j], tr)
					}
				}
			}
		}
	}
}
