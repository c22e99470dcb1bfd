package main

// The real cluster beside the course's stack. Where a cluster is up (the
// embedded labcluster of scripts/cluster-up.sh, or kind), the view writes the
// same ConfigMaps to it as to the course's stack, watches them with
// client-go's own SharedIndexInformer, and reads the kube-apiserver's watch
// cache from its /metrics: what can be seen of the real layers from outside,
// next to the course's twins seen from inside.
//
// Upstream counterparts: the informer is k8s.io/client-go@v0.37.0
// tools/cache (shared_informer.go, reflector.go, the FIFO), unchanged; the
// metrics are those of k8s.io/apiserver@v0.37.0
// pkg/storage/cacher/metrics/metrics.go, pkg/storage/metrics/metrics.go and
// pkg/endpoints/metrics/metrics.go.
// Left out: the real cluster's compaction and restart (the buttons act on the
// course's stack only: the real etcd and kube-apiserver belong to the
// learner's cluster, which other labs use).

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
)

// viewLabel selects the view's ConfigMaps on the real cluster: each has a
// color label.
const viewLabel = "color"

// realCluster is a kube-apiserver the view writes to and watches.
type realCluster struct {
	server string
	ns     string // where the view writes: "view"
	client kubernetes.Interface
	inf    cache.SharedIndexInformer
	name   *cache.InformerName
	fifo   fifoGauges
	log    *eventLog

	handler  handlerStats
	writesMu sync.Mutex
	writes   map[string]time.Time
	written  atomic.Int64
	failed   atomic.Int64

	// want is the metrics the view reads: realMetricsFor the server's
	// minor release.
	want []realMetric

	metricsMu  sync.Mutex
	metrics    []MetricRow
	metricsAt  time.Time
	metricsErr string

	stop context.CancelFunc
	done sync.WaitGroup
}

// RealView is the real cluster's part of the page.
type RealView struct {
	Server      string         `json:"server"`
	Synced      bool           `json:"synced"`
	Objects     int            `json:"objects"`
	LastSyncRV  string         `json:"lastSyncRV"`
	QueueLen    int64          `json:"queueLen"`
	StoreRV     int64          `json:"storeRV"`
	IndexKeys   map[string]int `json:"indexKeys"`
	Handler     HandlerView    `json:"handler"`
	Written     int64          `json:"written"`
	Failed      int64          `json:"failed"`
	Metrics     []MetricRow    `json:"metrics"`
	MetricsAt   time.Time      `json:"metricsAt"`
	MetricsErr  string         `json:"metricsError,omitempty"`
	MetricsNote string         `json:"metricsNote"`
}

// MetricRow is one watch-cache metric of the real kube-apiserver, for
// ConfigMaps, with what it counts and where the course shows the same.
type MetricRow struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
	Found bool    `json:"found"`
	Shows string  `json:"shows"`
	Twin  string  `json:"twin"`
}

// realMetric says which series of /metrics a row sums.
type realMetric struct {
	name   string
	labels map[string]string // every series with these labels is summed
	shows  string
	twin   string
}

