package lab_test

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"testing"

	"k8s.io/client-go/rest"

	"github.com/listwatch-labs/listwatch-labs/labkit"
	"github.com/listwatch-labs/listwatch-labs/labs/03-watchserver/apiserver"
)

// badRequests are the invalid LIST and WATCH requests whose Status the two
// servers must agree on: code, reason, message and details, field by field.
// Two bad requests are not here. timeoutSeconds=-1: the real server
// answers it with an ERROR event or an empty stream depending on a race
// between the event and its already-expired timer (ours lets the storage
// decide: memstorage.TestExpiredContext). And a too-old resourceVersion:
// every watch on the real apiserver is served by its Cacher
// (`CacheDelegator.Watch`, k8s.io/apiserver@v0.37.0/pkg/storage/cacher/delegator.go:96-107;
// a cache that is not ready answers 429, `NewTooManyRequests`,
// k8s.io/apiserver@v0.37.0/pkg/storage/cacher/cacher.go:532-533), whose
// window starts at the list it made when the apiserver started, and on a
// cluster this young it still holds every event since. An RV is too old
// there only after a restart (lab 01's restart scenario); the too-old
// scenario shows ours.
var badRequests = []string{
	"watch=1&timeoutSeconds=abc",
	"watch=1&timeoutSeconds=1.5",
	"limit=abc",
	"watch=1&resourceVersionMatch=NotOlderThan",
	"watch=1&resourceVersionMatch=Exact",
	"watch=1&resourceVersionMatch=Bogus",
	"watch=1&sendInitialEvents=true",
	"watch=1&sendInitialEvents=true&resourceVersionMatch=Exact",
	"watch=1&sendInitialEvents=false&resourceVersionMatch=NotOlderThan&continue=abc",
	"resourceVersionMatch=Exact",
	"resourceVersion=0&resourceVersionMatch=Exact",
	"resourceVersion=1&resourceVersionMatch=Bogus",
	"sendInitialEvents=true",
	"sendInitialEvents=false",
	"watch=1&labelSelector=a%20in",
	"watch=1&labelSelector=a%3D%3Db%3D",
	"watch=1&labelSelector=-bad%3Dx",
	"watch=1&fieldSelector=data.x%3Dy",
	"watch=1&fieldSelector=metadata.uid%3Dy",
	"watch=1&fieldSelector=a%3D%3D%3Db",
	"watch=1&resourceVersion=abc",
	"resourceVersion=abc",
	"resourceVersion=-1",
}

// badPodRequests are checked on pods: their field selectors are the pod's
// own (`AddFieldLabelConversionFunc`, k8s.io/kubernetes@v1.37.0/pkg/apis/core/v1/conversion.go:34-51), with its
// own error message.
var badPodRequests = []string{
	"fieldSelector=spec.bogus%3Dx",
	"watch=1&fieldSelector=spec.nodeName%3Dn%2Cstatus.bogus%3Dy",
	"watch=1&fieldSelector=spec.nodeName%3Dn&resourceVersion=abc",
}

// TestBadRequestsMatchRealServer sends every bad request to the real
// apiserver and to our server and compares the Statuses.
func TestBadRequestsMatchRealServer(t *testing.T) {
	t.Parallel()
	cluster := labkit.Current()
	lab, err := apiserver.Start(apiserver.Config{Listen: "127.0.0.1:0", HistorySize: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer lab.Close()
	post(t, lab, "a") // so there is a write on both
	labClient := &http.Client{Transport: &http.Transport{TLSClientConfig: tlsConfigFor(t, lab.CAPEM)}}
	defer labClient.CloseIdleConnections()
	realClient, err := rest.HTTPClientFor(cluster.Config)
	if err != nil {
		t.Fatal(err)
	}

	requests := make([]string, 0, len(badRequests)+len(badPodRequests))
	for _, query := range badRequests {
		requests = append(requests, "configmaps?"+query)
	}
	for _, query := range badPodRequests {
		requests = append(requests, "pods?"+query)
	}
	for _, query := range requests {
		path := "/api/v1/namespaces/default/" + query
		want := fetchStatus(t, realClient, cluster.Server+path, "")
		got := fetchStatus(t, labClient, lab.URL+path, lab.Token)
		if !reflect.DeepEqual(got, want) {
			g, _ := json.Marshal(got)
			w, _ := json.Marshal(want)
			t.Errorf("%s\n ours: %s\n real: %s", query, g, w)
		}
	}
}

// fetchStatus GETs url and returns the Status in the body as a generic map.
func fetchStatus(t *testing.T, client *http.Client, url, token string) map[string]any {
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
	body, _ := io.ReadAll(resp.Body)
	var doc map[string]any
	if err := json.Unmarshal(body, &doc); err != nil || doc["kind"] != "Status" {
		t.Fatalf("%s: HTTP %d, body %q is not a Status", url, resp.StatusCode, body)
	}
	if code, _ := doc["code"].(float64); int(code) != resp.StatusCode {
		t.Fatalf("%s: HTTP %d but Status code %v", url, resp.StatusCode, doc["code"])
	}
	return doc
}

func post(t *testing.T, in *apiserver.Instance, name string) {
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
