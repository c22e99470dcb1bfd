package miniapiserver

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/listwatch-labs/listwatch-labs/labs/04-cacher/embeddedetcd"
	"github.com/listwatch-labs/listwatch-labs/labs/04-cacher/internal/labtest"
)

func TestStartRejectsAnAddressOtherThanLoopback(t *testing.T) {
	for _, listen := range []string{"0.0.0.0:0", "localhost:0", ":0", "127.0.0.1"} {
		if in, err := Start(Config{Listen: listen}); err == nil {
			in.Close()
			t.Errorf("--listen %s was accepted", listen)
		}
	}
	_, err := Start(Config{Listen: "0.0.0.0:0"})
	if err == nil || !strings.Contains(err.Error(), "only 127.0.0.1 is allowed") {
		t.Errorf("--listen 0.0.0.0:0: %v", err)
	}
}

// TestMetricsCompactAndRestart: the kubeconfig is private, /metrics has the
// Cacher's numbers under their names, a compaction makes an exact-RV LIST
// 410, and Restart keeps address, token and objects, leaving no goroutine
// behind after Close.
func TestMetricsCompactAndRestart(t *testing.T) {
	defer labtest.VerifyNoLeaks(t, goleak.IgnoreCurrent())
	dir := t.TempDir()
	in, err := Start(Config{Listen: "127.0.0.1:0", KubeconfigOut: filepath.Join(dir, "mini.kubeconfig"), EtcdDir: filepath.Join(dir, "etcd"), ErrorLog: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	if fi, err := os.Stat(in.KubeconfigPath); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("kubeconfig: %v, mode %v; want 0600", err, fi.Mode().Perm())
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", in.KubeconfigPath)
	if err != nil {
		t.Fatal(err)
	}
	client := kubernetes.NewForConfigOrDie(cfg)
	ctx := context.Background()
	cms := client.CoreV1().ConfigMaps("lab")
	created, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Data: map[string]string{"k": "v"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := httpClient.Get(in.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
		t.Fatalf("GET /metrics: %s, %s", resp.Status, resp.Header.Get("Content-Type"))
	}
	for _, want := range []string{
		`lab04_cacher_watchers{resource="configmaps"} 0`,
		`lab04_cacher_etcd_watches_open{resource="configmaps"} 1`,
		`lab04_cacher_etcd_watches_open{resource="pods"} 1`,
		`apiserver_watch_cache_events_dispatched_total{resource="configmaps"}`,
		`apiserver_terminated_watchers_total{resource="pods"} 0`,
		`watch_cache_capacity{resource="pods"} 100`,
		`apiserver_watch_events_dispatch_duration_seconds_bucket{resource="pods",stage="total",le="5"} 0`,
		`apiserver_watch_events_dispatch_duration_seconds_count{resource="configmaps",stage="cache_to_watcher"}`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	// Without the token, /metrics is refused like the API: 401.
	anonymous := rest.CopyConfig(cfg)
	anonymous.BearerToken = ""
	anonClient, err := rest.HTTPClientFor(anonymous)
	if err != nil {
		t.Fatal(err)
	}
	if resp, err := anonClient.Get(in.URL + "/metrics"); err != nil {
		t.Errorf("GET /metrics without the token: %v", err)
	} else {
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("GET /metrics without the token: %s, want 401", resp.Status)
		}
	}
	anonClient.CloseIdleConnections()

	if _, err := cms.Update(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a", ResourceVersion: created.ResourceVersion}, Data: map[string]string{"k": "w"}}, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	exact := metav1.ListOptions{ResourceVersion: created.ResourceVersion, ResourceVersionMatch: metav1.ResourceVersionMatchExact}
	if _, err := cms.List(ctx, exact); err != nil {
		t.Fatalf("exact LIST before compaction: %v", err)
	}
	if _, err := in.Compact(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := cms.List(ctx, exact); !apierrors.IsResourceExpired(err) {
		t.Fatalf("exact LIST after compaction: %v, want 410 Expired", err)
	}

	url, token := in.URL, in.Token
	if err := in.Restart(); err != nil {
		t.Fatal(err)
	}
	if in.URL != url || in.Token != token {
		t.Errorf("after Restart: %s %s, want %s %s", in.URL, in.Token, url, token)
	}
	got, err := cms.Get(ctx, "a", metav1.GetOptions{})
	if err != nil || got.Data["k"] != "w" {
		t.Fatalf("after Restart, with the old client: %v %v", got.Data, err)
	}
	if m, _ := in.Metrics("configmaps"); m.Relists != 1 || m.StorageWatchesOpen != 1 {
		t.Errorf("restarted Cacher: %d relists, %d etcd watches; want 1 and 1", m.Relists, m.StorageWatchesOpen)
	}
	httpClient.CloseIdleConnections()
	if err := in.Close(); err != nil {
		t.Error(err)
	}
}

// TestOnAGivenEtcd: with EtcdEndpoints the server stores in an etcd it did
// not start, under EtcdPrefix; Restart restarts the API server and its
// Cachers and leaves that etcd running; Close leaves it running too.
func TestOnAGivenEtcd(t *testing.T) {
	defer labtest.VerifyNoLeaks(t, goleak.IgnoreCurrent())
	etcd, err := embeddedetcd.Start(embeddedetcd.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer etcd.Close()
	in, err := Start(Config{Listen: "127.0.0.1:0", EtcdEndpoints: []string{etcd.Endpoint}, EtcdPrefix: "/course", ErrorLog: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	cfg, err := clientcmd.BuildConfigFromFlags("", in.KubeconfigPath)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	cms := kubernetes.NewForConfigOrDie(cfg).CoreV1().ConfigMaps("lab")
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Data: map[string]string{"k": "v"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	resp, err := etcd.Client.Get(ctx, "/", clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, kv := range resp.Kvs {
		keys = append(keys, string(kv.Key))
	}
	if want := "/course/registry/configmaps/lab/a"; len(keys) != 1 || keys[0] != want {
		t.Fatalf("etcd's keys: %q, want [%q]", keys, want)
	}
	if err := in.Restart(); err != nil {
		t.Fatal(err)
	}
	if got, err := cms.Get(ctx, "a", metav1.GetOptions{}); err != nil || got.Data["k"] != "v" {
		t.Fatalf("after Restart: %v %v", got, err)
	}
	if err := in.Close(); err != nil {
		t.Error(err)
	}
	if _, err := etcd.Client.Get(ctx, "/course/registry/configmaps/lab/a"); err != nil {
		t.Errorf("the given etcd after Close: %v, want it still serving", err)
	}
}