// realMetrics: the kube-apiserver's own view of its watch cache for
// ConfigMaps. The names are those registered with `EventsReceivedCounter`
// and the rest of the cacher's metrics,
// k8s.io/apiserver@v0.37.0/pkg/storage/cacher/metrics/metrics.go:75-279
// (three of them, watch_cache_capacity*, have no "apiserver_" namespace
// there), pkg/endpoints/metrics/metrics.go:85-93,155-163, and the LIST
// counter `listStorageCount`, pkg/storage/metrics/metrics.go:33-40. Where
// each is counted: events_received_total in watchCache.processEvent
// (`EventsReceivedCounter`, pkg/storage/cacher/watch_cache.go:219),
// events_dispatched_total for every event the dispatcher takes in, the
// storage's bookmarks too, which it does not pass on (`EventsCounter`,
// cacher.go:942-946), initializations_total when the cache is replaced by
// its reflector's list (`WatchCacheInitializations`, cacher.go:489-495).
// LISTs served from the cache: since 1.37 `RecordListCacheMetrics` counts
// them in apiserver_storage_list_total with storage="watchcache"
// (pkg/storage/cacher/metrics/metrics.go:313-318), the family that counts
// etcd's LISTs with storage="etcd"; the older apiserver_cache_list_total
// is deprecated since 1.37.0 (its `DeprecatedVersion`,
// pkg/storage/cacher/metrics/metrics.go:76-84).
var realMetrics = []realMetric{
	{"apiserver_watch_cache_resource_version", cm(), "the watch cache's resourceVersion", "Cacher: RV"},
	{"watch_cache_capacity", cm(), "the ring's capacity", "ring: capacity"},
	{"watch_cache_capacity_increase_total", cm(), "times the ring grew", "ring: resizes"},
	{"watch_cache_capacity_decrease_total", cm(), "times the ring shrank", "ring: resizes"},
	{"apiserver_watch_cache_events_received_total", cm(), "events from etcd into the ring", "ring: newest RV"},
	{"apiserver_watch_cache_events_dispatched_total", cm(), "events the dispatcher took in (the storage's bookmarks too, not passed on)", "dispatcher: dispatched"},
	{"apiserver_terminated_watchers_total", cm(), "watchers cut off for being too slow", "dispatcher: terminated"},
	{"apiserver_watch_cache_initializations_total", cm(), "times the cache was filled afresh (its reflector's Replace)", "Cacher: relists"},
	{"apiserver_storage_list_total", map[string]string{"group": "", "resource": "configmaps", "storage": "watchcache"}, "LISTs served from the watch cache", "lab 04 README: Where lists go"},
	{"apiserver_longrunning_requests", map[string]string{"verb": "WATCH", "group": "", "resource": "configmaps"}, "open watches on ConfigMaps", "cacheWatchers"},
	{"apiserver_watch_events_total", map[string]string{"group": "", "resource": "configmaps"}, "events sent to watch clients", "WatchServer: frames"},
}

func cm() map[string]string { return map[string]string{"group": "", "resource": "configmaps"} }

// realMetricsFor returns the metrics the view reads from a kube-apiserver
// of the given minor release (1.minor). Before 1.37 the watch cache's LISTs
// are counted only in apiserver_cache_list_total{group,resource,index}
// (`listCacheCount`, k8s.io/apiserver@v0.36.4/pkg/storage/cacher/metrics/metrics.go:43-51,
// which `RecordListCacheMetrics` increments, :241-245, from Cacher.GetList,
// k8s.io/apiserver@v0.36.4/pkg/storage/cacher/cacher.go:849), and
// apiserver_storage_list_total has no storage label: it counts etcd's LISTs
// alone (`listStorageCount`, k8s.io/apiserver@v0.36.4/pkg/storage/etcd3/metrics/metrics.go:145-152).
// So on 1.36 the row "LISTs served from the watch cache" reads
// apiserver_cache_list_total. Every other row has the same name and labels
// at 1.36.
func realMetricsFor(minor int) []realMetric {
	if minor >= 37 {
		return realMetrics
	}
	out := slices.Clone(realMetrics)
	for i, m := range out {
		if m.name == "apiserver_storage_list_total" {
			out[i].name, out[i].labels = "apiserver_cache_list_total", cm()
		}
	}
	return out
}

// serverMinor reads the minor release of the server from its /version
// (upstream's `version.Info`, whose gitVersion is v1.MINOR.PATCH).
func serverMinor(ctx context.Context, client kubernetes.Interface) (int, error) {
	info, err := discovery.ToDiscoveryInterfaceWithContext(client.Discovery()).ServerVersionWithContext(ctx)
	if err != nil {
		return 0, fmt.Errorf("/version: %w", err)
	}
	v, err := version.ParseGeneric(info.GitVersion)
	if err != nil {
		return 0, fmt.Errorf("/version: gitVersion %q: %w", info.GitVersion, err)
	}
	return int(v.Minor()), nil
}

