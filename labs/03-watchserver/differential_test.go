package lab_test

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"k8s.io/client-go/rest"

	"github.com/listwatch-labs/listwatch-labs/labkit"
	"github.com/listwatch-labs/listwatch-labs/labs/03-watchserver/watchserver"
)

// badRequests are the invalid LIST and WATCH requests whose Status the two
// servers must agree on: code, reason, message and details, field by field.
// "stream" marks the ones the real server accepts with 200 and then fails
// with an ERROR event: the Status is the event's object.
var badRequests = []struct {
	query  string
	stream bool
}{
	{"watch=1&timeoutSeconds=abc", false},
	{"watch=1&timeoutSeconds=1.5", false},
	{"limit=abc", false},
	{"watch=1&resourceVersionMatch=NotOlderThan", false},
	{"watch=1&resourceVersionMatch=Exact", false},
	{"watch=1&resourceVersionMatch=Bogus", false},
	{"watch=1&sendInitialEvents=true", false},
	{"watch=1&sendInitialEvents=true&resourceVersionMatch=Exact", false},
	{"watch=1&sendInitialEvents=false&resourceVersionMatch=NotOlderThan&continue=abc", false},
	{"resourceVersionMatch=Exact", false},
	{"resourceVersion=0&resourceVersionMatch=Exact", false},
	{"resourceVersion=1&resourceVersionMatch=Bogus", false},
	{"sendInitialEvents=true", false},
	{"sendInitialEvents=false", false},
	{"watch=1&labelSelector=a%20in", false},
	{"watch=1&labelSelector=a%3D%3Db%3D", false},
	{"watch=1&labelSelector=-bad%3Dx", false},
	{"watch=1&fieldSelector=data.x%3Dy", false},
	{"watch=1&fieldSelector=metadata.uid%3Dy", false},
	{"watch=1&fieldSelector=a%3D%3D%3Db", false},
	{"watch=1&resourceVersion=abc", false},
	{"resourceVersion=abc", false},
	{"resourceVersion=-1", false},
	{"watch=1&resourceVersion=1&timeoutSeconds=1", true},
}

// TestBadRequestsMatchRealServer sends every bad request to the real
// apiserver and to our server and compares the Statuses.
func TestBadRequestsMatchRealServer(t *testing.T) {
	cluster := labkit.Current()
	lab, err := watchserver.Start(watchserver.Config{Listen: "127.0.0.1:0", HistorySize: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer lab.Close()
	// Three writes, so RV 1 is older than our one-event history, as it is
	// older than the real watch cache.
	for _, name := range []string{"a", "b", "c"} {
		post(t, lab, name)
	}
	labClient := &http.Client{Transport: &http.Transport{TLSClientConfig: tlsConfigFor(t, lab.CAPEM)}}
	defer labClient.CloseIdleConnections()
	realClient, err := rest.HTTPClientFor(cluster.Config)
	if err != nil {
		t.Fatal(err)
	}

	for _, tc := range badRequests {
		path := "/api/v1/namespaces/default/configmaps?" + tc.query
		want := fetchStatus(t, realClient, cluster.Server+path, "", tc.stream)
		got := fetchStatus(t, labClient, lab.URL+path, lab.Token, tc.stream)
		// The numbers in "too old resource version: X (Y)" are each server's own.
		if tc.query == "watch=1&resourceVersion=1&timeoutSeconds=1" {
			want["message"], got["message"] = prefix(want["message"]), prefix(got["message"])
		}
		if !reflect.DeepEqual(got, want) {
			g, _ := json.Marshal(got)
			w, _ := json.Marshal(want)
			t.Errorf("?%s\n ours: %s\n real: %s", tc.query, g, w)
		}
	}
}

func prefix(msg any) any {
	s, _ := msg.(string)
	if i := strings.Index(s, ":"); i >= 0 {
		return s[:i]
	}
	return s
}

// fetchStatus GETs url and returns the Status as a generic map: the
// response body, or the first event's object for a streamed error.
func fetchStatus(t *testing.T, client *http.Client, url, token string, stream bool) map[string]any {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var doc map[string]any
	if stream {
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: HTTP %d, want 200 and an ERROR event", url, resp.StatusCode)
		}
		line, _ := bufio.NewReader(resp.Body).ReadBytes('\n')
		var ev struct {
			Type   string         `json:"type"`
			Object map[string]any `json:"object"`
		}
		if err := json.Unmarshal(line, &ev); err != nil || ev.Type != "ERROR" {
			t.Fatalf("%s: first frame %q, want an ERROR event", url, line)
		}
		return ev.Object
	}
	body, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatalf("%s: HTTP %d, body %q is not a Status", url, resp.StatusCode, body)
	}
	if int(doc["code"].(float64)) != resp.StatusCode {
		t.Fatalf("%s: HTTP %d but Status code %v", url, resp.StatusCode, doc["code"])
	}
	return doc
}

func post(t *testing.T, in *watchserver.Instance, name string) {
	t.Helper()
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: tlsConfigFor(t, in.CAPEM)}}
	defer client.CloseIdleConnections()
	req, _ := http.NewRequest(http.MethodPost, in.URL+"/api/v1/namespaces/other/configmaps",
		bytes.NewBufferString(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"`+name+`"}}`))
	req.Header.Set("Authorization", "Bearer "+in.Token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create %s: HTTP %d", name, resp.StatusCode)
	}
}

func tlsConfigFor(t *testing.T, caPEM []byte) *tls.Config {
	t.Helper()
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		t.Fatal("no CA certificate")
	}
	return &tls.Config{RootCAs: pool}
}
