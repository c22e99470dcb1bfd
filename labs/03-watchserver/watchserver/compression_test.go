package watchserver

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"
	"k8s.io/apiserver/pkg/features"
	"k8s.io/apiserver/pkg/storage"

	"github.com/listwatch-labs/listwatch-labs/labkit"
)

// gzipMembers splits a gzip body into its members and returns each one
// decompressed, failing the test if the body is not whole gzip members.
// It also checks each member's header: XFL 4 is what compress/gzip writes
// at level 1 (BestSpeed), upstream's gzipContentEncodingLevel.
func gzipMembers(t *testing.T, body []byte) []string {
	t.Helper()
	br := bufio.NewReader(bytes.NewReader(body))
	var members []string
	for {
		if _, err := br.Peek(1); err == io.EOF {
			return members
		}
		header, _ := br.Peek(10)
		if len(header) == 10 && header[8] != 4 {
			t.Errorf("member %d: XFL %d, want 4 (gzip level 1)", len(members)+1, header[8])
		}
		zr, err := gzip.NewReader(br)
		if err != nil {
			t.Fatalf("member %d: %v", len(members)+1, err)
		}
		zr.Multistream(false) // stop at this member's end
		data, err := io.ReadAll(zr)
		if err != nil {
			t.Fatalf("member %d: %v", len(members)+1, err)
		}
		members = append(members, string(data))
	}
}

func initialEventsEnd(rv string) watch.Event {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{ResourceVersion: rv,
		Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"}}}
	return watch.Event{Type: watch.Bookmark, Object: cm}
}

// TestWatchListIsGzipOneMemberPerFlush: a watch-list that accepts gzip is
// gzip, one member per flush; the initial-events-end bookmark ends a member
// even when another event already waits (the flush after it), and the
// events after it are gzip too, in members of their own.
func TestWatchListIsGzipOneMemberPerFlush(t *testing.T) {
	initial := []watch.Event{testEvent(watch.Added, "a", 1), testEvent(watch.Added, "b", 2), initialEventsEnd("2")}
	later := testEvent(watch.Modified, "a", 3)
	src := newFakeSource(4)
	for _, ev := range append(initial, later) {
		src.ch <- ev // all waiting before the server starts
	}
	close(src.ch)
	server := newServer(src)
	server.IsWatchListRequest, server.WatchListCompression = true, true
	rec := &flushCounter{ResponseRecorder: httptest.NewRecorder()}
	req := httptest.NewRequest("GET", "/", nil)
	req.Header.Set("Accept-Encoding", "gzip")
	server.HandleHTTP(rec, req)

	if got := rec.Header().Get("Content-Encoding"); got != "gzip" {
		t.Fatalf("Content-Encoding %q, want gzip", got)
	}
	if got := rec.Header().Get("Vary"); got != "Accept-Encoding" {
		t.Fatalf("Vary %q, want Accept-Encoding", got)
	}
	var all strings.Builder
	for _, ev := range append(initial, later) {
		all.WriteString(frame(t, ev))
	}
	members := gzipMembers(t, rec.Body.Bytes())
	if got := strings.Join(members, ""); got != all.String() {
		t.Fatalf("the members together are not the frames in order: %s", labkit.Diff(all.String(), got))
	}
	// The later event waited in the channel when the bookmark was written,
	// so flushNow did not flush there (with flush.go's solution): only the
	// flush after the initial-events end made the bookmark end a member.
	// The later event is then a member of its own, gzip too.
	bookmark := frame(t, initial[len(initial)-1])
	if len(members) < 2 || !strings.HasSuffix(members[len(members)-2], bookmark) || members[len(members)-1] != frame(t, later) {
		t.Fatalf("members %q: want the bookmark to end a member and the later event in the next one", members)
	}
}

// TestOtherWatchesArePlain: gzip needs all three: a watch-list, gzip in
// Accept-Encoding and the gate on.
func TestOtherWatchesArePlain(t *testing.T) {
	cases := []struct {
		name            string
		watchList, gate bool
		acceptEncoding  string
	}{
		{"plain watch", false, true, "gzip"},
		{"no Accept-Encoding", true, true, ""},
		{"another encoding", true, true, "br, deflate"},
		{"gate off", true, false, "gzip"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev := testEvent(watch.Added, "a", 1)
			src := newFakeSource(2)
			src.ch <- ev
			src.ch <- initialEventsEnd("1")
			close(src.ch)
			server := newServer(src)
			server.IsWatchListRequest, server.WatchListCompression = c.watchList, c.gate
			rec := &flushCounter{ResponseRecorder: httptest.NewRecorder()}
			req := httptest.NewRequest("GET", "/", nil)
			if c.acceptEncoding != "" {
				req.Header.Set("Accept-Encoding", c.acceptEncoding)
			}
			server.HandleHTTP(rec, req)
			if got := rec.Header().Get("Content-Encoding"); got != "" {
				t.Fatalf("Content-Encoding %q, want none", got)
			}
			if want := frame(t, ev) + frame(t, initialEventsEnd("1")); rec.Body.String() != want {
				t.Fatalf("body: %s", labkit.Diff(want, rec.Body.String()))
			}
		})
	}
}

// TestContentEncodingSupportedAsUpstream compares ours with upstream's
// responsewriters.ContentEncodingSupported, gate WatchListCompression at
// its 1.37 default (on), on the same Accept-Encoding headers.
func TestContentEncodingSupportedAsUpstream(t *testing.T) {
	for _, accept := range []string{"", "gzip", "gzip, deflate", "br,gzip", " gzip ", "gzip;q=1.0", "GZIP", "deflate", "identity", "x-gzip"} {
		req := httptest.NewRequest("GET", "/", nil)
		if accept != "" {
			req.Header.Set("Accept-Encoding", accept)
		}
		want := responsewriters.ContentEncodingSupported(req, features.WatchListCompression)
		if got := ContentEncodingSupported(req, true); got != want {
			t.Errorf("Accept-Encoding %q: ours %q, upstream %q", accept, got, want)
		}
	}
}

// TestInitialEventsEndIsUpstreams: the bookmark we flush after is the one
// storage.HasInitialEventsEndBookmarkAnnotation recognises, and only that.
func TestInitialEventsEndIsUpstreams(t *testing.T) {
	if !isInitialEventsEnd(initialEventsEnd("5")) {
		t.Error("the annotated bookmark is not recognised")
	}
	plain := watch.Event{Type: watch.Bookmark, Object: &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "5"}}}
	if isInitialEventsEnd(plain) {
		t.Error("a plain bookmark is taken for the initial-events end")
	}
	if ok, _ := storage.HasInitialEventsEndBookmarkAnnotation(initialEventsEnd("5").Object); !ok {
		t.Error("upstream does not recognise our test bookmark")
	}
}