// fifoGauges is the informer's metrics provider: client-go reports its
// FIFO's depth through it, the only way to see that from outside, and its
// store's resourceVersion too (which the Indexer's
// LastStoreSyncResourceVersion also gives): `InformerMetricsProvider`,
// k8s.io/client-go@v0.37.0/tools/cache/informer_metrics.go:37-59. Since 1.36
// the informer's FIFO is a RealFIFO with atomic events: a whole list or
// relist is one queued item (`addReplaceToItemsLocked`,
// k8s.io/client-go@v0.37.0/tools/cache/the_real_fifo.go:294-320).
type fifoGauges struct {
	queued  atomicGauge
	storeRV atomicGauge
}

type atomicGauge struct{ v atomic.Int64 }

func (g *atomicGauge) Set(f float64) { g.v.Store(int64(f)) }

type noHistogram struct{}

func (noHistogram) Observe(float64) {}

func (f *fifoGauges) NewQueuedItemMetric(cache.InformerNameAndResource) cache.GaugeMetric {
	return &f.queued
}
func (f *fifoGauges) NewProcessingLatencyMetric(cache.InformerNameAndResource) cache.HistogramMetric {
	return noHistogram{}
}
func (f *fifoGauges) NewStoreResourceVersionMetric(cache.InformerNameAndResource) cache.GaugeMetric {
	return &f.storeRV
}

// startReal connects to the cluster of kubeconfig, empties the view's
// namespace there (the names restart at cm-00001 with each view), starts
// client-go's informer on it and the metrics reader, and waits for the
// informer's first sync.
func startReal(ctx context.Context, kubeconfig, namespace string, log *eventLog) (*realCluster, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("the real cluster's kubeconfig: %w", err)
	}
	cfg.QPS = -1 // the same writes as the course's stack, at the same pace
	cfg.UserAgent = "view-real (client-go informer)"
	cfg.Timeout = 30 * time.Second
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	minor, err := serverMinor(ctx, client)
	if err != nil {
		return nil, fmt.Errorf("the real cluster at %s: %w", cfg.Host, err)
	}
	r := &realCluster{server: cfg.Host, client: client, ns: namespace, log: log, writes: map[string]time.Time{}, want: realMetricsFor(minor)}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}
	if _, err := client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("the real cluster at %s: create namespace %s: %w", cfg.Host, namespace, err)
	}
	// Only the view's own ConfigMaps, which all carry a color label: the
	// namespace also holds kube-root-ca.crt, which the controller-manager
	// puts in every namespace.
	mine := metav1.ListOptions{LabelSelector: viewLabel}
	old, err := client.CoreV1().ConfigMaps(namespace).List(ctx, mine)
	if err != nil {
		return nil, fmt.Errorf("the real cluster at %s: %w", cfg.Host, err)
	}
	if n := len(old.Items); n > 0 {
		if err := client.CoreV1().ConfigMaps(namespace).DeleteCollection(ctx, metav1.DeleteOptions{}, mine); err != nil {
			return nil, fmt.Errorf("the real cluster at %s: delete the last view's ConfigMaps: %w", cfg.Host, err)
		}
		log.add("real", fmt.Sprintf("deleted %d ConfigMaps an earlier view left in namespace %s", n, namespace), nil)
	}

	// client-go's informer names must be unique in a process; a test may
	// start several views one after another.
	if r.name, err = cache.NewInformerName(fmt.Sprintf("listwatch-labs-view-%d", time.Now().UnixNano())); err != nil {
		return nil, err
	}
	lw := cache.NewFilteredListWatchFromClient(client.CoreV1().RESTClient(), "configmaps", namespace, func(o *metav1.ListOptions) { o.LabelSelector = viewLabel })
	r.inf = cache.NewSharedIndexInformerWithOptions(lw, &corev1.ConfigMap{}, cache.SharedIndexInformerOptions{
		Indexers:                cache.Indexers{"color": colorIndex},
		Identifier:              r.name.WithResource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}),
		InformerMetricsProvider: &r.fifo,
	})
	err = errors.Join(
		r.inf.SetTransform(func(obj any) (any, error) {
			if a, ok := obj.(metav1.Object); ok {
				a.SetManagedFields(nil)
			}
			return obj, nil
		}),
		r.inf.SetWatchErrorHandlerWithContext(func(_ context.Context, _ *cache.Reflector, err error) {
			log.add("real", "client-go Reflector: "+err.Error(), nil)
		}))
	if err == nil {
		_, err = r.inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { r.handled("add", obj) },
			UpdateFunc: func(_, obj any) { r.handled("update", obj) },
			DeleteFunc: func(obj any) { r.handled("delete", obj) },
		})
	}
	if err != nil {
		r.name.Release()
		return nil, err
	}
	runCtx, cancel := context.WithCancel(context.Background())
	r.stop = cancel
	r.done.Go(func() { r.inf.RunWithContext(runCtx) })
	r.done.Go(func() { r.readMetrics(runCtx) })
	syncCtx, cancelSync := context.WithTimeout(ctx, time.Minute)
	defer cancelSync()
	if !cache.WaitForCacheSync(syncCtx.Done(), r.inf.HasSynced) {
		r.Close()
		return nil, fmt.Errorf("client-go's informer on the real cluster at %s did not sync within a minute", cfg.Host)
	}
	return r, nil
}

