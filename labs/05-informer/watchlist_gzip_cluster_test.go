package lab05_test

// TestStreamingListArrivesGzipped: since 1.37 kube-apiserver compresses
// the response to a watch with sendInitialEvents=true and
// allowWatchBookmarks=true, as an informer's streaming list is
// (`isListWatchRequest`: k8s.io/apiserver@v0.37.0/pkg/endpoints/handlers/get.go:329-331),
// when the client accepts gzip (`WatchListCompression`, beta and on:
// k8s.io/apiserver@v0.37.0/pkg/features/kube_features.go:495-497; the
// handler asks `ContentEncodingSupported`,
// k8s.io/apiserver@v0.37.0/pkg/endpoints/handlers/watch.go:386-387, and
// `BeginStream` sets Content-Encoding,
// k8s.io/apiserver@v0.37.0/pkg/endpoints/handlers/watch.go:334-346).
// Go's transport asks for gzip by itself, unpacks the body and says so in
// http.Response.Uncompressed, so neither informer has anything to do: each
// syncs from a compressed stream. A plain watch is not compressed.
//
// Against a 1.36 apiserver both informers still make a streaming list
// (client-go v0.37's `WatchListClient` is on, and 1.36 serves
// sendInitialEvents: its `WatchList` gate is beta and on,
// k8s.io/apiserver@v0.36.4/pkg/features/kube_features.go:536-542), and
// both sync; the transport asks for gzip the same way, but 1.36 answers
// plain: it has no WatchListCompression gate, and its `HandleHTTP` sets
// Content-Type and Transfer-Encoding and nothing else before the stream
// (k8s.io/apiserver@v0.36.4/pkg/endpoints/handlers/watch.go:241-282).
// Neither informer falls back to a LIST: each made no LIST at all.

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/listwatch-labs/listwatch-labs/labkit"
	"github.com/listwatch-labs/listwatch-labs/labs/02-listwatcher/listwatcher"
	"github.com/listwatch-labs/listwatch-labs/labs/05-informer/informer"
)

// watchEncodings records, under the REST client's other layers and above
// Go's http.Transport, whether each watch response came compressed.
type watchEncodings struct {
	next http.RoundTripper
	mu   sync.Mutex
	// streaming and plain: one entry per watch, true if its body was gzip.
	streaming, plain []bool
	list             int // the requests that were not watches: LISTs
}

func (w *watchEncodings) lists() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.list
}

func (w *watchEncodings) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := w.next.RoundTrip(req)
	q := req.URL.Query()
	if err != nil {
		return resp, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if q.Get("watch") != "true" && q.Get("watch") != "1" {
		w.list++
		return resp, err
	}
	if q.Get("sendInitialEvents") == "true" {
		w.streaming = append(w.streaming, resp.Uncompressed)
	} else {
		w.plain = append(w.plain, resp.Uncompressed)
	}
	return resp, err
}

func (w *watchEncodings) seen() (streaming, plain []bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]bool(nil), w.streaming...), append([]bool(nil), w.plain...)
}

func recordingConfig(cfg *rest.Config) (*rest.Config, *watchEncodings) {
	rec := &watchEncodings{}
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { rec.next = rt; return rec })
	return cfg, rec
}

func TestStreamingListArrivesGzipped(t *testing.T) {
	c := labkit.Current()
	ns := fmt.Sprintf("lab05-gzip-%d", time.Now().UnixNano()%1e6)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if _, err := c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	defer c.Client.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})
	for _, name := range []string{"a", "b"} {
		if _, err := c.Client.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	// Ours: lab 02's ListWatch under our informer.
	oursCfg, oursRec := recordingConfig(c.Config)
	lw, err := listwatcher.New(oursCfg, "configmaps", ns)
	if err != nil {
		t.Fatal(err)
	}
	ours := informer.NewSharedIndexInformer(lw, informer.Options{})
	// client-go's: its ListWatch under its informer.
	theirsCfg, theirsRec := recordingConfig(c.Config)
	client, err := kubernetes.NewForConfig(theirsCfg)
	if err != nil {
		t.Fatal(err)
	}
	theirs := cache.NewSharedIndexInformer(cache.NewListWatchFromClient(client.CoreV1().RESTClient(), "configmaps", ns, fields.Everything()),
		&corev1.ConfigMap{}, 0, cache.Indexers{})

	runCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { ours.Run(runCtx) })
	wg.Go(func() { theirs.RunWithContext(runCtx) })
	defer func() { stop(); wg.Wait() }()
	if !cache.WaitForCacheSync(ctx.Done(), ours.HasSynced, theirs.HasSynced) {
		t.Fatal("informers did not sync")
	}
	if n, m := len(ours.GetIndexer().ListKeys()), len(theirs.GetStore().ListKeys()); n < 2 || m < 2 {
		t.Fatalf("after the sync ours holds %d ConfigMaps, client-go's %d; want a and b (and kube-root-ca.crt)", n, m)
	}
	gzipWatchList := labkit.ServerMinor(t) >= 37 // 1.36: plain
	for name, rec := range map[string]*watchEncodings{"ours (lab 02's ListWatch)": oursRec, "client-go's": theirsRec} {
		streaming, _ := rec.seen()
		if len(streaming) == 0 {
			t.Errorf("%s informer: no watch with sendInitialEvents=true", name)
		}
		for i, gz := range streaming {
			if gz != gzipWatchList {
				t.Errorf("%s informer: streaming list %d gzip: %v, want %v (WatchListCompression, from 1.37)", name, i+1, gz, gzipWatchList)
			}
		}
		if n := rec.lists(); n != 0 {
			t.Errorf("%s informer: %d LISTs, want none (a streaming list, no fallback)", name, n)
		}
	}

	// A plain watch, from the list's resourceVersion: not compressed.
	list, err := client.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := client.CoreV1().ConfigMaps(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	w.Stop()
	if _, plain := theirsRec.seen(); len(plain) != 1 || plain[0] {
		t.Errorf("plain watches seen (true: gzip): %v, want one, uncompressed", plain)
	}
}
