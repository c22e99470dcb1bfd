package cacher

// A consistent LIST (resourceVersion "") from the cache.
//
// Upstream twins: `CacheDelegator.GetList`, which serves from the Cacher,
// falls back to etcd on "too large resource version" and counts it in
// `ConsistentReadTotal` with a fallback label
// (k8s.io/apiserver@v0.37.0/pkg/storage/cacher/delegator.go:131-183);
// `waitAndListConsistent`, which reads etcd's current revision
// (k8s.io/apiserver@v0.37.0/pkg/storage/cacher/watch_cache.go:483-491); and
// `waitUntilFreshLocked`, which waits for the cache at most `blockTimeout`,
// 3 s (k8s.io/apiserver@v0.37.0/pkg/storage/cacher/watch_cache.go:317-362).
//
// RV "" means "the newest data". The cache may be behind etcd by a few
// events, so it cannot just answer. Instead:
//  1. ask etcd for its current revision. Upstream's etcd3 store does it
//     with `GetCurrentResourceVersion`, one etcd Get of the bare resource
//     prefix (k8s.io/apiserver@v0.37.0/pkg/storage/etcd3/store.go:728-745):
//     the one key /registry/<resource>, which holds nothing, read only for
//     the revision in the response's header (1.36 read the same key through
//     a non-recursive GetList); this lab's etcd3 store does the same Get;
//  2. wait until the cache's resourceVersion reaches it. If the resource
//     is busy, events carry the cache there. If it is idle, nothing would
//     (etcd sends progress notifications on its own only every 10 minutes,
//     `progressReportInterval`,
//     go.etcd.io/etcd/server/v3@v3.7.0/etcdserver/api/v3rpc/watch.go:94), so
//     while readers wait, the Cacher's one progress requester (progress.go)
//     asks etcd for a progress notification, which the reflector's watch
//     receives as a bookmark and which moves the cache's resourceVersion
//     (watch_cache.go, UpdateResourceVersion);
//  3. if 3 s pass first, answer from etcd instead.
//
// Which one answered is counted: Metrics().ConsistentReadsFromCache and
// ConsistentReadsFallback (upstream: `ConsistentReadTotal`,
// apiserver_watch_cache_consistent_read_total with fallback="true"/"false",
// k8s.io/apiserver@v0.37.0/pkg/storage/cacher/metrics/metrics.go:233-240).
//
// Left out: the check that etcd supports progress requests
// (`ConsistentReadSupported`,
// k8s.io/apiserver@v0.37.0/pkg/storage/cacher/delegator/interface.go:107-109;
// every etcd this course runs does), and the alpha gate
// `ConsistentListFromCacheSkipTimeoutFallback`, new in 1.37 and off by
// default (k8s.io/apiserver@v0.37.0/pkg/features/kube_features.go:363-365),
// which answers 429 instead of falling back to etcd
// (k8s.io/apiserver@v0.37.0/pkg/storage/cacher/delegator.go:160-168). Serving
// consistent LISTs from the cache has no gate since 1.37: 1.36's
// `ConsistentListFromCache`, GA and locked on, was deleted.

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/storage"
)

func (c *Cacher) consistentList(ctx context.Context, key string, opts storage.ListOptions, listObj runtime.Object) error {
	currentRV, err := c.storage.GetCurrentResourceVersion(ctx)
	if err != nil {
		return err
	}
	err = c.listFromCache(ctx, key, opts, currentRV, c.progress, listObj)
	if storage.IsTooLargeResourceVersion(err) {
		c.metrics.consistentReadsFallback.Add(1)
		c.metrics.listsFromStorage.Add(1)
		return c.storage.GetList(ctx, key, opts, listObj)
	}
	if err == nil {
		c.metrics.consistentReadsFromCache.Add(1)
	}
	return err
}