// colorIndex indexes a ConfigMap by its color label, like the course's
// informer.LabelIndexFunc("color").
func colorIndex(obj any) ([]string, error) {
	m, err := metaOf(obj)
	if err != nil {
		return nil, err
	}
	if c, ok := m.GetLabels()["color"]; ok {
		return []string{c}, nil
	}
	return nil, nil
}

func metaOf(obj any) (metav1.Object, error) {
	m, ok := obj.(metav1.Object)
	if !ok {
		return nil, fmt.Errorf("%T has no metadata", obj)
	}
	return m, nil
}

// Close stops the informer and the metrics reader.
func (r *realCluster) Close() {
	r.stop()
	r.done.Wait()
	r.name.Release()
}

// handled is the real informer's handler; it counts like the course's.
func (r *realCluster) handled(kind string, obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	name := "?"
	if m, err := metaOf(obj); err == nil {
		name = m.GetName()
	}
	r.writesMu.Lock()
	sent, known := r.writes[name]
	delete(r.writes, name)
	r.writesMu.Unlock()
	r.handler.record(kind, time.Since(sent), known)
}

func (r *realCluster) sent(name string) {
	r.writesMu.Lock()
	r.writes[name] = time.Now()
	r.writesMu.Unlock()
}

// result counts a write and logs a failure: a write the real cluster
// refuses does not stop the course's stack.
func (r *realCluster) result(what, name string, err error) {
	if err != nil {
		r.failed.Add(1)
		r.log.add("real", fmt.Sprintf("%s %s on the real cluster: %v", what, name, err), nil)
		return
	}
	r.written.Add(1)
}

// create, update and del repeat a write of the course's stack.
func (r *realCluster) create(ctx context.Context, cm *corev1.ConfigMap) {
	c := cm.DeepCopy()
	c.ResourceVersion, c.Namespace = "", r.ns
	r.sent(c.Name)
	_, err := r.client.CoreV1().ConfigMaps(r.ns).Create(ctx, c, metav1.CreateOptions{})
	r.result("create", c.Name, err)
}

func (r *realCluster) update(ctx context.Context, name, value string) {
	cms := r.client.CoreV1().ConfigMaps(r.ns)
	cm, err := cms.Get(ctx, name, metav1.GetOptions{})
	if err == nil {
		if cm.Data == nil {
			cm.Data = map[string]string{}
		}
		cm.Data["v"] = value
		r.sent(name)
		_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
	}
	r.result("update", name, err)
}

