package lab_test

// Gzip watch-lists, new in 1.37 (gate WatchListCompression, beta, on):
// README "Gzip for watch-lists" and DEEPER "What changed in 1.37".

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"k8s.io/client-go/rest"

	"github.com/listwatch-labs/listwatch-labs/labkit"
	"github.com/listwatch-labs/listwatch-labs/labs/03-watchserver/apiserver"
)

// openWatch opens url with Accept-Encoding set by hand ("" sends none
// only on a client whose transport has DisableCompression).
func openWatch(t *testing.T, c *http.Client, url, token, acceptEncoding string) *http.Response {
	t.Helper()
	resp := openWith(t, c, url, token, "Accept-Encoding", acceptEncoding)
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("%s: HTTP %d %s", url, resp.StatusCode, b)
	}
	return resp
}

// watchEvent is the part of a frame these tests read.
type watchEvent struct {
	Type   string
	Object struct {
		Metadata struct {
			Name            string
			ResourceVersion string
			Annotations     map[string]string
		}
	}
}

func (e watchEvent) isInitialEventsEnd() bool {
	return e.Type == "BOOKMARK" && e.Object.Metadata.Annotations["k8s.io/initial-events-end"] == "true"
}

// readMember reads one gzip member from br and returns its frames.
func readMember(t *testing.T, server string, br *bufio.Reader) []watchEvent {
	t.Helper()
	zr, err := gzip.NewReader(br)
	if err != nil {
		t.Fatalf("%s: not a gzip member: %v", server, err)
	}
	zr.Multistream(false)
	data, err := io.ReadAll(zr)
	if err != nil {
		t.Fatalf("%s: %v", server, err)
	}
	var events []watchEvent
	for _, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		var ev watchEvent
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("%s: a member does not hold whole frames (%v): %q", server, err, data)
		}
		events = append(events, ev)
	}
	return events
}

// TestWatchListIsGzipOnBothServers: a watch-list (sendInitialEvents=true,
// allowWatchBookmarks=true) whose request says Accept-Encoding: gzip is
// answered with Content-Encoding: gzip and Vary: Accept-Encoding by the real
// apiserver at 1.37 and by ours. The body is gzip members, each holding whole
// frames; the initial events end at the end of a member, and a change made
// after is a new member: the response stays gzip after the bookmark.
// Accept-Encoding is set by hand, so Go's transport leaves the body as it
// came. A real apiserver at 1.36 answers the same request plain, with no
// Content-Encoding: see wantGzipWatchList.
// rootCA is the ConfigMap the real cluster's controller-manager puts in
// every new namespace, some time after it is made (and the harness puts in
// ours): a watch-list may or may not have it among its initial events.
const rootCA = "kube-root-ca.crt"

func TestWatchListIsGzipOnBothServers(t *testing.T) {
	t.Parallel()
	ns, servers := bothServers(t, "gzip")
	for _, s := range servers {
		base := s.url + "/api/v1/namespaces/" + ns + "/configmaps"
		send(t, s.c, http.MethodPost, base, s.token, "application/json", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"before"}}`)
		resp := openWatch(t, s.c, base+"?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&timeoutSeconds=30", s.token, "gzip")
		if !wantGzipWatchList(t, s.name) {
			plainWatchList(t, s, base, resp)
			continue
		}
		if got := resp.Header.Get("Content-Encoding"); got != "gzip" {
			t.Fatalf("%s: Content-Encoding %q, want gzip", s.name, got)
		}
		if got := resp.Header.Values("Vary"); !containsToken(got, "Accept-Encoding") {
			t.Fatalf("%s: Vary %q, want Accept-Encoding among them", s.name, got)
		}
		br := bufio.NewReader(resp.Body)
		var initial []string
		for end := false; !end; {
			member := readMember(t, s.name, br)
			for i, ev := range member {
				if ev.isInitialEventsEnd() {
					if i != len(member)-1 {
						t.Fatalf("%s: the initial-events-end bookmark is not the last frame of its member", s.name)
					}
					end = true
				} else if ev.Object.Metadata.Name != rootCA {
					initial = append(initial, ev.Type+" "+ev.Object.Metadata.Name)
				}
			}
		}
		if strings.Join(initial, ",") != "ADDED before" {
			t.Fatalf("%s: initial events %q, want [ADDED before]", s.name, initial)
		}
		send(t, s.c, http.MethodPost, base, s.token, "application/json", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"after"}}`)
		for {
			member := readMember(t, s.name, br) // still gzip after the bookmark
			if ev := member[0]; ev.Type == "ADDED" && ev.Object.Metadata.Name == "after" {
				break
			}
			// a BOOKMARK may come first on the real server: read on
		}
	}
}

