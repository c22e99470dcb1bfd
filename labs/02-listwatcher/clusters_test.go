package lab02_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/listwatch-labs/listwatch-labs/labkit"
	"github.com/listwatch-labs/listwatch-labs/labs/02-listwatcher/listwatcher"
)

// newNamespace creates a namespace for one test and deletes it afterwards.
func newNamespace(t *testing.T) (kubernetes.Interface, string) {
	t.Helper()
	c := labkit.Current()
	ns := strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-")) + "-" + rand.String(5)
	ctx := context.Background()
	if _, err := c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Client.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })
	return c.Client, ns
}

func configMap(name, color string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "demo"}}, Data: map[string]string{"color": color}}
}

// transcriptOf renders a list and events the way the golden files do.
// client-go's typed decoding drops apiVersion and kind (its decoder clears
// them); ours keeps them. They are set on both so only content is compared.
func transcriptOf(t *testing.T, list runtime.Object, events []watch.Event) string {
	t.Helper()
	tr := labkit.NewTranscript("data.color")
	list.GetObjectKind().SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMapList"))
	add := func(v any) {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if err := tr.Add(b); err != nil {
			t.Fatal(err)
		}
	}
	add(list)
	for _, ev := range events {
		ev.Object.GetObjectKind().SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMap"))
		add(map[string]any{"type": ev.Type, "object": ev.Object})
	}
	return tr.String()
}

// collect reads n events from w, or fails after a deadline.
func collect(t *testing.T, w watch.Interface, n int) []watch.Event {
	t.Helper()
	deadline := time.NewTimer(30 * time.Second)
	defer deadline.Stop()
	var got []watch.Event
	for len(got) < n {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatalf("watch ended after %d of %d events", len(got), n)
			}
			got = append(got, ev)
		case <-deadline.C:
			t.Fatalf("%d of %d events after 30s", len(got), n)
		}
	}
	return got
}

