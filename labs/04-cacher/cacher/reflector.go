package cacher

// The reflector: list the resource from storage once, then watch it, and
// feed every change into the watchCache.
//
// Upstream twin: the Cacher's reflector is client-go's Reflector with the
// watchCache as its Store, created with `NewNamedReflector` in NewCacherFromConfig
// (k8s.io/apiserver@v0.37.0/pkg/storage/cacher/cacher.go:444-454), fed by
// the `listerWatcher` of
// k8s.io/apiserver@v0.37.0/pkg/storage/cacher/lister_watcher.go:50-58, and
// restarted by `startCaching`, which first terminates every watcher
// (k8s.io/apiserver@v0.37.0/pkg/storage/cacher/cacher.go:489-504), once a
// second (`wait.Until`, k8s.io/apiserver@v0.37.0/pkg/storage/cacher/cacher.go:477-484).
//
// We write our own loop instead, for two reasons: lab 05 is where the
// Reflector is taught (with its paging, watch-list and backoff policies),
// and here a reader should see in forty lines exactly when the Cacher keeps
// its one etcd watch and when it relists:
//   - the etcd watch closed without an error (stopped from outside, as a
//     storage that drops connections could end it; etcd's own client
//     resumes a broken gRPC stream by itself): watch again from the cache's
//     resourceVersion; nothing is lost, etcd still has that history;
//   - the watch failed, with 410 Expired (its revision was compacted while
//     we were not watching) or any other error: relist. The cache no longer
//     knows what happened in between, so, as upstream's `startCaching`
//     does before each ListAndWatch, every connected watcher is ended
//     cleanly (k8s.io/apiserver@v0.37.0/pkg/storage/cacher/cacher.go:489-504):
//     each one has received every event up to where its stream ends, and
//     resumes from its last RV (or gets 410 and relists, as a client must).
//
// Where upstream differs, and we chose not to follow:
//   - It does not load with a LIST. Its reflector uses watch-list when the
//     `WatchListClient` gate is on, beta and on by default since 1.35
//     (k8s.io/client-go@v0.37.0/features/known_features.go:141-144;
//     `useWatchList`, k8s.io/client-go@v0.37.0/tools/cache/reflector.go:361-368):
//     it watches the etcd3 store with `SendInitialEvents`
//     (k8s.io/apiserver@v0.37.0/pkg/storage/cacher/lister_watcher.go:108-136;
//     kube-apiserver's own gate must be on too, beta and on by default,
//     else it refuses and the reflector lists (`WatchList`,
//     k8s.io/apiserver@v0.37.0/pkg/storage/cacher/lister_watcher.go:130-132),
//     which reads etcd's current state (with etcd's RangeStream since 1.37,
//     else in pages of 10,000: `sync`,
//     k8s.io/apiserver@v0.37.0/pkg/storage/etcd3/watcher.go:298-312) and
//     ends the initial events with the initial-events-end bookmark (`startWatching`,
//     k8s.io/apiserver@v0.37.0/pkg/storage/etcd3/watcher.go:444-476). Its
//     `storageWatchListPageSize` of 10,000
//     (k8s.io/apiserver@v0.37.0/pkg/storage/cacher/cacher.go:450) pages only
//     the LIST it falls back to (TestUpstreamCacherLoadsByWatchList shows
//     upstream's Cacher loading without a LIST). We list, unpaged, to keep
//     list-then-watch visible.
//   - It does not relist on every error. The Cacher sets
//     `MaxInternalErrorRetryDuration` to 30 s so that etcd losing its leader
//     does not end every watcher
//     (k8s.io/apiserver@v0.37.0/pkg/storage/cacher/cacher.go:451-454):
//     client-go re-watches from its last RV after an internal error until
//     that long has passed (`ShouldRetry`,
//     k8s.io/client-go@v0.37.0/tools/cache/reflector.go:660-662), and backs
//     off and re-watches on a 429 or a refused connection
//     (`isWatchErrorRetriable`, called at
//     k8s.io/client-go@v0.37.0/tools/cache/reflector.go:607-614 and defined at
//     k8s.io/client-go@v0.37.0/tools/cache/reflector.go:1195-1205),
//     all without returning from ListAndWatch. We relist after any error,
//     1 s of the injected clock later (the same cadence as upstream's
//     restarts): simpler, and costlier when etcd loses its leader
//     (TestInternalWatchErrorUpstreamKeepsWatchersOursRelists shows both).

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/storage"
)

