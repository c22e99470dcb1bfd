package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/listwatch-labs/listwatch-labs/labkit"
)

// TestSumMetricsReadsThePrometheusTextFormat: the rows sum every series of
// a metric whose labels include the wanted ones (both "index" values of
// apiserver_storage_list_total with storage="watchcache", not the etcd
// one), skip other resources and comments, say which metric was not there
// at all, and refuse an unreadable line.
func TestSumMetricsReadsThePrometheusTextFormat(t *testing.T) {
	body := `# HELP apiserver_storage_list_total [ALPHA] Number of LIST requests served from storage
# TYPE apiserver_storage_list_total counter
apiserver_storage_list_total{group="",index="",resource="configmaps",storage="watchcache"} 3
apiserver_storage_list_total{group="",index="metadata.name",resource="configmaps",storage="watchcache"} 2
apiserver_storage_list_total{group="",index="",resource="configmaps",storage="etcd"} 7
apiserver_storage_list_total{group="",index="",resource="pods",storage="watchcache"} 40
watch_cache_capacity{group="",resource="configmaps"} 100
apiserver_longrunning_requests{component="apiserver",group="",resource="configmaps",scope="namespace",subresource="",verb="WATCH",version="v1"} 2
apiserver_longrunning_requests{component="apiserver",group="",resource="configmaps",scope="cluster",subresource="",verb="WATCH",version="v1"} 1
apiserver_longrunning_requests{component="apiserver",group="",resource="configmaps",scope="cluster",subresource="",verb="LIST",version="v1"} 7
odd_metric{path="a \"quoted\" } brace",resource="configmaps"} 1 1700000000000
`
	want := []realMetric{
		{name: "apiserver_storage_list_total", labels: map[string]string{"group": "", "resource": "configmaps", "storage": "watchcache"}},
		{name: "watch_cache_capacity", labels: cm()},
		{name: "apiserver_longrunning_requests", labels: map[string]string{"verb": "WATCH", "resource": "configmaps"}},
		{name: "odd_metric", labels: map[string]string{"resource": "configmaps"}},
		{name: "apiserver_terminated_watchers_total", labels: cm()},
	}
	rows, err := sumMetrics([]byte(body), want)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, r := range rows {
		got[r.Name] = fmt.Sprintf("%v %v", r.Found, r.Value)
	}
	for name, w := range map[string]string{
		"apiserver_storage_list_total":        "true 5",
		"watch_cache_capacity":                "true 100",
		"apiserver_longrunning_requests":      "true 3",
		"odd_metric":                          "true 1",
		"apiserver_terminated_watchers_total": "false 0",
	} {
		if got[name] != w {
			t.Errorf("%s: found, value = %s, want %s", name, got[name], w)
		}
	}
	if _, err := sumMetrics([]byte("watch_cache_capacity{resource=\"configmaps\"} many\n"), want); err == nil || !strings.Contains(err.Error(), "bad value") {
		t.Errorf("an unreadable value: err = %v, want \"bad value\"", err)
	}
}

