package apiserver

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/listwatch-labs/listwatch-labs/labkit"
	"github.com/listwatch-labs/listwatch-labs/labs/03-watchserver/memstorage"
)

// startInstance runs the whole server on a free port for one test.
func startInstance(t *testing.T, cfg Config) (*Instance, *rest.Config, string) {
	t.Helper()
	cfg.Listen = "127.0.0.1:0"
	cfg.KubeconfigOut = filepath.Join(t.TempDir(), "kubeconfig")
	in, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close() })
	restCfg, err := clientcmd.BuildConfigFromFlags("", cfg.KubeconfigOut)
	if err != nil {
		t.Fatal(err)
	}
	// Cleanups run last first: the test's clients let go of the server
	// before Close. Every client-go client of restCfg shares one cached
	// transport; an idle HTTP/2 connection left in it would make Close wait
	// a second (net/http's http2goAwayTimeout) for the client to hang up.
	t.Cleanup(func() {
		if rt, err := rest.TransportFor(restCfg); err == nil {
			utilnet.CloseIdleConnectionsFor(rt)
		}
	})
	return in, restCfg, cfg.KubeconfigOut
}

func TestKubeconfigIsPrivateAndUsable(t *testing.T) {
	in, restCfg, path := startInstance(t, Config{})
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("kubeconfig mode %v, want 0600: it holds the token", fi.Mode().Perm())
	}
	if restCfg.Insecure || len(restCfg.CAData) == 0 || restCfg.Host != in.URL {
		t.Fatalf("rest config %+v: want our URL and a CA, never insecure", restCfg)
	}
	client := kubernetes.NewForConfigOrDie(restCfg)
	v, err := client.Discovery().ServerVersion()
	if err != nil || v.GitVersion != "v1.37.0" {
		t.Fatalf("version %v, %v", v, err)
	}
	res, err := client.Discovery().ServerResourcesForGroupVersion("v1")
	if err != nil || len(res.APIResources) != 2 || res.APIResources[0].Name != "configmaps" || res.APIResources[1].Name != "pods" {
		t.Fatalf("discovery %v, %v", res, err)
	}
	// Without the token: 401, as a Status.
	anonymous := rest.AnonymousClientConfig(restCfg)
	_, err = kubernetes.NewForConfigOrDie(anonymous).CoreV1().ConfigMaps("x").List(context.Background(), metav1.ListOptions{})
	if err == nil || !strings.Contains(err.Error(), "Unauthorized") {
		t.Fatalf("without a token: %v, want 401 Unauthorized", err)
	}
}

