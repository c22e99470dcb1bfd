package lab_test

// Tests of what the README says the real kube-apiserver does, each run
// against the real one (this test binary's cluster) and, where ours does the
// same, against ours. Each README sentence names its test.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

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

// startLabServer starts a lab server for one test, stopped when the test
// ends, and returns it with a rest.Config for it. Before it stops, the
// test's client-go clients of that config (which share the transport
// client-go caches for it) close their idle connections: one left open would
// make Close wait a second for the client to hang up after its GOAWAY
// (net/http's http2goAwayTimeout).
func startLabServer(t *testing.T, cfg apiserver.Config) (*apiserver.Instance, *rest.Config) {
	t.Helper()
	cfg.Listen = "127.0.0.1:0"
	in, err := apiserver.Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close() })
	restCfg, err := clientcmd.RESTConfigFromKubeConfig(in.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // cleanups run last first: before Close
		if rt, err := rest.TransportFor(restCfg); err == nil {
			utilnet.CloseIdleConnectionsFor(rt)
		}
	})
	return in, restCfg
}

// server is one of the two servers a claim is checked on.
type server struct {
	name, url, token string
	c                *http.Client
}

// twoServers is realAndLab as a list: the real apiserver (its client carries
// the credentials), then ours (its token sent by hand).
func twoServers(t *testing.T) []server {
	real, lab, realURL, labURL, labToken := realAndLab(t)
	return []server{{"real", realURL, "", real}, {"lab", labURL, labToken, lab}}
}

// bothServers is twoServers and a namespace PREFIX-N made on the real cluster
// (ours needs none) and deleted when the test ends.
func bothServers(t *testing.T, prefix string) (string, []server) {
	servers := twoServers(t)
	ns := fmt.Sprintf("%s-%d", prefix, time.Now().UnixNano())
	cluster := labkit.Current()
	if _, err := cluster.Client.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cluster.Client.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})
	})
	return ns, servers
}

// get sends a GET and reads its whole answer.
func get(t *testing.T, c *http.Client, url, token, accept string) (*http.Response, []byte) {
	t.Helper()
	resp := open(t, c, url, token, accept)
	return resp, readBody(t, resp)
}

// open sends a GET and returns once the answer's headers are in, its body
// left to readBody. A watch's body ends only at its timeoutSeconds: a test
// that opens all its watches first and then reads them waits that second
// once, not once per watch.
func open(t *testing.T, c *http.Client, url, token, accept string) *http.Response {
	t.Helper()
	return openWith(t, c, url, token, "Accept", accept)
}

// openWith is open with header set to value (none when value is "").
func openWith(t *testing.T, c *http.Client, url, token, header, value string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if value != "" {
		req.Header.Set(header, value)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() }) // a test that fails before reading it
	return resp
}

// readBody reads an answer's body to its end and closes it.
func readBody(t *testing.T, resp *http.Response) []byte {
	t.Helper()
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return body
}

// TestWatchContentType: a JSON watch is served as plain application/json by
// both servers; the real one adds ";stream=watch" for protobuf
// (`mediaType` in serveWatchHandler, k8s.io/apiserver@v0.37.0/pkg/endpoints/handlers/watch.go:97-110),
// which ours does not serve.
func TestWatchContentType(t *testing.T) {
	t.Parallel()
	servers := twoServers(t)
	const path = "/api/v1/namespaces/default/configmaps?watch=1&timeoutSeconds=1"
	// All three watches open before any is read: they end together.
	var jsonWatches []*http.Response
	for _, s := range servers {
		jsonWatches = append(jsonWatches, open(t, s.c, s.url+path, s.token, "application/json"))
	}
	real := servers[0]
	protobufWatch := open(t, real.c, real.url+path, "", "application/vnd.kubernetes.protobuf")
	for i, s := range servers {
		resp := jsonWatches[i]
		readBody(t, resp)
		if got := resp.Header.Get("Content-Type"); got != "application/json" {
			t.Errorf("%s: JSON watch Content-Type %q, want application/json", s.name, got)
		}
	}
	readBody(t, protobufWatch)
	if got := protobufWatch.Header.Get("Content-Type"); got != "application/vnd.kubernetes.protobuf;stream=watch" {
		t.Errorf("real: protobuf watch Content-Type %q, want application/vnd.kubernetes.protobuf;stream=watch", got)
	}
}