// wantGzipWatchList tells whether the server named name ("real" or "lab")
// answers a watch-list that accepts gzip with gzip. Ours reproduces 1.37
// and does. The real apiserver does from 1.37 (`WatchListCompression`,
// beta and on, k8s.io/apiserver@v0.37.0/pkg/features/kube_features.go:495-497).
// At 1.36 there is no such gate, and `HandleHTTP` sets Content-Type and
// Transfer-Encoding and nothing else before the stream
// (k8s.io/apiserver@v0.36.4/pkg/endpoints/handlers/watch.go:241-282): its
// only gzip is for a whole response that `SerializeObject` writes, which a
// watch's events are not (k8s.io/apiserver@v0.36.4/pkg/endpoints/handlers/responsewriters/writers.go:92-110).
func wantGzipWatchList(t *testing.T, name string) bool {
	return name != "real" || labkit.ServerMinor(t) >= 37
}

// plainWatchList checks the 1.36 answer to a watch-list that accepts gzip:
// no Content-Encoding, no Vary: Accept-Encoding, plain JSON frames up to
// the initial-events-end bookmark, and a change made after, on the same
// stream.
func plainWatchList(t *testing.T, s server, base string, resp *http.Response) {
	t.Helper()
	if got := resp.Header.Get("Content-Encoding"); got != "" {
		t.Fatalf("%s: Content-Encoding %q, want none (1.36 compresses no watch)", s.name, got)
	}
	if got := resp.Header.Values("Vary"); containsToken(got, "Accept-Encoding") {
		t.Fatalf("%s: Vary %q, want no Accept-Encoding (1.36)", s.name, got)
	}
	dec := json.NewDecoder(resp.Body)
	initial := readInitialEvents(t, s.name+": not plain JSON frames", dec)
	if strings.Join(initial, ",") != "ADDED before" {
		t.Fatalf("%s: initial events %q, want [ADDED before]", s.name, initial)
	}
	send(t, s.c, http.MethodPost, base, s.token, "application/json", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"after"}}`)
	for {
		var ev watchEvent
		if err := dec.Decode(&ev); err != nil {
			t.Fatalf("%s: %v before the ADDED of after", s.name, err)
		}
		if ev.Type == "ADDED" && ev.Object.Metadata.Name == "after" {
			return
		}
		// a BOOKMARK may come first: read on
	}
}

func containsToken(values []string, token string) bool {
	for _, v := range values {
		for _, part := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(part), token) {
				return true
			}
		}
	}
	return false
}

// TestOtherWatchesArePlainOnBothServers: only a watch-list that accepts
// gzip is gzip. Without Accept-Encoding (curl without --compressed), a
// watch that is not a watch-list (from a resourceVersion, or
// sendInitialEvents without allowWatchBookmarks), both servers answer
// plain JSON, with no Content-Encoding.
func TestOtherWatchesArePlainOnBothServers(t *testing.T) {
	t.Parallel()
	ns, servers := bothServers(t, "plain")
	// Clients that send no Accept-Encoding of their own.
	cluster := labkit.Current()
	cfg := rest.CopyConfig(cluster.Config)
	cfg.DisableCompression = true
	realPlain, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	labPlain := &http.Client{Transport: servers[1].c.Transport.(*http.Transport).Clone()}
	labPlain.Transport.(*http.Transport).DisableCompression = true
	t.Cleanup(labPlain.CloseIdleConnections)
	plain := map[string]*http.Client{"real": realPlain, "lab": labPlain}

	const list = "?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&timeoutSeconds=1"
	cases := []struct{ name, query, acceptEncoding string }{
		{"no Accept-Encoding", list, ""},
		{"not a watch-list: from a resourceVersion", "?watch=1&resourceVersion=RV&allowWatchBookmarks=true&timeoutSeconds=1", "gzip"},
		{"not a watch-list: no bookmarks", "?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&timeoutSeconds=1", "gzip"},
	}
	for _, s := range servers {
		base := s.url + "/api/v1/namespaces/" + ns + "/configmaps"
		_, listBody := get(t, s.c, base, s.token, "application/json")
		var list struct {
			Metadata struct{ ResourceVersion string }
		}
		if err := json.Unmarshal(listBody, &list); err != nil || list.Metadata.ResourceVersion == "" {
			t.Fatalf("%s: LIST %q: %v", s.name, listBody, err)
		}
		for _, c := range cases {
			query := strings.Replace(c.query, "RV", list.Metadata.ResourceVersion, 1)
			resp := openWatch(t, plain[s.name], base+query, s.token, c.acceptEncoding)
			if got := resp.Header.Get("Content-Encoding"); got != "" {
				t.Errorf("%s, %s: Content-Encoding %q, want none", s.name, c.name, got)
			}
			body := readBody(t, resp)
			if len(body) > 0 && body[0] != '{' {
				t.Errorf("%s, %s: body is not plain JSON: %q", s.name, c.name, body)
			}
		}
	}
}

// TestGoClientDecodesGzipWatchList: a Go client that leaves Accept-Encoding
// to its transport gets the gzip watch-list decompressed for it
// (resp.Uncompressed), as every client-go informer does: the frames read as
// plain JSON, one per line, on both servers. From a real apiserver at 1.36
// the watch-list comes plain (wantGzipWatchList), so there is nothing to
// decompress, and the frames read the same.
func TestGoClientDecodesGzipWatchList(t *testing.T) {
	t.Parallel()
	ns, servers := bothServers(t, "gunzip")
	for _, s := range servers {
		base := s.url + "/api/v1/namespaces/" + ns + "/configmaps"
		send(t, s.c, http.MethodPost, base, s.token, "application/json", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"one"}}`)
		resp := openWatch(t, s.c, base+"?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&timeoutSeconds=30", s.token, "")
		if want := wantGzipWatchList(t, s.name); resp.Uncompressed != want {
			t.Fatalf("%s: decompressed by the transport: %v, want %v (Content-Encoding %q; without it the server sent no gzip, or the request did not come from the transport's own Accept-Encoding)", s.name, resp.Uncompressed, want, resp.Header.Get("Content-Encoding"))
		}
		got := readInitialEvents(t, s.name, json.NewDecoder(resp.Body))
		if strings.Join(got, ",") != "ADDED one" {
			t.Fatalf("%s: initial events %q, want [ADDED one]", s.name, got)
		}
	}
}