func (r *realCluster) del(ctx context.Context, name string) {
	r.sent(name)
	r.result("delete", name, r.client.CoreV1().ConfigMaps(r.ns).Delete(ctx, name, metav1.DeleteOptions{}))
}

// readMetrics reads /metrics once a second (the page shows at most ten
// states a second; the counters need no more).
func (r *realCluster) readMetrics(ctx context.Context) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		rows, err := r.scrape(ctx)
		r.metricsMu.Lock()
		if err != nil {
			r.metricsErr = err.Error()
		} else {
			r.metrics, r.metricsAt, r.metricsErr = rows, time.Now(), ""
		}
		r.metricsMu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (r *realCluster) scrape(ctx context.Context) ([]MetricRow, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	body, err := r.client.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("GET /metrics: %w", err)
	}
	return sumMetrics(body, r.want)
}

// sumMetrics reads the Prometheus text format and sums, for each wanted
// metric, the series whose labels include the wanted ones.
func sumMetrics(body []byte, want []realMetric) ([]MetricRow, error) {
	rows := make([]MetricRow, len(want))
	byName := map[string][]int{}
	for i, m := range want {
		rows[i] = MetricRow{Name: m.name, Shows: m.shows, Twin: m.twin}
		byName[m.name] = append(byName[m.name], i)
	}
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		name, labels, value, err := parseSample(line)
		if err != nil {
			return nil, err
		}
		for _, i := range byName[name] {
			if hasLabels(labels, want[i].labels) {
				rows[i].Value += value
				rows[i].Found = true
			}
		}
	}
	return rows, sc.Err()
}

var labelRE = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"`)

// parseSample splits `name{a="x",b="y"} value [timestamp]`.
func parseSample(line string) (string, map[string]string, float64, error) {
	name, rest := line, ""
	labels := map[string]string{}
	if i := strings.IndexByte(line, '{'); i >= 0 {
		j := strings.LastIndexByte(line, '}')
		if j < i {
			return "", nil, 0, fmt.Errorf("/metrics: unreadable line %q", line)
		}
		name, rest = line[:i], line[j+1:]
		for _, m := range labelRE.FindAllStringSubmatch(line[i+1:j], -1) {
			labels[m[1]] = m[2]
		}
	} else if i := strings.IndexByte(line, ' '); i >= 0 {
		name, rest = line[:i], line[i:]
	}
	fieldsOf := strings.Fields(rest)
	if len(fieldsOf) == 0 {
		return "", nil, 0, fmt.Errorf("/metrics: no value in %q", line)
	}
	v, err := strconv.ParseFloat(fieldsOf[0], 64)
	if err != nil || math.IsNaN(v) {
		return "", nil, 0, errors.Join(fmt.Errorf("/metrics: bad value in %q", line), err)
	}
	return name, labels, v, nil
}

func hasLabels(have, want map[string]string) bool {
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}

// view is the real cluster's part of a snapshot.
func (r *realCluster) view() *RealView {
	v := &RealView{
		Server: r.server, Synced: r.inf.HasSynced(), LastSyncRV: r.inf.LastSyncResourceVersion(),
		QueueLen: r.fifo.queued.v.Load(), StoreRV: r.fifo.storeRV.v.Load(),
		IndexKeys: map[string]int{}, Written: r.written.Load(), Failed: r.failed.Load(),
		MetricsNote: "kube-apiserver's /metrics, read once a second; counters since it started, for every ConfigMap of the cluster",
	}
	idx := r.inf.GetIndexer()
	v.Objects = len(idx.ListKeys())
	for _, c := range idx.ListIndexFuncValues("color") {
		keys, _ := idx.IndexKeys("color", c)
		v.IndexKeys[c] = len(keys)
	}
	v.Handler = r.handler.view()
	r.metricsMu.Lock()
	v.Metrics, v.MetricsAt, v.MetricsErr = r.metrics, r.metricsAt, r.metricsErr
	r.metricsMu.Unlock()
	return v
}