// TestRealClusterBesideIt: with a real kube-apiserver beside the course's
// stack (the cluster that is up, else one this test starts with etcd and
// the apiserver only), every write of the view goes to both. Read as the
// page reads it (/api/state), client-go's informer on the real cluster
// settles on the same ConfigMaps as lab 05's informer on the course's
// stack, with the same handler calls, and the kube-apiserver's own
// watch-cache counters for ConfigMaps move with the writes. Then chromium
// shows the panel (when a browser is here; scripts/test.sh requires one).
func TestRealClusterBesideIt(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the stack and a cluster")
	}
	c, err := labkit.Discover()
	if err != nil {
		t.Fatal(err)
	}
	if c == nil {
		dir := t.TempDir()
		if c, err = labkit.StartEmbedded(dir, "etcd", "apiserver"); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Stop() }) // before TempDir removes dir (cleanups run last first)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	// A namespace of its own: the cluster may be shared (scripts/test.sh
	// runs every module against one), and another view on it (the
	// `labs view` test) empties "view" when it starts.
	realNS := fmt.Sprintf("view-test-%d", time.Now().UnixNano())
	s, err := startStack(ctx, &eventLog{}, c.Kubeconfig, realNS)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.Close()
		c.Client.CoreV1().Namespaces().Delete(context.Background(), realNS, metav1.DeleteOptions{})
	})

	ln, err := listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srvCtx, stopSrv := context.WithCancel(ctx)
	srv := &http.Server{Handler: newHandler(srvCtx, s, ln.Addr().String())}
	go srv.Serve(ln)
	t.Cleanup(func() { stopSrv(); srv.Close() })
	state := func() ViewState {
		t.Helper()
		resp, err := http.Get("http://" + ln.Addr().String() + "/api/state")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var v ViewState
		if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
			t.Fatal(err)
		}
		if v.Real == nil {
			t.Fatal("/api/state has no real cluster")
		}
		return v
	}
	metric := func(v ViewState, name string) (float64, bool) {
		for _, m := range v.Real.Metrics {
			if m.Name == name {
				return m.Value, m.Found
			}
		}
		return 0, false
	}
	// The counters before the writes, once the first read of /metrics is in.
	var before ViewState
	// A deadline against a hang, not a timing: the view reads /metrics on
	// its own schedule, and a machine busy with a whole test run is slow.
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 2*time.Minute, true, func(context.Context) (bool, error) {
		before = state()
		_, ok := metric(before, "apiserver_watch_cache_events_received_total")
		return ok, nil
	}); err != nil {
		t.Fatalf("the kube-apiserver's watch-cache metrics never came: %+v", before.Real)
	}

	const creates = 20
	for range creates {
		if _, err := s.Create(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Update(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Delete(ctx); err != nil {
		t.Fatal(err)
	}
	const writes = creates + 2

	receivedBefore := mustMetric(t, before, "apiserver_watch_cache_events_received_total")
	var after ViewState
	settled := func() bool {
		after = state()
		r, mine := after.Real, after.Informer
		received, _ := metric(after, "apiserver_watch_cache_events_received_total")
		rv, _ := metric(after, "apiserver_watch_cache_resource_version")
		syncRV, _ := strconv.ParseFloat(r.LastSyncRV, 64)
		return r.Written == writes && r.Failed == 0 &&
			r.Objects == creates-1 && mine.Objects == creates-1 &&
			r.Handler.Adds == creates && r.Handler.Updates == 1 && r.Handler.Deletes == 1 &&
			received-receivedBefore >= writes && rv >= syncRV
	}
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) { return settled(), nil }); err != nil {
		b, _ := json.MarshalIndent(after.Real, "", "  ")
		t.Fatalf("the real side did not settle on %d writes; last state:\n%s\ncourse's informer: %d objects", writes, b, after.Informer.Objects)
	}
	r := after.Real
	// The same ConfigMaps on both sides, by the color index too.
	if !maps.Equal(r.IndexKeys, after.Informer.IndexKeys) {
		t.Errorf("index \"color\": real %v, course's %v", r.IndexKeys, after.Informer.IndexKeys)
	}
	if capacity, ok := metric(after, "watch_cache_capacity"); !ok || capacity < 1 {
		t.Errorf("watch_cache_capacity for ConfigMaps: %v (found %v), want a ring", capacity, ok)
	}
	if watches, _ := metric(after, "apiserver_longrunning_requests"); watches < 1 {
		t.Errorf("open watches on ConfigMaps: %v, want at least client-go's informer's", watches)
	}
	sentBefore := mustMetric(t, before, "apiserver_watch_events_total")
	if sent, _ := metric(after, "apiserver_watch_events_total"); sent-sentBefore < writes {
		t.Errorf("apiserver_watch_events_total grew by %v, want at least the %d events sent to client-go's informer", sent-sentBefore, writes)
	}
	// A LIST at resourceVersion "0" is served from the watch cache; since
	// 1.37 the cache counts it in apiserver_storage_list_total with
	// storage="watchcache" (the row "LISTs served from the watch cache").
	// 1.36 counts it in apiserver_cache_list_total alone, which the row
	// reads there (realMetricsFor says why).
	v, err := c.ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	listedFromCache := "apiserver_storage_list_total" // {storage="watchcache"}
	if v.Minor() < 37 {
		listedFromCache = "apiserver_cache_list_total"
	}
	listedBefore, _ := metric(after, listedFromCache)
	if _, err := c.Client.CoreV1().ConfigMaps(realNS).List(ctx, metav1.ListOptions{ResourceVersion: "0"}); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		listed, found := metric(state(), listedFromCache)
		return found && listed > listedBefore, nil
	}); err != nil {
		t.Errorf("%s for ConfigMaps (the watch cache's LISTs at %s) did not grow after a LIST at resourceVersion 0 (was %v)", listedFromCache, v, listedBefore)
	}
	t.Logf("real: %d objects, handler lag p50 %.1f ms; course's: p50 %.1f ms", r.Objects, r.Handler.P50LagMs, after.Informer.Handler.P50LagMs)

	t.Run("in the browser", func(t *testing.T) {
		chrome := chromium(t)
		outDir := screenshotDir(t)
		if err := os.MkdirAll(outDir, 0o755); err != nil {
			t.Fatal(err)
		}
		p := openPage(t, ctx, s, chrome, outDir)
		want := fmt.Sprint(creates - 1)
		p.waitText("client-go's Indexer", "#real-objects", func(s string) bool { return s == want })
		rows := p.waitText("the metrics", "#real-metrics", func(s string) bool {
			return strings.Contains(s, "apiserver_watch_cache_events_received_total") && !strings.Contains(s, "not read yet")
		})
		for _, m := range realMetricsFor(int(v.Minor())) {
			if !strings.Contains(rows, m.name) {
				t.Errorf("the metrics table has no row for %s", m.name)
			}
		}
		p.shot("real.png")
		p.checkRequests()
	})
}

func mustMetric(t *testing.T, v ViewState, name string) float64 {
	t.Helper()
	for _, m := range v.Real.Metrics {
		if m.Name == name && m.Found {
			return m.Value
		}
	}
	t.Fatalf("no %s in the first read of /metrics", name)
	return 0
}
