package cacher

// Counters that show what the Cacher did.
//
// Upstream twin: the metrics of the cacher, `EventsCounter`
// (apiserver_watch_cache_events_dispatched_total), `TerminatedWatchersCounter`
// (apiserver_terminated_watchers_total), `WatchCacheCapacity`
// (watch_cache_capacity), `WatchCacheInitializations`
// (apiserver_watch_cache_initializations_total) and `ConsistentReadTotal`
// (apiserver_watch_cache_consistent_read_total), among others
// (k8s.io/apiserver@v0.37.0/pkg/storage/cacher/metrics/metrics.go:127-240).
// New in 1.37, the dispatch-duration histogram,
// apiserver_watch_events_dispatch_duration_seconds{group,resource,stage}
// (`DispatchStageDuration`, k8s.io/apiserver@v0.37.0/pkg/storage/cacher/metrics/metrics.go:269-278,
// with the same buckets and stages, observed in cache_watcher.go's
// observeDispatchMetrics).
// Upstream registers Prometheus metrics with `MustRegister`
// (k8s.io/apiserver@v0.37.0/pkg/storage/cacher/metrics/metrics.go:287-306);
// here they are plain counters read with Metrics(), and whoever serves
// /metrics (the miniapiserver) exports them.

import (
	"sync/atomic"
	"time"
)

// The stages of the dispatch-duration histogram (upstream: `DispatchStage`,
// k8s.io/apiserver@v0.37.0/pkg/storage/cacher/metrics/metrics.go:40-65).
const (
	stageTotal = iota
	stageStorageToCache
	stageCacheToWatcher
	numDispatchStages
)

// DispatchStages names the stages, by index: the histogram's stage label.
var DispatchStages = [numDispatchStages]string{"total", "storage_to_cache", "cache_to_watcher"}

// DispatchDurationBuckets are the histogram's upper bounds in seconds,
// upstream's `Buckets` (k8s.io/apiserver@v0.37.0/pkg/storage/cacher/metrics/metrics.go:277).
var DispatchDurationBuckets = [numDispatchBuckets]float64{0.0001, 0.0005, 0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5}

const numDispatchBuckets = 13

// durationHistogram counts durations into DispatchDurationBuckets, with no
// lock: each watcher's goroutine observes into it.
type durationHistogram struct {
	buckets  [numDispatchBuckets]atomic.Uint64 // not cumulative
	count    atomic.Uint64
	sumNanos atomic.Int64
}

func (h *durationHistogram) observe(d time.Duration) {
	s := d.Seconds()
	for i, bound := range DispatchDurationBuckets {
		if s <= bound {
			h.buckets[i].Add(1)
			break
		}
	}
	h.count.Add(1)
	h.sumNanos.Add(int64(d))
}

// Histogram is a histogram's state: Buckets[i] counts the observations
// <= DispatchDurationBuckets[i] (cumulative, as Prometheus wants).
type Histogram struct {
	Count   uint64
	Sum     float64 // seconds
	Buckets []uint64
}

func (h *durationHistogram) state() Histogram {
	st := Histogram{Count: h.count.Load(), Sum: time.Duration(h.sumNanos.Load()).Seconds(),
		Buckets: make([]uint64, len(DispatchDurationBuckets))}
	var cum uint64
	for i := range h.buckets {
		cum += h.buckets[i].Load()
		st.Buckets[i] = cum
	}
	return st
}

type metrics struct {
	eventsDispatched         atomic.Int64
	blockedDispatches        atomic.Int64
	dispatchWaiting          atomic.Bool
	watchersTerminated       atomic.Int64
	bookmarksSent            atomic.Int64
	relists                  atomic.Int64
	reflectorErrors          atomic.Int64
	expiredWatches           atomic.Int64
	storageWatchesOpen       atomic.Int64
	listsFromCache           atomic.Int64
	listsFromStorage         atomic.Int64
	consistentReadsFromCache atomic.Int64
	consistentReadsFallback  atomic.Int64
	progressRequests         atomic.Int64
	lastReflectorError       atomic.Value // string
	dispatchDurations        [numDispatchStages]durationHistogram
}

