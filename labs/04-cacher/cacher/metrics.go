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
// Upstream registers Prometheus metrics with `MustRegister`
// (k8s.io/apiserver@v0.37.0/pkg/storage/cacher/metrics/metrics.go:287-306);
// here they are plain counters read with Metrics(), and whoever serves
// /metrics (the miniapiserver) exports them.

import "sync/atomic"

type metrics struct {
	eventsDispatched         atomic.Int64
	blockedDispatches        atomic.Int64
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
}

// Metrics returns the current counters.
func (c *Cacher) Metrics() Metrics {
	c.mu.Lock()
	watchers := len(c.watchers.all)
	for _, ws := range c.watchers.byValue {
		watchers += len(ws)
	}
	c.mu.Unlock()
	c.watchCache.mu.RLock()
	capacity, rv := c.watchCache.capacity, c.watchCache.resourceVersion
	c.watchCache.mu.RUnlock()
	m := &c.metrics
	lastErr, _ := m.lastReflectorError.Load().(string)
	return Metrics{
		Watchers:                 watchers,
		RingCapacity:             capacity,
		ResourceVersion:          rv,
		EventsDispatched:         m.eventsDispatched.Load(),
		BlockedDispatches:        m.blockedDispatches.Load(),
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
