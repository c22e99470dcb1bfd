// /metrics in the Prometheus text format: the Cacher's counters, read on
// every scrape.
//
// Upstream: the Cacher registers its own Prometheus metrics with
// `MustRegister` (k8s.io/apiserver@v0.37.0/pkg/storage/cacher/metrics/metrics.go:287-306)
// and kube-apiserver serves them at /metrics. Where a metric has an upstream
// twin it has its name (apiserver_watch_cache_events_dispatched_total,
// apiserver_terminated_watchers_total, watch_cache_capacity — upstream's
// `WatchCacheCapacity` has no apiserver_ prefix, its options set only the
// subsystem (k8s.io/apiserver@v0.37.0/pkg/storage/cacher/metrics/metrics.go:179-187) —,
// apiserver_watch_cache_resource_version,
// apiserver_watch_cache_consistent_read_total); the others are this lab's
// and start with lab04_. Two differences are ours: upstream labels every
// cacher metric with group and resource, as `ConsistentReadTotal` does
// (k8s.io/apiserver@v0.37.0/pkg/storage/cacher/metrics/metrics.go:233-240),
// ours with resource only (both our resources are in the core group); and
// upstream's `EventsCounter` counts every event `dispatchEvents` takes in,
// the storage's bookmarks (progress notifications) included
// (k8s.io/apiserver@v0.37.0/pkg/storage/cacher/cacher.go:904-946), while
// ours counts the events it fans out.
// apiserver_watch_events_dispatch_duration_seconds, new in 1.37, is a
// histogram with upstream's buckets and stage label
// (`DispatchStageDuration`,
// k8s.io/apiserver@v0.37.0/pkg/storage/cacher/metrics/metrics.go:269-278).
// consistent_read_total has upstream's success and fallback labels, but
// success is always "true" here: our Cacher counts the reads the cache
// answered and every fallback to etcd, not the reads that failed.

package miniapiserver

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/listwatch-labs/listwatch-labs/labs/04-cacher/cacher"
)

// cacherCollector reads every Cacher's Metrics() when scraped, so the
// numbers are current and the Cacher needs no Prometheus code of its own.
type cacherCollector struct {
	in *Instance
}

type metricDesc struct {
	desc  *prometheus.Desc
	kind  prometheus.ValueType
	value func(m cacherMetrics) float64
}

type cacherMetrics = cacher.Metrics

var labels = []string{"resource"}

func desc(name, help string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, labels, nil)
}

var (
	consistentReadDesc = prometheus.NewDesc("apiserver_watch_cache_consistent_read_total",
		"LISTs with resourceVersion \"\": answered from the cache (fallback=false) or from etcd after the 3 s wait (fallback=true).",
		[]string{"resource", "success", "fallback"}, nil)
	dispatchDurationDesc = prometheus.NewDesc("apiserver_watch_events_dispatch_duration_seconds",
		"How long delivered live watch events took, by stage: total (storage saw it -> on the watcher's result channel), storage_to_cache, cache_to_watcher.",
		[]string{"resource", "stage"}, nil)
	cacherMetricDescs = []metricDesc{
		{desc("lab04_cacher_watchers", "Watchers connected to the Cacher now."), prometheus.GaugeValue,
			func(m cacherMetrics) float64 { return float64(m.Watchers) }},
		{desc("apiserver_watch_cache_events_dispatched_total", "Events the dispatcher fanned out to watchers."), prometheus.CounterValue,
			func(m cacherMetrics) float64 { return float64(m.EventsDispatched) }},
		{desc("lab04_cacher_blocked_dispatches_total", "Events for which some watcher's input was full, so the dispatcher spent time budget."), prometheus.CounterValue,
			func(m cacherMetrics) float64 { return float64(m.BlockedDispatches) }},
		{desc("apiserver_terminated_watchers_total", "Watchers cut off because they did not take events within the time budget."), prometheus.CounterValue,
			func(m cacherMetrics) float64 { return float64(m.WatchersTerminated) }},
		{desc("watch_cache_capacity", "Capacity of the watch cache's event ring."), prometheus.GaugeValue,
			func(m cacherMetrics) float64 { return float64(m.RingCapacity) }},
		{desc("apiserver_watch_cache_resource_version", "The resourceVersion the cache is current to."), prometheus.GaugeValue,
			func(m cacherMetrics) float64 { return float64(m.ResourceVersion) }},
		{desc("lab04_cacher_etcd_watches_open", "etcd watches the Cacher's reflector has open (1 while it runs)."), prometheus.GaugeValue,
			func(m cacherMetrics) float64 { return float64(m.StorageWatchesOpen) }},
		{desc("lab04_cacher_bookmarks_sent_total", "Periodic bookmarks offered to watchers."), prometheus.CounterValue,
			func(m cacherMetrics) float64 { return float64(m.BookmarksSent) }},
		{desc("lab04_cacher_relists_total", "Lists of etcd into the cache (1 after start)."), prometheus.CounterValue,
			func(m cacherMetrics) float64 { return float64(m.Relists) }},
		{desc("lab04_cacher_lists_from_cache_total", "LISTs answered from the cache's memory."), prometheus.CounterValue,
			func(m cacherMetrics) float64 { return float64(m.ListsFromCache) }},
		{desc("lab04_cacher_lists_from_etcd_total", "LISTs the Cacher sent on to etcd (exact resourceVersion, continue, limit)."), prometheus.CounterValue,
			func(m cacherMetrics) float64 { return float64(m.ListsFromStorage) }},
		{desc("lab04_cacher_progress_requests_total", "Progress notifications requested from etcd."), prometheus.CounterValue,
			func(m cacherMetrics) float64 { return float64(m.ProgressRequests) }},
	}
)

func (c cacherCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range cacherMetricDescs {
		ch <- d.desc
	}
	ch <- consistentReadDesc
	ch <- dispatchDurationDesc
}

func (c cacherCollector) Collect(ch chan<- prometheus.Metric) {
	for _, resource := range []string{"configmaps", "pods"} {
		m, ok := c.in.Metrics(resource)
		if !ok {
			continue
		}
		for _, d := range cacherMetricDescs {
			ch <- prometheus.MustNewConstMetric(d.desc, d.kind, d.value(m), resource)
		}
		ch <- prometheus.MustNewConstMetric(consistentReadDesc, prometheus.CounterValue, float64(m.ConsistentReadsFromCache), resource, "true", "false")
		ch <- prometheus.MustNewConstMetric(consistentReadDesc, prometheus.CounterValue, float64(m.ConsistentReadsFallback), resource, "true", "true")
		for i, h := range m.DispatchDurations {
			buckets := make(map[float64]uint64, len(h.Buckets))
			for j, n := range h.Buckets {
				buckets[cacher.DispatchDurationBuckets[j]] = n
			}
			ch <- prometheus.MustNewConstHistogram(dispatchDurationDesc, h.Count, h.Sum, buckets, resource, cacher.DispatchStages[i])
		}
	}
}

// metricsHandler serves this instance's Cacher metrics only (no Go runtime
// or process metrics: they would bury the lesson).
func metricsHandler(in *Instance) http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(cacherCollector{in})
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
}