// Metrics is a snapshot of the Cacher's counters and gauges.
type Metrics struct {
	// Watchers is the number of watchers connected now.
	Watchers int
	// RingCapacity is the event ring's current capacity.
	RingCapacity int
	// ResourceVersion is the RV the cache is current to.
	ResourceVersion uint64
	// EventsDispatched counts events the dispatcher fanned out.
	EventsDispatched int64
	// BlockedDispatches counts events for which some watcher's input was
	// full, so the dispatcher spent time budget.
	BlockedDispatches int64
	// DispatchWaiting says the dispatcher is waiting on blocked watchers
	// now, its timer for this event running (a test on fake time steps
	// the clock only then).
	DispatchWaiting bool
	// WatchersTerminated counts watchers cut off for being too slow.
	WatchersTerminated int64
	// BookmarksSent counts periodic bookmarks offered to watchers.
	BookmarksSent int64
	// Relists counts lists of storage into the cache (1 after start).
	Relists int64
	// ReflectorErrors counts list/watch failures that led to a relist
	// attempt; ExpiredWatches those that were 410 Expired.
	ReflectorErrors int64
	ExpiredWatches  int64
	// StorageWatchesOpen is the number of storage (etcd) watches the
	// reflector has open: 1 while it runs normally.
	StorageWatchesOpen int64
	// ListsFromCache and ListsFromStorage count GetList calls by who
	// answered.
	ListsFromCache   int64
	ListsFromStorage int64
	// ConsistentReadsFromCache and ConsistentReadsFallback split the LISTs
	// with RV "": answered by the cache after catching up, or by etcd after
	// the 3 s bound.
	ConsistentReadsFromCache int64
	ConsistentReadsFallback  int64
	// ProgressRequests counts progress notifications requested from etcd.
	ProgressRequests int64
	// LastReflectorError is the error that caused the last relist ("" if
	// none): upstream logs it from `startCaching`
	// (k8s.io/apiserver@v0.37.0/pkg/storage/cacher/cacher.go:489-508); we
	// keep it for whoever shows metrics, and in the message of a not-ready
	// 429.
	LastReflectorError string
	// DispatchDurations is, by stage (DispatchStages), how long delivered
	// live events took: total from RecordTime to the watcher's result
	// channel, storage_to_cache from RecordTime to CacheReceived,
	// cache_to_watcher from the watch event built to it sent.
	DispatchDurations [numDispatchStages]Histogram
}

// Metrics returns the current counters.
func (c *Cacher) Metrics() Metrics {
	c.mu.Lock()
	watchers := len(c.watchers.all)
	for _, ws := range c.watchers.byValue {
		watchers += len(ws)
	}
	c.mu.Unlock()
	c.watchCache.RLock()
	capacity, rv := c.watchCache.history.Capacity(), c.watchCache.resourceVersion
	c.watchCache.RUnlock()
	m := &c.metrics
	lastErr, _ := m.lastReflectorError.Load().(string)
	var durations [numDispatchStages]Histogram
	for i := range durations {
		durations[i] = m.dispatchDurations[i].state()
	}
	return Metrics{
		DispatchDurations:        durations,
		Watchers:                 watchers,
		RingCapacity:             capacity,
		ResourceVersion:          rv,
		EventsDispatched:         m.eventsDispatched.Load(),
		BlockedDispatches:        m.blockedDispatches.Load(),
		DispatchWaiting:          m.dispatchWaiting.Load(),
		WatchersTerminated:       m.watchersTerminated.Load(),
		BookmarksSent:            m.bookmarksSent.Load(),
		Relists:                  m.relists.Load(),
		ReflectorErrors:          m.reflectorErrors.Load(),
		ExpiredWatches:           m.expiredWatches.Load(),
		StorageWatchesOpen:       m.storageWatchesOpen.Load(),
		ListsFromCache:           m.listsFromCache.Load(),
		ListsFromStorage:         m.listsFromStorage.Load(),
		ConsistentReadsFromCache: m.consistentReadsFromCache.Load(),
		ConsistentReadsFallback:  m.consistentReadsFallback.Load(),
		ProgressRequests:         m.progressRequests.Load(),
		LastReflectorError:       lastErr,
	}
}
