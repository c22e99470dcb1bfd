package lab_test

// Tests of what the README says the real kube-apiserver does, each run
// against the real one (this test binary's cluster) and, where ours does the
// same, against ours. Each README sentence names its test.

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"k8s.io/client-go/rest"

	"github.com/listwatch-labs/listwatch-labs/labkit"
	"github.com/listwatch-labs/listwatch-labs/labs/03-watchserver/apiserver"
)

// realAndLab returns HTTP clients (with their credentials) and base URLs for
// the real apiserver and a fresh lab server.
func realAndLab(t *testing.T) (real, lab *http.Client, realURL, labURL, labToken string) {
	t.Helper()
	cluster := labkit.Current()
	in, err := apiserver.Start(apiserver.Config{Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close() })
	lab = &http.Client{Transport: &http.Transport{TLSClientConfig: tlsConfigFor(t, in.CAPEM)}}
	t.Cleanup(lab.CloseIdleConnections)
	real, err = rest.HTTPClientFor(cluster.Config)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(real.CloseIdleConnections)
	return real, lab, cluster.Server, in.URL, in.Token
}

func get(t *testing.T, c *http.Client, url, token, accept string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, body
}

// TestWatchContentType: a JSON watch is served as plain application/json by
// both servers; the real one adds ";stream=watch" for protobuf
// (k8s.io/apiserver@v0.36.4/pkg/endpoints/handlers/watch.go,
// serveWatchHandler), which ours does not serve.
func TestWatchContentType(t *testing.T) {
	real, lab, realURL, labURL, labToken := realAndLab(t)
	const path = "/api/v1/namespaces/default/configmaps?watch=1&timeoutSeconds=1"
	for _, s := range []struct {
		name, url, token string
		c                *http.Client
	}{{"real", realURL, "", real}, {"lab", labURL, labToken, lab}} {
		resp, _ := get(t, s.c, s.url+path, s.token, "application/json")
		if got := resp.Header.Get("Content-Type"); got != "application/json" {
			t.Errorf("%s: JSON watch Content-Type %q, want application/json", s.name, got)
		}
	}
	resp, _ := get(t, real, realURL+path, "", "application/vnd.kubernetes.protobuf")
	if got := resp.Header.Get("Content-Type"); got != "application/vnd.kubernetes.protobuf;stream=watch" {
		t.Errorf("real: protobuf watch Content-Type %q, want application/vnd.kubernetes.protobuf;stream=watch", got)
	}
}

// TestNoTokenIsForbiddenOnTheRealServer: the real apiserver takes a request
// without a token as system:anonymous, and RBAC answers 403; ours has no
// anonymous user and answers 401, as both do for a wrong token (exercise
// bad-requests).
func TestNoTokenIsForbiddenOnTheRealServer(t *testing.T) {
	_, lab, realURL, labURL, _ := realAndLab(t)
	cluster := labkit.Current()
	anon := &http.Client{Transport: &http.Transport{TLSClientConfig: tlsConfigFor(t, cluster.CAData)}}
	defer anon.CloseIdleConnections()
	const path = "/api/v1/namespaces/default/configmaps?watch=1&timeoutSeconds=1"
	resp, body := get(t, anon, realURL+path, "", "")
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(body), `User \"system:anonymous\" cannot watch`) {
		t.Errorf("real, no token: HTTP %d %s; want 403 naming system:anonymous", resp.StatusCode, body)
	}
	resp, body = get(t, lab, labURL+path, "", "")
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("lab, no token: HTTP %d %s; want 401", resp.StatusCode, body)
	}
}

// TestTooLargeResourceVersion: a LIST at a resourceVersion the server has
// not reached is a 504 Timeout "Too large resource version" with a retry
// hint, from both servers. The real one answers only after waiting for its
// watch cache to catch up (blockTimeout, 3 s, in
// k8s.io/apiserver@v0.36.4/pkg/storage/cacher/watch_cache.go); ours at once.
func TestTooLargeResourceVersion(t *testing.T) {
	real, lab, realURL, labURL, labToken := realAndLab(t)
	for _, s := range []struct {
		name, url, token string
		c                *http.Client
	}{{"real", realURL, "", real}, {"lab", labURL, labToken, lab}} {
		_, body := get(t, s.c, s.url+"/api/v1/namespaces/default/configmaps", s.token, "")
		var list struct {
			Metadata struct{ ResourceVersion string } `json:"metadata"`
		}
		if err := json.Unmarshal(body, &list); err != nil {
			t.Fatalf("%s: LIST: %v %s", s.name, err, body)
		}
		rv, _ := strconv.ParseUint(list.Metadata.ResourceVersion, 10, 64)
		resp, body := get(t, s.c, fmt.Sprintf("%s/api/v1/namespaces/default/configmaps?resourceVersion=%d&resourceVersionMatch=NotOlderThan", s.url, rv+1000000), s.token, "")
		var st struct {
			Code    int
			Reason  string
			Message string
			Details struct {
				RetryAfterSeconds int
				Causes            []struct{ Reason string }
			}
		}
		json.Unmarshal(body, &st)
		want := fmt.Sprintf("Timeout: Too large resource version: %d, current: ", rv+1000000)
		if resp.StatusCode != http.StatusGatewayTimeout || st.Reason != "Timeout" || !strings.HasPrefix(st.Message, want) ||
			st.Details.RetryAfterSeconds != 1 || len(st.Details.Causes) != 1 || st.Details.Causes[0].Reason != "ResourceVersionTooLarge" {
			t.Errorf("%s: HTTP %d %s; want 504 Timeout %q..., cause ResourceVersionTooLarge, retryAfterSeconds 1", s.name, resp.StatusCode, body, want)
		}
	}
}

// TestExpiredTimeoutOnTheRealServer: timeoutSeconds=-1 makes a context that
// is already done. With resourceVersion "" the real Cacher reads its current
// revision with that context and may answer an ERROR event "context deadline
// exceeded" (k8s.io/apiserver@v0.36.4/pkg/storage/cacher/cacher.go,
// getWatchCacheResourceVersion), or the WatchServer's expired timer ends the
// stream first: an empty 200. With a resourceVersion N there is no such read:
// always an empty 200. Ours: memstorage's TestExpiredContext.
func TestExpiredTimeoutOnTheRealServer(t *testing.T) {
	real, _, realURL, _, _ := realAndLab(t)
	base := realURL + "/api/v1/namespaces/default/configmaps?watch=1&timeoutSeconds=-1"
	_, body := get(t, real, realURL+"/api/v1/namespaces/default/configmaps", "", "")
	var list struct {
		Metadata struct{ ResourceVersion string } `json:"metadata"`
	}
	if err := json.Unmarshal(body, &list); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		resp, body := get(t, real, base+"&resourceVersion="+list.Metadata.ResourceVersion, "", "")
		if resp.StatusCode != 200 || len(body) != 0 {
			t.Fatalf("RV %s: HTTP %d %q; want an empty 200", list.Metadata.ResourceVersion, resp.StatusCode, body)
		}
		resp, body = get(t, real, base, "", "")
		if resp.StatusCode != 200 {
			t.Fatalf(`RV "": HTTP %d %q; want 200`, resp.StatusCode, body)
		}
		if len(body) > 0 && !(strings.Contains(string(body), `"type":"ERROR"`) && strings.Contains(string(body), "context deadline exceeded")) {
			t.Fatalf(`RV "": %q; want nothing or an ERROR event "context deadline exceeded"`, body)
		}
	}
}
