package cacher

// A consistent LIST (resourceVersion "") from the cache.
//
// Upstream twins: k8s.io/apiserver@v0.36.4/pkg/storage/cacher/delegator.go
// (CacheDelegator.GetList: serve from the Cacher, fall back to etcd on
// "too large resource version", count it in ConsistentReadTotal with a
// fallback label), watch_cache.go (waitUntilFreshAndBlock, 3 s), and
// progress/watch_progress.go (ConditionalProgressRequester: while someone
// waits, ask etcd for a progress notification every 100 ms).
//
// RV "" means "the newest data". The cache may be behind etcd by a few
// events, so it cannot just answer. Instead:
//  1. ask etcd for its current revision (a cheap count-only read);
//  2. wait until the cache's resourceVersion reaches it. If the resource
//     is busy, events carry the cache there. If it is idle, nothing would,
//     so while waiting we ask etcd for a progress notification, which the
//     reflector's watch receives as a bookmark and which moves the cache's
//     resourceVersion (watch_cache.go, UpdateResourceVersion);
//  3. if 3 s pass first, answer from etcd instead.
//
// Which one answered is counted: Metrics().ConsistentReadsFromCache and
// ConsistentReadsFallback (upstream: the apiserver_watch_cache_consistent_read_total
// metric with fallback="true"/"false").
//
// Left out: the feature gate (ConsistentListFromCache, GA and locked on
// since 1.34 in k8s.io/apiserver@v0.36.4/pkg/features/kube_features.go) and
// the check that etcd supports progress requests (etcd 3.6 does).

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