// Watchers of the previous generation cannot be continued across a relist:
// Replace ends their streams (Cacher.terminateAllWatchers, run by the
// watchCache's onReplace; upstream's `startCaching` calls it,
// k8s.io/apiserver@v0.37.0/pkg/storage/cacher/cacher.go:489-504).

// relistBackoff is the wait between failed list-watch attempts.
const relistBackoff = time.Second

func (c *Cacher) runReflector(ctx context.Context) {
	defer c.wg.Done()
	for ctx.Err() == nil {
		err := c.listAndWatch(ctx)
		if ctx.Err() != nil {
			return
		}
		// The error first: whoever sees the count can read it.
		c.metrics.lastReflectorError.Store(err.Error())
		c.metrics.reflectorErrors.Add(1)
		timer := c.clock.NewTimer(relistBackoff)
		select {
		case <-timer.C():
		case <-ctx.Done():
			timer.Stop()
			return
		}
	}
}

// listAndWatch lists, replaces the cache's contents, and watches until the
// watch can no longer be resumed.
func (c *Cacher) listAndWatch(ctx context.Context) error {
	list := c.newListFunc()
	everything := storage.SelectionPredicate{Label: labels.Everything(), Field: fields.Everything()}
	// RV "": a consistent list, the newest state etcd has.
	if err := c.storage.GetList(ctx, c.resourcePrefix, storage.ListOptions{Recursive: true, Predicate: everything}, list); err != nil {
		return err
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		return err
	}
	listRV, err := c.versioner.ParseResourceVersion(mustListRV(list))
	if err != nil {
		return err
	}
	if err := c.watchCache.Replace(items, listRV); err != nil {
		return err
	}
	c.metrics.relists.Add(1)

	for {
		c.watchCache.RLock()
		rv := c.watchCache.resourceVersion
		c.watchCache.RUnlock()
		if err := c.watchOnce(ctx, rv, everything); err != nil || ctx.Err() != nil {
			return err // relist (runReflector waits relistBackoff first)
		}
		// The stream just closed: resume from rv, no relist.
	}
}

// watchOnce runs one storage watch from rv until it ends: nil if the stream
// just closed, an error if it cannot be resumed.
func (c *Cacher) watchOnce(ctx context.Context, rv uint64, everything storage.SelectionPredicate) error {
	w, err := c.storage.Watch(ctx, c.resourcePrefix, storage.ListOptions{
		ResourceVersion: fmt.Sprint(rv),
		Recursive:       true,
		ProgressNotify:  true, // so progress notifications reach us as bookmarks
		Predicate:       everything,
		// Ask the storage to stamp each event with when it saw it; a
		// storage that does wraps each object in a
		// storage.WatchEventWithRecordTime, which processEvent unwraps.
		// Upstream's listerWatcher sets `RecordTimestamps` too
		// (k8s.io/apiserver@v0.37.0/pkg/storage/cacher/lister_watcher.go:117).
		RecordTimestamps: true,
	})
	if err != nil {
		return err
	}
	c.metrics.storageWatchesOpen.Add(1)
	defer c.metrics.storageWatchesOpen.Add(-1)
	defer w.Stop()
	for ev := range w.ResultChan() {
		switch ev.Type {
		case watch.Added, watch.Modified, watch.Deleted:
			if err := c.watchCache.processEvent(ev); err != nil {
				return err
			}
		case watch.Bookmark:
			obj := ev.Object
			if wrapped, ok := obj.(storage.WatchEventWithRecordTime); ok {
				obj = wrapped.Unwrap()
			}
			bookmarkRV, err := c.versioner.ObjectResourceVersion(obj)
			if err == nil {
				c.watchCache.UpdateResourceVersion(bookmarkRV)
			}
		case watch.Error:
			err := apierrors.FromObject(ev.Object)
			if status, ok := ev.Object.(*metav1.Status); ok && status.Code == 410 {
				c.metrics.expiredWatches.Add(1)
			}
			return err
		}
	}
	return nil
}

func mustListRV(list interface{}) string {
	if m, err := meta.ListAccessor(list); err == nil {
		return m.GetResourceVersion()
	}
	return ""
}