// TestWatchListCompressionCanBeTurnedOff: our server's option
// DisableWatchListCompression (cmd/watchserver --watch-list-compression=false)
// is kube-apiserver's --feature-gates=WatchListCompression=false: the
// watch-list that would be gzip is plain.
func TestWatchListCompressionCanBeTurnedOff(t *testing.T) {
	t.Parallel()
	in, _ := startLabServer(t, apiserver.Config{DisableWatchListCompression: true})
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: tlsConfigFor(t, in.CAPEM)}}
	t.Cleanup(c.CloseIdleConnections)
	resp := openWatch(t, c, in.URL+"/api/v1/namespaces/default/configmaps?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&timeoutSeconds=1", in.Token, "gzip")
	if got := resp.Header.Get("Content-Encoding"); got != "" {
		t.Fatalf("Content-Encoding %q with compression turned off, want none", got)
	}
	if body := readBody(t, resp); len(body) == 0 || body[0] != '{' {
		t.Fatalf("body is not plain JSON: %q", body)
	}
}

// readInitialEvents decodes a watch-list's frames up to its
// initial-events-end bookmark and returns them as "TYPE name", leaving out
// kube-root-ca.crt (the real apiserver's controller adds it to every
// namespace). A frame that does not decode fails the test, prefixed by what.
func readInitialEvents(t *testing.T, what string, dec *json.Decoder) []string {
	t.Helper()
	var got []string
	for {
		var ev watchEvent
		if err := dec.Decode(&ev); err != nil {
			t.Fatalf("%s: %v after %q", what, err, got)
		}
		if ev.isInitialEventsEnd() {
			return got
		}
		if ev.Object.Metadata.Name != rootCA {
			got = append(got, ev.Type+" "+ev.Object.Metadata.Name)
		}
	}
}