// TestNoTokenIsForbiddenOnTheRealServer: the real apiserver takes a request
// without a token as system:anonymous, and RBAC answers 403; ours has no
// anonymous user and answers 401, as both do for a wrong token (scenario
// bad-requests).
func TestNoTokenIsForbiddenOnTheRealServer(t *testing.T) {
	t.Parallel()
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
// watch cache to catch up (`blockTimeout`, 3 s, in
// k8s.io/apiserver@v0.37.0/pkg/storage/cacher/watch_cache.go:49); ours at once.
func TestTooLargeResourceVersion(t *testing.T) {
	t.Parallel()
	for _, s := range twoServers(t) {
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
// exceeded" (`getWatchCacheResourceVersion` calls `GetCurrentResourceVersion`
// with it, k8s.io/apiserver@v0.37.0/pkg/storage/cacher/cacher.go:1313-1321), or the WatchServer's expired timer ends the
// stream first: an empty 200. With a resourceVersion N there is no such read:
// always an empty 200. Ours: memstorage's TestExpiredContext.
func TestExpiredTimeoutOnTheRealServer(t *testing.T) {
	t.Parallel()
	real, _, realURL, _, _ := realAndLab(t)
	// A namespace nobody writes in (it need not exist to be watched), so no
	// event can come between the LIST and the watches.
	ns := fmt.Sprintf("/api/v1/namespaces/quiet-%d/configmaps", time.Now().UnixNano())
	base := realURL + ns + "?watch=1&timeoutSeconds=-1"
	_, body := get(t, real, realURL+ns, "", "")
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

// TestExactListOfAnOlderRVOnTheRealServer: a LIST with
// resourceVersionMatch=Exact at a resourceVersion older than the newest is
// answered with the state of that moment (from a watch cache snapshot if one
// fits, else from etcd: `shouldDelegateExactRV`, k8s.io/apiserver@v0.37.0/pkg/storage/cacher/cacher.go:1454-1465),
// not 410; 410 comes only once etcd has compacted that revision (lab 01's
// too-old scenario). Ours rebuilds it from the history ring.
func TestExactListOfAnOlderRVOnTheRealServer(t *testing.T) {
	t.Parallel()
	ns, servers := bothServers(t, "exact")
	for _, s := range servers {
		base := s.url + "/api/v1/namespaces/" + ns + "/configmaps"
		send(t, s.c, http.MethodPost, base, s.token, "application/json", `{"metadata":{"name":"a"},"data":{"color":"blue"}}`)
		_, body := get(t, s.c, base, s.token, "")
		var before struct {
			Metadata struct{ ResourceVersion string } `json:"metadata"`
		}
		json.Unmarshal(body, &before)
		send(t, s.c, http.MethodPatch, base+"/a", s.token, "application/merge-patch+json", `{"data":{"color":"green"}}`)
		resp, body := get(t, s.c, base+"?resourceVersionMatch=Exact&resourceVersion="+before.Metadata.ResourceVersion, s.token, "")
		var list struct {
			Metadata struct{ ResourceVersion string } `json:"metadata"`
			Items    []struct {
				Metadata struct{ Name string }
				Data     map[string]string
			}
		}
		json.Unmarshal(body, &list)
		color := "" // of a; the controller-manager may add kube-root-ca.crt meanwhile
		for _, it := range list.Items {
			if it.Metadata.Name == "a" {
				color = it.Data["color"]
			}
		}
		if resp.StatusCode != 200 || list.Metadata.ResourceVersion != before.Metadata.ResourceVersion || color != "blue" {
			t.Errorf("%s: Exact LIST at %s: HTTP %d %s; want the list of that moment (color blue)", s.name, before.Metadata.ResourceVersion, resp.StatusCode, body)
		}
	}
}

// TestTableWatchColumnsOnlyFirst: a watch that asks for Tables (as kubectl
// get -w does) gets the column definitions in its first event only, from
// the real apiserver (watchEmbeddedEncoder sets `NoHeaders` after the first,
// k8s.io/apiserver@v0.37.0/pkg/endpoints/handlers/response.go:88-96) and ours.
func TestTableWatchColumnsOnlyFirst(t *testing.T) {
	t.Parallel()
	ns, servers := bothServers(t, "table")
	const table = "application/json;as=Table;v=v1;g=meta.k8s.io"
	// Both watches open before either is read: they end together.
	var watches []*http.Response
	for _, s := range servers {
		base := s.url + "/api/v1/namespaces/" + ns + "/configmaps"
		for _, n := range []string{"a", "b"} {
			send(t, s.c, http.MethodPost, base, s.token, "application/json", `{"metadata":{"name":"`+n+`"}}`)
		}
		watches = append(watches, open(t, s.c, base+"?watch=1&resourceVersion=0&timeoutSeconds=1", s.token, table))
	}
	for i, s := range servers {
		body := readBody(t, watches[i])
		var withColumns []bool
		for _, line := range strings.Split(strings.TrimSpace(string(body)), "\n") {
			var ev struct {
				Type   string
				Object struct{ ColumnDefinitions []any }
			}
			if err := json.Unmarshal([]byte(line), &ev); err != nil {
				t.Fatalf("%s: %v: %s", s.name, err, line)
			}
			withColumns = append(withColumns, len(ev.Object.ColumnDefinitions) > 0)
		}
		// Two events or three: the controller-manager may have added
		// kube-root-ca.crt to the namespace by then.
		if len(withColumns) < 2 || !withColumns[0] || slices.Contains(withColumns[1:], true) {
			t.Errorf("%s: column definitions per event %v, want them in the first only; body:\n%s", s.name, withColumns, body)
		}
	}
}

func send(t *testing.T, c *http.Client, method, url, token, contentType, body string) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	req.Header.Set("Content-Type", contentType)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode >= 300 {
		t.Fatalf("%s %s: HTTP %d %s", method, url, resp.StatusCode, b)
	}
}

// watchEventNames reads a watch body (one JSON event per line) and returns
// "TYPE name" of each event whose object is named in names.
func watchEventNames(t *testing.T, server string, body []byte, names ...string) []string {
	t.Helper()
	var got []string
	for _, line := range strings.Split(strings.TrimSpace(string(body)), "\n") {
		var ev struct {
			Type   string
			Object struct{ Metadata struct{ Name string } }
		}
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("%s: not a watch event (%v): %s", server, err, line)
		}
		if slices.Contains(names, ev.Object.Metadata.Name) {
			got = append(got, ev.Type+" "+ev.Object.Metadata.Name)
		}
	}
	return got
}

// TestLegacyWatchPathForcesAWatch: GET /api/v1/watch/namespaces/NS/configmaps
// is a watch without any ?watch parameter, and even with ?watch=false: the
// installer routes the deprecated /watch/ paths to ListResource with
// forceWatch true (`restfulListResource`, k8s.io/apiserver@v0.37.0/pkg/endpoints/installer.go:1016;
// `ListResource`, k8s.io/apiserver@v0.37.0/pkg/endpoints/handlers/get.go:168-190). With no
// resourceVersion it starts with an ADDED event per existing object; the
// /watch/.../NAME path watches that one object. Both servers.
//
// Upstream forces the watch after parsing the query, not in it: without
// ?watch=true opts.Watch stays false, so the query is defaulted and validated as a LIST's
// (handlers/get.go, listOpts), and sendInitialEvents on a /watch/ path is
// a 422 "sendInitialEvents is forbidden for list". Ours the same
// (watchserver.ParseListOptions applies forceWatch after validating).
func TestLegacyWatchPathForcesAWatch(t *testing.T) {
	t.Parallel()
	ns, servers := bothServers(t, "legacy")
	cases := []struct{ path, want string }{
		{"?timeoutSeconds=1", "[ADDED a ADDED b]"},
		{"?watch=false&timeoutSeconds=1", "[ADDED a ADDED b]"},
		{"/a?timeoutSeconds=1", "[ADDED a]"},
	}
	const initialEvents = "?sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&timeoutSeconds=1"
	// Every request is sent before any answer is read: the six watches end
	// at their timeoutSeconds together.
	watches := map[string][]*http.Response{} // by server, one per case
	refused := map[string]*http.Response{}   // by server: sendInitialEvents
	for _, s := range servers {
		for _, n := range []string{"a", "b"} {
			send(t, s.c, http.MethodPost, s.url+"/api/v1/namespaces/"+ns+"/configmaps", s.token, "application/json", `{"metadata":{"name":"`+n+`"}}`)
		}
		legacy := s.url + "/api/v1/watch/namespaces/" + ns + "/configmaps"
		for _, c := range cases {
			watches[s.name] = append(watches[s.name], open(t, s.c, legacy+c.path, s.token, "application/json"))
		}
		refused[s.name] = open(t, s.c, legacy+initialEvents, s.token, "application/json")
	}
	for _, s := range servers {
		for i, c := range cases {
			resp := watches[s.name][i]
			body := readBody(t, resp)
			if resp.StatusCode != http.StatusOK {
				t.Errorf("%s: GET .../watch/namespaces/NS/configmaps%s: HTTP %d %s", s.name, c.path, resp.StatusCode, body)
				continue
			}
			got := watchEventNames(t, s.name, body, "a", "b")
			slices.Sort(got)
			if fmt.Sprint(got) != c.want {
				t.Errorf("%s: GET .../watch/namespaces/NS/configmaps%s: events %v, want %s; body:\n%s", s.name, c.path, got, c.want, body)
			}
		}
		resp := refused[s.name]
		body := readBody(t, resp)
		if resp.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(string(body), "sendInitialEvents is forbidden for list") {
			t.Errorf("%s: sendInitialEvents on a /watch/ path: HTTP %d %s; want 422 sendInitialEvents is forbidden for list", s.name, resp.StatusCode, body)
		}
	}
}

// TestWatchPassesPriorityAndFairness: a watch on the real apiserver goes
// through priority and fairness like any request (the filter skips other
// long-running requests, not watches: `isWatchRequest`,
// k8s.io/apiserver@v0.37.0/pkg/server/filters/priority-and-fairness.go:101-104),
// and its response names, by UID, the FlowSchema that classified
// it and the priority level that admitted it (`setResponseHeaders`,
// k8s.io/apiserver@v0.37.0/pkg/server/filters/priority-and-fairness.go:365). An
// admin in the group system:masters, labcluster's, matches the FlowSchema
// "exempt" (`MandatoryFlowSchemaExempt`,
// k8s.io/apiserver@v0.37.0/pkg/apis/flowcontrol/bootstrap/default.go:114-124);
// kind's admin, whom kubeadm puts in the group kubeadm:cluster-admins instead
// (`ClusterAdminsGroupAndClusterRoleBinding`,
// k8s.io/kubernetes@v1.37.0/cmd/kubeadm/app/constants/constants.go:211),
// matches "global-default" (`SuggestedFlowSchemaGlobalDefault`,
// k8s.io/apiserver@v0.37.0/pkg/apis/flowcontrol/bootstrap/default.go:422-433);
// a service account's
// watch the FlowSchema "service-accounts", priority level "workload-low"
// (the suggested configuration, `SuggestedFlowSchemaServiceAccounts`,
// k8s.io/apiserver@v0.37.0/pkg/apis/flowcontrol/bootstrap/default.go:404-405).
// Ours has no priority and fairness.
func TestWatchPassesPriorityAndFairness(t *testing.T) {
	t.Parallel()
	cluster := labkit.Current()
	ctx := t.Context()
	ns := fmt.Sprintf("apf-%d", time.Now().UnixNano())
	if _, err := cluster.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	defer cluster.Client.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})
	if _, err := cluster.Client.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "watcher"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cluster.Client.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "watcher-view"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "view"},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: "watcher", Namespace: ns}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tr, err := cluster.Client.CoreV1().ServiceAccounts(ns).CreateToken(ctx, "watcher", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	// UID -> name of every FlowSchema and priority level.
	names := map[string]string{}
	fss, err := cluster.Client.FlowcontrolV1().FlowSchemas().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, fs := range fss.Items {
		names[string(fs.UID)] = "FlowSchema " + fs.Name
	}
	pls, err := cluster.Client.FlowcontrolV1().PriorityLevelConfigurations().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, pl := range pls.Items {
		names[string(pl.UID)] = "PriorityLevel " + pl.Name
	}

	admin, err := rest.HTTPClientFor(cluster.Config)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.CloseIdleConnections()
	sa := &http.Client{Transport: &http.Transport{TLSClientConfig: tlsConfigFor(t, cluster.CAData)}}
	defer sa.CloseIdleConnections()
	url := cluster.Server + "/api/v1/namespaces/" + ns + "/configmaps?watch=1&timeoutSeconds=1"
	// Who the admin is, as the apiserver sees it.
	review, err := cluster.Client.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	adminWant := "FlowSchema global-default, PriorityLevel global-default"
	if slices.Contains(review.Status.UserInfo.Groups, "system:masters") {
		adminWant = "FlowSchema exempt, PriorityLevel exempt"
	}
	t.Logf("the admin is %q in groups %q: want %s", review.Status.UserInfo.Username, review.Status.UserInfo.Groups, adminWant)
	for _, c := range []struct {
		who, token string
		c          *http.Client
		want       string
	}{
		{"admin", "", admin, adminWant},
		{"service account", tr.Status.Token, sa, "FlowSchema service-accounts, PriorityLevel workload-low"},
	} {
		// The RoleBinding takes effect once the apiserver's RBAC informer
		// has it: until then a 403.
		var resp *http.Response
		var body []byte
		wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
			resp, body = get(t, c.c, url, c.token, "application/json")
			return resp.StatusCode != http.StatusForbidden, nil
		})
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: watch: HTTP %d %s", c.who, resp.StatusCode, body)
		}
		fs, pl := resp.Header.Get(flowcontrolv1.ResponseHeaderMatchedFlowSchemaUID), resp.Header.Get(flowcontrolv1.ResponseHeaderMatchedPriorityLevelConfigurationUID)
		if got := names[fs] + ", " + names[pl]; got != c.want {
			t.Errorf("%s: watch response headers %s: %q, %s: %q (%s); want %s",
				c.who, flowcontrolv1.ResponseHeaderMatchedFlowSchemaUID, fs, flowcontrolv1.ResponseHeaderMatchedPriorityLevelConfigurationUID, pl, got, c.want)
		}
	}

	// A watch executes, for APF, only until it is initialized (its initial
	// events sent): three open watches of the service account, each past
	// its initial ADDED, leave the gauge of executing requests of its
	// FlowSchema at 0 (apiserver_flowcontrol_current_executing_requests:
	// "in initial (for a WATCH) ... execution stage", `apiserverCurrentExecutingRequests`,
	// k8s.io/apiserver@v0.37.0/pkg/util/flowcontrol/metrics/metrics.go:234-239).
	send(t, admin, http.MethodPost, cluster.Server+"/api/v1/namespaces/"+ns+"/configmaps", "", "application/json", `{"metadata":{"name":"x"}}`)
	for range 3 {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, cluster.Server+"/api/v1/namespaces/"+ns+"/configmaps?watch=1&timeoutSeconds=60&fieldSelector=metadata.name%3Dx", nil)
		req.Header.Set("Authorization", "Bearer "+tr.Status.Token)
		resp, err := sa.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		line, err := bufio.NewReader(resp.Body).ReadString('\n')
		if err != nil || !strings.Contains(line, `"type":"ADDED"`) {
			t.Fatalf("service account watch: first line %q, %v; want the ADDED of x", line, err)
		}
	}
	const gauge = `apiserver_flowcontrol_current_executing_requests{flow_schema="service-accounts",priority_level="workload-low"} `
	var value string
	err = wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, 20*time.Second, true, func(context.Context) (bool, error) {
		_, metrics := get(t, admin, cluster.Server+"/metrics", "", "")
		value = ""
		for _, l := range strings.Split(string(metrics), "\n") {
			if v, ok := strings.CutPrefix(l, gauge); ok {
				value = v
			}
		}
		return value == "0", nil
	})
	if err != nil {
		t.Fatalf("with 3 initialized watches open, %s is %q, want 0 (a watch executes only until it is initialized)", gauge, value)
	}
}