// TestInformerSeesCreateUpdateDelete runs a real client-go SharedInformer
// (ListAndWatch with the streaming list and bookmarks client-go asks for)
// against the server: first its cache syncs, then every change reaches
// the handlers in order.
func TestInformerSeesCreateUpdateDelete(t *testing.T) {
	_, restCfg, _ := startInstance(t, Config{})
	client := kubernetes.NewForConfigOrDie(restCfg)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cms := client.CoreV1().ConfigMaps("lab")
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "before"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace("lab"))
	informer := factory.Core().V1().ConfigMaps().Informer()
	seen := make(chan string, 100)
	informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { seen <- "add " + obj.(*corev1.ConfigMap).Name },
		UpdateFunc: func(old, cur any) {
			seen <- "update " + cur.(*corev1.ConfigMap).Name + " color=" + cur.(*corev1.ConfigMap).Data["color"]
		},
		DeleteFunc: func(obj any) { seen <- "delete " + obj.(*corev1.ConfigMap).Name },
	})
	stop := make(chan struct{})
	factory.Start(stop)
	defer factory.Shutdown()
	defer close(stop)
	if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		t.Fatal("informer never synced: the initial list (or the initial-events-end bookmark) did not arrive")
	}
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Data: map[string]string{"color": "blue"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cms.Patch(ctx, "a", types.MergePatchType, []byte(`{"data":{"color":"green"}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cms.Delete(ctx, "a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	want := []string{"add before", "add a", "update a color=green", "delete a"}
	for _, w := range want {
		select {
		case got := <-seen:
			if got != w {
				t.Fatalf("handler saw %q, want %q (full order %v)", got, w, want)
			}
		case <-ctx.Done():
			t.Fatalf("handler never saw %q", w)
		}
	}
}

// TestTooOldOverHTTP: the 410 arrives as an ERROR event in a 200 stream.
func TestTooOldOverHTTP(t *testing.T) {
	labkit.ChecksExercise(t, "too-old-rv")
	in, restCfg, _ := startInstance(t, Config{HistorySize: 2})
	client := kubernetes.NewForConfigOrDie(restCfg)
	ctx := context.Background()
	for _, n := range []string{"a", "b", "c", "d"} {
		if _, err := client.CoreV1().ConfigMaps("lab").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: n}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	httpClient, err := rest.HTTPClientFor(restCfg)
	if err != nil {
		t.Fatal(err)
	}
	defer httpClient.CloseIdleConnections()
	resp, err := httpClient.Get(in.URL + "/api/v1/namespaces/lab/configmaps?watch=1&resourceVersion=1")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: a too-old watch is still a 200; the error is an event", resp.StatusCode)
	}
	line, _ := bufio.NewReader(resp.Body).ReadString('\n')
	want := `{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old resource version: 1 (3)","reason":"Expired","code":410}}` + "\n"
	if line != want {
		t.Fatalf("the stream's first line is not the 410 ERROR event; %s", labkit.Diff(want, line))
	}
	if rest, _ := io.ReadAll(resp.Body); len(rest) != 0 {
		t.Fatalf("after the ERROR event the stream must end, got %q", rest)
	}
}

// TestCloseEndsEveryWatch: Instance.Close returns promptly with watches
// open, and each stream ends cleanly for its client.
func TestCloseEndsEveryWatch(t *testing.T) {
	in, restCfg, _ := startInstance(t, Config{})
	httpClient, err := rest.HTTPClientFor(restCfg)
	if err != nil {
		t.Fatal(err)
	}
	defer httpClient.CloseIdleConnections()
	var bodies []io.ReadCloser
	for range 3 {
		resp, err := httpClient.Get(in.URL + "/api/v1/namespaces/lab/configmaps?watch=1")
		if err != nil {
			t.Fatal(err)
		}
		if resp.ProtoMajor != 2 {
			t.Fatalf("proto %s: client-go should get HTTP/2 over TLS", resp.Proto)
		}
		bodies = append(bodies, resp.Body)
	}
	closed := make(chan error, 1)
	go func() { closed <- in.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatalf("Close: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close hangs: open watches must end when the server shuts down")
	}
	for i, body := range bodies {
		if _, err := io.ReadAll(body); err != nil {
			t.Fatalf("watch %d: %v, want a clean end of stream", i, err)
		}
		body.Close()
	}
}

// TestCreateWithCurlShapedBody: curl users post JSON without kind and
// apiVersion; the URL says what it is, as on a real server.
func TestCreateWithCurlShapedBody(t *testing.T) {
	in, restCfg, _ := startInstance(t, Config{})
	httpClient, err := rest.HTTPClientFor(restCfg)
	if err != nil {
		t.Fatal(err)
	}
	defer httpClient.CloseIdleConnections()
	resp, err := httpClient.Post(in.URL+"/api/v1/namespaces/demo/configmaps", "application/json",
		strings.NewReader(`{"metadata":{"name":"a"},"data":{"color":"blue"}}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 201 || !strings.Contains(string(body), `"resourceVersion":"2"`) || !strings.Contains(string(body), `"kind":"ConfigMap"`) {
		t.Fatalf("HTTP %d %s", resp.StatusCode, body)
	}
	// Bad input is a Status, never a panic.
	for _, bad := range []string{`{`, `{"kind":"Pod","apiVersion":"v1","metadata":{"name":"p"}}`, `{"metadata":{"name":"Not_A_Name"}}`, `{"metadata":{}}`} {
		resp, err := httpClient.Post(in.URL+"/api/v1/namespaces/demo/configmaps", "application/json", strings.NewReader(bad))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode < 400 || resp.StatusCode >= 500 || !strings.Contains(string(body), `"kind":"Status"`) {
			t.Fatalf("%s: HTTP %d %s, want a 4xx Status", bad, resp.StatusCode, body)
		}
	}
}

// TestConcurrentPatchesAllLand: patches racing on one object are re-applied
// on conflict, so none is lost (kubectl patch never sends a resourceVersion).
func TestConcurrentPatchesAllLand(t *testing.T) {
	_, restCfg, _ := startInstance(t, Config{})
	client := kubernetes.NewForConfigOrDie(restCfg)
	ctx := context.Background()
	cms := client.CoreV1().ConfigMaps("lab")
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "shared"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	const n = 10
	errs := make(chan error, n)
	for i := range n {
		go func() {
			_, err := cms.Patch(ctx, "shared", types.MergePatchType, []byte(fmt.Sprintf(`{"data":{"k%d":"v"}}`, i)), metav1.PatchOptions{})
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	got, err := cms.Get(ctx, "shared", metav1.GetOptions{})
	if err != nil || len(got.Data) != n {
		t.Fatalf("data %v (%v), want all %d keys", got.Data, err, n)
	}
}

// TestFieldValidation: an unknown field is a 400 with Strict, a Warning
// header by default (Warn), and nothing with Ignore, as upstream.
func TestFieldValidation(t *testing.T) {
	in, restCfg, _ := startInstance(t, Config{})
	httpClient, err := rest.HTTPClientFor(restCfg)
	if err != nil {
		t.Fatal(err)
	}
	defer httpClient.CloseIdleConnections()
	for i, tc := range []struct {
		query, status, warning string
	}{
		{"?fieldValidation=Strict", "400", ""},
		{"", "201", `299 - "unknown field \"datta\""`},
		{"?fieldValidation=Ignore", "201", ""},
	} {
		body := fmt.Sprintf(`{"metadata":{"name":"cm-%d"},"datta":{"color":"blue"}}`, i)
		resp, err := httpClient.Post(in.URL+"/api/v1/namespaces/lab/configmaps"+tc.query, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		out, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if fmt.Sprint(resp.StatusCode) != tc.status || resp.Header.Get("Warning") != tc.warning {
			t.Fatalf("%q: HTTP %d, Warning %q, body %s; want %s, %q", tc.query, resp.StatusCode, resp.Header.Get("Warning"), out, tc.status, tc.warning)
		}
		if tc.status == "400" && !strings.Contains(string(out), `ConfigMap in version \"v1\" cannot be handled as a ConfigMap: strict decoding error: unknown field \"datta\"`) {
			t.Fatalf("Strict: %s", out)
		}
	}
}

// TestPodsByNodeName: a kubelet's watch, fieldSelector=spec.nodeName=NODE,
// sees only its node's pods, including a pod that is bound to it later (a
// MODIFIED that starts matching arrives as ADDED).
func TestPodsByNodeName(t *testing.T) {
	in, restCfg, _ := startInstance(t, Config{})
	client := kubernetes.NewForConfigOrDie(restCfg)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pods := client.CoreV1().Pods("lab")
	pod := func(name, node string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	}
	if _, err := pods.Create(ctx, pod("on-a", "node-a"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := pods.Create(ctx, pod("on-b", "node-b"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	onA := metav1.ListOptions{FieldSelector: "spec.nodeName=node-a"}
	list, err := pods.List(ctx, onA)
	if err != nil || len(list.Items) != 1 || list.Items[0].Name != "on-a" {
		t.Fatalf("list by node: %v %v", list, err)
	}
	onA.ResourceVersion = list.ResourceVersion
	w, err := pods.Watch(ctx, onA)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if _, err := pods.Create(ctx, pod("unbound", ""), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := pods.Patch(ctx, "unbound", types.StrategicMergePatchType, []byte(`{"spec":{"nodeName":"node-a"}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-w.ResultChan():
		if p, ok := ev.Object.(*corev1.Pod); !ok || ev.Type != "ADDED" || p.Name != "unbound" || p.Spec.NodeName != "node-a" {
			t.Fatalf("event %s %v, want ADDED unbound on node-a", ev.Type, ev.Object)
		}
	case <-ctx.Done():
		t.Fatal("the watch of node-a never saw the pod bound to it")
	}
	// A pod's DELETE answers the deleted pod (ReturnDeletedObject).
	httpClient, _ := rest.HTTPClientFor(restCfg)
	defer httpClient.CloseIdleConnections()
	req, _ := http.NewRequest(http.MethodDelete, in.URL+"/api/v1/namespaces/lab/pods/on-b", nil)
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"kind":"Pod"`) {
		t.Fatalf("DELETE pod: HTTP %d %s, want the pod", resp.StatusCode, body)
	}
	// Field selectors are checked per kind, with upstream's words.
	_, err = pods.List(ctx, metav1.ListOptions{FieldSelector: "spec.bogus=x"})
	if err == nil || err.Error() != "field label not supported: spec.bogus" {
		t.Fatalf("bad pod field selector: %v", err)
	}
	_, err = client.CoreV1().ConfigMaps("lab").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=x"})
	if err == nil || !strings.Contains(err.Error(), `"spec.nodeName" is not a known field selector`) {
		t.Fatalf("configmaps by spec.nodeName: %v", err)
	}
}

// countingStorage is a delegating wrapper around another storage.Interface
// that counts the calls the server makes. Serving from it proves that the
// server depends only on the interface, not on memstorage.
type countingStorage struct {
	storage.Interface
	mu    sync.Mutex
	calls map[string]int
}

func (c *countingStorage) count(method string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls[method]++
}

func (c *countingStorage) Create(ctx context.Context, key string, obj, out runtime.Object, ttl uint64) error {
	c.count("Create")
	return c.Interface.Create(ctx, key, obj, out, ttl)
}

func (c *countingStorage) Get(ctx context.Context, key string, opts storage.GetOptions, out runtime.Object) error {
	c.count("Get")
	return c.Interface.Get(ctx, key, opts, out)
}

func (c *countingStorage) GetList(ctx context.Context, key string, opts storage.ListOptions, listObj runtime.Object) error {
	c.count("GetList")
	return c.Interface.GetList(ctx, key, opts, listObj)
}

func (c *countingStorage) GuaranteedUpdate(ctx context.Context, key string, dest runtime.Object, ignoreNotFound bool,
	pre *storage.Preconditions, tryUpdate storage.UpdateFunc, cached runtime.Object) error {
	c.count("GuaranteedUpdate")
	return c.Interface.GuaranteedUpdate(ctx, key, dest, ignoreNotFound, pre, tryUpdate, cached)
}

func (c *countingStorage) Delete(ctx context.Context, key string, out runtime.Object, pre *storage.Preconditions,
	validate storage.ValidateObjectFunc, cached runtime.Object, opts storage.DeleteOptions) error {
	c.count("Delete")
	return c.Interface.Delete(ctx, key, out, pre, validate, cached, opts)
}

func (c *countingStorage) Watch(ctx context.Context, key string, opts storage.ListOptions) (watch.Interface, error) {
	c.count("Watch")
	return c.Interface.Watch(ctx, key, opts)
}

// TestServesFromAnyStorage plugs a storage of its own into Config.Storage,
// as lab 04 plugs its Cacher, and runs an informer and CRUD through it.
func TestServesFromAnyStorage(t *testing.T) {
	counting := map[string]*countingStorage{}
	_, restCfg, _ := startInstance(t, Config{Storage: func(r *Resource) (storage.Interface, func(), error) {
		inner := memstorage.New(memstorage.Config{ResourcePrefix: r.ResourcePrefix, NewFunc: r.NewFunc})
		counting[r.GroupResource.Resource] = &countingStorage{Interface: inner, calls: map[string]int{}}
		return counting[r.GroupResource.Resource], inner.Close, nil
	}})
	client := kubernetes.NewForConfigOrDie(restCfg)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cms := client.CoreV1().ConfigMaps("lab")
	w, err := cms.Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cms.Patch(ctx, "a", types.MergePatchType, []byte(`{"data":{"k":"v"}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cms.Get(ctx, "a", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cms.List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cms.Delete(ctx, "a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	var seen []string
	for len(seen) < 3 {
		select {
		case ev := <-w.ResultChan():
			seen = append(seen, string(ev.Type))
		case <-ctx.Done():
			t.Fatalf("watch through the wrapper saw only %v", seen)
		}
	}
	c := counting["configmaps"]
	c.mu.Lock()
	defer c.mu.Unlock()
	want := map[string]int{"Watch": 1, "Create": 1, "GuaranteedUpdate": 1, "Get": 1, "GetList": 1, "Delete": 1}
	if fmt.Sprint(c.calls) != fmt.Sprint(want) || fmt.Sprint(seen) != "[ADDED MODIFIED DELETED]" {
		t.Fatalf("storage calls %v, events %v; want %v and ADDED, MODIFIED, DELETED", c.calls, seen, want)
	}
}

// listRecorder records the ListOptions of every GetList.
type listRecorder struct {
	storage.Interface
	mu   sync.Mutex
	seen []storage.ListOptions
}

func (l *listRecorder) GetList(ctx context.Context, key string, opts storage.ListOptions, listObj runtime.Object) error {
	l.mu.Lock()
	l.seen = append(l.seen, opts)
	l.mu.Unlock()
	return l.Interface.GetList(ctx, key, opts, listObj)
}

// TestListPassesLimitAndContinueToTheStorage: a LIST's limit and continue
// reach the storage in its SelectionPredicate, as genericregistry's
// ListPredicate puts them there; paging is then the storage's business.
// memstorage does not page: with limit=1 it answers all three ConfigMaps
// and no continue token (which the API allows), and it refuses a
// well-formed continue token, since it never issues one.
func TestListPassesLimitAndContinueToTheStorage(t *testing.T) {
	recorder := &listRecorder{}
	_, restCfg, _ := startInstance(t, Config{Storage: func(r *Resource) (storage.Interface, func(), error) {
		inner := memstorage.New(memstorage.Config{ResourcePrefix: r.ResourcePrefix, NewFunc: r.NewFunc})
		if r.GroupResource.Resource != "configmaps" {
			return inner, inner.Close, nil
		}
		recorder.Interface = inner
		return recorder, inner.Close, nil
	}})
	client := kubernetes.NewForConfigOrDie(restCfg)
	ctx := t.Context()
	cms := client.CoreV1().ConfigMaps("lab")
	for _, name := range []string{"a", "b", "c"} {
		if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	list, err := cms.List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 3 || list.Continue != "" || list.RemainingItemCount != nil {
		t.Fatalf("limit=1 on memstorage: %d items, continue %q, remainingItemCount %v; want 3, none, none", len(list.Items), list.Continue, list.RemainingItemCount)
	}
	// {"v":"meta.k8s.io/v1","rv":1,"start":"a\u0000"}, well-formed.
	const token = "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MSwic3RhcnQiOiJhXHUwMDAwIn0"
	_, err = cms.List(ctx, metav1.ListOptions{Limit: 1, Continue: token})
	if !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), "issues no continue tokens") {
		t.Fatalf("continue on memstorage: %v, want 400 BadRequest", err)
	}
	recorder.mu.Lock()
	defer recorder.mu.Unlock()
	if len(recorder.seen) != 2 {
		t.Fatalf("%d GetList calls, want 2", len(recorder.seen))
	}
	first, second := recorder.seen[0].Predicate, recorder.seen[1].Predicate
	if first.Limit != 1 || first.Continue != "" || second.Limit != 1 || second.Continue != token {
		t.Fatalf("storage saw limit %d continue %q, then limit %d continue %q", first.Limit, first.Continue, second.Limit, second.Continue)
	}
}