// TestDifferential runs one scenario through our ListWatch and through
// client-go's cache.NewFilteredListWatchFromClient against the same cluster: the same
// list at the same resourceVersion, then two watches from it seeing the same
// changes. The transcripts must be identical, and say what we expect.
func TestDifferential(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	client, ns := newNamespace(t)
	ctx := context.Background()
	cms := client.CoreV1().ConfigMaps(ns)
	for _, cm := range []*corev1.ConfigMap{configMap("a", "blue"), configMap("b", "red")} {
		if _, err := cms.Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	ours, err := listwatcher.New(labkit.Current().Config, "configmaps", ns)
	if err != nil {
		t.Fatal(err)
	}
	ours.LabelSelector = "app=demo"
	theirs := cache.NewFilteredListWatchFromClient(client.CoreV1().RESTClient(), "configmaps", ns,
		func(o *metav1.ListOptions) { o.LabelSelector = "app=demo" })
	impls := map[string]cache.ListerWatcherWithContext{"lab": ours, "clientgo": theirs}

	// The same list: ours decides the resourceVersion (a consistent read),
	// then both list exactly at it.
	first, err := ours.ListWithContext(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rv, _ := meta.NewAccessor().ResourceVersion(first)
	lists, watches := map[string]runtime.Object{}, map[string]watch.Interface{}
	for name, lw := range impls {
		if lists[name], err = lw.ListWithContext(ctx, metav1.ListOptions{ResourceVersion: rv, ResourceVersionMatch: metav1.ResourceVersionMatchExact}); err != nil {
			t.Fatalf("%s list: %v", name, err)
		}
		if watches[name], err = lw.WatchWithContext(ctx, metav1.ListOptions{ResourceVersion: rv}); err != nil {
			t.Fatalf("%s watch: %v", name, err)
		}
		defer watches[name].Stop()
	}

	// The changes both watches must see.
	if _, err := cms.Create(ctx, configMap("c", "yellow"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	a, _ := cms.Get(ctx, "a", metav1.GetOptions{})
	a.Data["color"] = "green"
	if _, err := cms.Update(ctx, a, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cms.Delete(ctx, "b", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	got := map[string]string{}
	for name := range impls {
		got[name] = transcriptOf(t, lists[name], collect(t, watches[name], 3))
		watches[name].Stop()
	}
	want := `LIST ConfigMapList >=rv2 items=2
ITEM ConfigMap a rv1 data.color=blue
ITEM ConfigMap b rv2 data.color=red
ADDED ConfigMap c rv3 data.color=yellow
MODIFIED ConfigMap a rv4 data.color=green
DELETED ConfigMap b rv5 data.color=red
`
	if got["lab"] != got["clientgo"] {
		t.Fatalf("transcripts differ.\nlab:\n%s\nclient-go:\n%s", got["lab"], got["clientgo"])
	}
	if got["lab"] != want {
		t.Fatalf("transcript (same for both):\n%s\nwant:\n%s", got["lab"], want)
	}
}

// TestReflector runs client-go's own Reflector on our ListWatch. In client-go
// v0.37 the Reflector uses the streaming list by default (WatchListClient),
// so this drives our Watch with sendInitialEvents. Its store must end up
// equal to a fresh LIST, through creates, updates and deletes made before
// and while it runs.
func TestReflector(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	client, ns := newNamespace(t)
	ctx := context.Background()
	cms := client.CoreV1().ConfigMaps(ns)
	for i := range 5 {
		if _, err := cms.Create(ctx, configMap(fmt.Sprintf("before-%d", i), "blue"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	ours, err := listwatcher.New(labkit.Current().Config, "configmaps", ns)
	if err != nil {
		t.Fatal(err)
	}
	recorded := &recordingListWatch{ListWatch: ours}
	store := cache.NewStore(cache.MetaNamespaceKeyFunc)
	reflector := cache.NewReflectorWithOptions(recorded, &corev1.ConfigMap{}, store, cache.ReflectorOptions{Name: "lab02-reflector"})
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		reflector.RunWithContext(runCtx)
	}()
	defer func() { stop(); <-done }()

	for i := range 5 {
		if _, err := cms.Create(ctx, configMap(fmt.Sprintf("during-%d", i), "red"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	b, _ := cms.Get(ctx, "before-1", metav1.GetOptions{})
	b.Data["color"] = "green"
	if _, err := cms.Update(ctx, b, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cms.Delete(ctx, "before-2", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	// Poll until the store equals a fresh LIST (same names, resourceVersions
	// and data), or fail at the deadline showing the difference.
	snapshot := func(objs []any) string {
		var lines []string
		for _, o := range objs {
			cm := o.(*corev1.ConfigMap)
			lines = append(lines, fmt.Sprintf("%s rv=%s color=%s", cm.Name, cm.ResourceVersion, cm.Data["color"]))
		}
		sort.Strings(lines)
		return strings.Join(lines, "\n")
	}
	deadline := time.Now().Add(30 * time.Second)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		list, err := cms.List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var want []any
		for i := range list.Items {
			want = append(want, &list.Items[i])
		}
		got, fresh := snapshot(store.List()), snapshot(want)
		if got == fresh && strings.Contains(got, "before-1") && strings.Contains(got, "color=green") && !strings.Contains(got, "before-2") && strings.Contains(got, "during-4") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("store after 30s:\n%s\nfresh LIST:\n%s", got, fresh)
		}
		<-tick.C
	}

	// How the Reflector used our ListWatch: no LIST at all, a streaming list.
	recorded.mu.Lock()
	defer recorded.mu.Unlock()
	if recorded.lists != 0 || len(recorded.watches) == 0 {
		t.Fatalf("the Reflector made %d LISTs and %d watches, want a streaming list", recorded.lists, len(recorded.watches))
	}
	if first := recorded.watches[0]; first.SendInitialEvents == nil || !*first.SendInitialEvents ||
		first.ResourceVersionMatch != metav1.ResourceVersionMatchNotOlderThan || !first.AllowWatchBookmarks {
		t.Fatalf("the Reflector's first watch: %+v, want sendInitialEvents=true, NotOlderThan, bookmarks", first)
	}
}

// recordingListWatch records the options a Reflector passes to our ListWatch.
type recordingListWatch struct {
	*listwatcher.ListWatch
	mu      sync.Mutex
	lists   int
	watches []metav1.ListOptions
}

func (r *recordingListWatch) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	r.mu.Lock()
	r.lists++
	r.mu.Unlock()
	return r.ListWatch.ListWithContext(ctx, opts)
}

func (r *recordingListWatch) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	r.mu.Lock()
	r.watches = append(r.watches, opts)
	r.mu.Unlock()
	return r.ListWatch.WatchWithContext(ctx, opts)
}

// TestConsistentListFromCache: at v1.37 a LIST with resourceVersion "" (a
// consistent read) is served from the apiserver's watch cache, once the
// cache has caught up with etcd's current revision, not from etcd. The
// apiserver counts such reads in the metric
// apiserver_watch_cache_consistent_read_total (`ConsistentReadTotal`,
// k8s.io/apiserver@v0.37.0/pkg/storage/cacher/metrics/metrics.go:233, which
// CacheDelegator.GetList increments with `ConsistentReadTotal.WithLabelValues`,
// k8s.io/apiserver@v0.37.0/pkg/storage/cacher/delegator.go:175-180): our LIST must add one with success="true" and
// fallback="false" (served by the cache, no fall-back to etcd).
func TestConsistentListFromCache(t *testing.T) {
	_, ns := newNamespace(t)
	ours, err := listwatcher.New(labkit.Current().Config, "configmaps", ns)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// A first consistent LIST, so the configmaps cache is ready and the
	// counter's series exists.
	if _, err := ours.ListWithContext(ctx, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	// A consistent read whose cache does not catch up in time (a loaded
	// machine) falls back to etcd and is counted with fallback="true":
	// allow a few tries, each one LIST, before failing.
	for try := 1; ; try++ {
		before := consistentReadsFromCache(t, "configmaps")
		if _, err := ours.ListWithContext(ctx, metav1.ListOptions{}); err != nil {
			t.Fatal(err)
		}
		after := consistentReadsFromCache(t, "configmaps")
		if after >= before+1 {
			return
		}
		if try == 5 {
			t.Fatalf("consistent reads served by the cache: %v before our LIST, %v after; want at least one more (5 tries)", before, after)
		}
	}
}

// consistentReadsFromCache reads the apiserver's /metrics and returns the
// consistent reads of resource served from the watch cache without
// falling back to etcd.
func consistentReadsFromCache(t *testing.T, resource string) float64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	body, err := labkit.Current().Client.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(body), "\n") {
		name, rest, ok := strings.Cut(line, "{")
		if !ok || name != "apiserver_watch_cache_consistent_read_total" {
			continue
		}
		labels, value, _ := strings.Cut(rest, "} ")
		if !strings.Contains(labels, `resource="`+resource+`"`) || !strings.Contains(labels, `success="true"`) || !strings.Contains(labels, `fallback="false"`) {
			continue
		}
		var n float64
		if _, err := fmt.Sscan(value, &n); err != nil {
			t.Fatalf("metric line %q: %v", line, err)
		}
		return n
	}
	t.Fatalf("no apiserver_watch_cache_consistent_read_total for %s, success, no fallback, in /metrics", resource)
	return 0
}

// gzipSeen records, for each response, whether Go's transport decompressed
// it (the server sent Content-Encoding: gzip to the transport's own
// Accept-Encoding).
type gzipSeen struct {
	next http.RoundTripper
	mu   sync.Mutex
	seen map[string]bool // query -> Uncompressed
}

func (g *gzipSeen) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := g.next.RoundTrip(req)
	if err == nil {
		g.mu.Lock()
		g.seen[req.URL.RawQuery] = resp.Uncompressed
		g.mu.Unlock()
	}
	return resp, err
}

// TestWatchListArrivesGzip: since 1.37 the real apiserver answers a
// watch-list (sendInitialEvents=true, allowWatchBookmarks=true) with gzip
// when the request accepts it (gate WatchListCompression, beta, on). Our
// ListWatch leaves Accept-Encoding to Go's transport, which asks for gzip
// and decompresses: the watch-list arrives gzip and decodes as usual, up to
// the initial-events-end bookmark; a watch from a resourceVersion is plain.
// A 1.36 apiserver, asked the same, sends the watch-list plain: it has no
// such gate, and its `HandleHTTP` sets Content-Type and Transfer-Encoding
// and nothing else before the stream
// (k8s.io/apiserver@v0.36.4/pkg/endpoints/handlers/watch.go:241-282). The
// same code decodes both: the transport asked, so it unpacks only what came
// packed.
func TestWatchListArrivesGzip(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	client, ns := newNamespace(t)
	ctx := context.Background()
	if _, err := client.CoreV1().ConfigMaps(ns).Create(ctx, configMap("one", "blue"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	lw, err := listwatcher.New(labkit.Current().Config, "configmaps", ns)
	if err != nil {
		t.Fatal(err)
	}
	seen := &gzipSeen{next: lw.Client.Transport, seen: map[string]bool{}}
	lw.Client = &http.Client{Transport: seen}
	defer utilnet.CloseIdleConnectionsFor(seen.next)

	timeout := int64(30)
	w, err := lw.WatchWithContext(ctx, metav1.ListOptions{
		SendInitialEvents: ptr.To(true), ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan,
		AllowWatchBookmarks: true, TimeoutSeconds: &timeout,
	})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	var endRV string
	for ev := range w.ResultChan() {
		m, err := meta.Accessor(ev.Object)
		if err != nil {
			t.Fatal(err)
		}
		if ev.Type == watch.Bookmark && m.GetAnnotations()[metav1.InitialEventsAnnotationKey] == "true" {
			endRV = m.GetResourceVersion()
			break
		}
		// The controller-manager puts kube-root-ca.crt in every new
		// namespace, some time after it is made: it may be there or not.
		if m.GetName() != "kube-root-ca.crt" {
			got = append(got, string(ev.Type)+" "+m.GetName())
		}
	}
	w.Stop()
	if endRV == "" || strings.Join(got, ",") != "ADDED one" {
		t.Fatalf("initial events %q, end bookmark at %q; want [ADDED one] and a bookmark", got, endRV)
	}

	timeout = 1
	w, err = lw.WatchWithContext(ctx, metav1.ListOptions{ResourceVersion: endRV, AllowWatchBookmarks: true, TimeoutSeconds: &timeout})
	if err != nil {
		t.Fatal(err)
	}
	for range w.ResultChan() {
	}
	w.Stop()

	seen.mu.Lock()
	defer seen.mu.Unlock()
	if len(seen.seen) != 2 {
		t.Fatalf("requests seen: %v", seen.seen)
	}
	gzipWatchList := labkit.ServerMinor(t) >= 37 // 1.36: no gzip at all
	for query, uncompressed := range seen.seen {
		if want := gzipWatchList && strings.Contains(query, "sendInitialEvents=true"); uncompressed != want {
			t.Errorf("%s: decompressed by the transport %v, want %v (gzip only for the watch-list, and only from 1.37)", query, uncompressed, want)
		}
	}
}