// TestTableWatchBookmark: in a watch that asks for Tables, the real
// apiserver turns a BOOKMARK's object into a Table too: one row whose
// object is the bookmark's metadata as a PartialObjectMetadata, the
// initial-events-end annotation kept (`asTable` in
// k8s.io/apiserver@v0.37.0/pkg/endpoints/handlers/response.go:367, reached
// from watchEmbeddedEncoder.doEncode for every event but an ERROR's Status:
// `doTransformObject`, k8s.io/apiserver@v0.37.0/pkg/endpoints/handlers/response.go:247-269). Ours sends the
// bookmark's ConfigMap as it is (README section 5, "Tables for bookmarks").
func TestTableWatchBookmark(t *testing.T) {
	t.Parallel()
	ns, servers := bothServers(t, "tablebm")
	const table = "application/json;as=Table;v=v1;g=meta.k8s.io"
	want := map[string]string{"real": "Table/PartialObjectMetadata", "lab": "ConfigMap"}
	// Both watches open before either is read: they end together.
	var watches []*http.Response
	for _, s := range servers {
		base := s.url + "/api/v1/namespaces/" + ns + "/configmaps"
		send(t, s.c, http.MethodPost, base, s.token, "application/json", `{"metadata":{"name":"a"}}`)
		watches = append(watches, open(t, s.c, base+"?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&timeoutSeconds=1", s.token, table))
	}
	for i, s := range servers {
		body := readBody(t, watches[i])
		var bookmarks []string
		for _, line := range strings.Split(strings.TrimSpace(string(body)), "\n") {
			var ev struct {
				Type   string
				Object struct {
					Kind     string
					Metadata struct{ Annotations map[string]string }
					Rows     []struct {
						Object struct {
							Kind     string
							Metadata struct{ Annotations map[string]string }
						}
					}
				}
			}
			if err := json.Unmarshal([]byte(line), &ev); err != nil {
				t.Fatalf("%s: %v: %s", s.name, err, line)
			}
			if ev.Type != "BOOKMARK" {
				continue
			}
			kind, ann := ev.Object.Kind, ev.Object.Metadata.Annotations
			if kind == "Table" && len(ev.Object.Rows) == 1 {
				kind += "/" + ev.Object.Rows[0].Object.Kind
				ann = ev.Object.Rows[0].Object.Metadata.Annotations
			}
			bookmarks = append(bookmarks, kind+" initial-events-end="+ann["k8s.io/initial-events-end"])
		}
		// The first bookmark ends the initial events. The real apiserver may
		// add a plain one (its bookmark timer, or a write in the namespace
		// such as kube-root-ca.crt landing during the watch): each is a
		// Table too.
		if len(bookmarks) == 0 || bookmarks[0] != want[s.name]+" initial-events-end=true" {
			t.Errorf("%s: bookmarks %q, want the first %q; body:\n%s", s.name, bookmarks, want[s.name]+" initial-events-end=true", body)
		}
		for _, b := range bookmarks[min(1, len(bookmarks)):] {
			if b != want[s.name]+" initial-events-end=" {
				t.Errorf("%s: a later bookmark is %q, want %q; body:\n%s", s.name, b, want[s.name]+" initial-events-end=", body)
			}
		}
	}
}
