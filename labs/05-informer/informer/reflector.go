// Upstream: k8s.io/client-go@v0.37.0/tools/cache/reflector.go (Reflector:
// RunWithContext, ListAndWatchWithContext, watchList, list, watch,
// handleAnyWatch, startResync, relistResourceVersion,
// rewatchResourceVersion) and tools/pager/pager.go (the paginated LIST).
//
// Left out: the expected-type and expected-GVK checks on each event, the
// data-consistency detector (a CI check), the "no initial-events-end
// bookmark yet" warning ticker, the option to retry 500s for
// MaxInternalErrorRetryDuration (which no informer sets), Table objects,
// traces and metrics, and the transformer on the streaming list's temporary
// store, which upstream's `watchList` sets up (`WithTransformer`:
// k8s.io/client-go@v0.37.0/tools/cache/reflector.go:832-836); our FIFO
// transforms each object once, on Replace. DEEPER.md ("What upstream does
// that we leave out") cites each.
// Where ours differs, on purpose: a streaming list's objects reach the FIFO
// in the order they arrived (upstream collects them in a map, whose `List`
// hands them over in map order:
// k8s.io/client-go@v0.37.0/tools/cache/reflector.go:901), and
// WatchErrorHandler also hears how a watch ended.

package informer

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/listwatch-labs/listwatch-labs/labs/02-listwatcher/listwatcher"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
)

// ReflectorStore is where a Reflector puts what it lists and watches: one
// of the FIFOs. Upstream: cache.ReflectorStore plus the optional
// `ReflectorBookmarkStore` (k8s.io/client-go@v0.37.0/tools/cache/reflector.go:92-96).
type ReflectorStore interface {
	Add(obj any) error
	Update(obj any) error
	Delete(obj any) error
	// Replace is a whole list (or streaming list) and its resourceVersion.
	Replace(objs []any, resourceVersion string) error
	// Resync asks for every cached object to be offered again.
	Resync() error
	// Bookmark is a bookmark's resourceVersion.
	Bookmark(resourceVersion string) error
}

// defaultMinWatchTimeout is upstream's `defaultMinWatchTimeout`
// (k8s.io/client-go@v0.37.0/tools/cache/reflector.go:54-58): each watch asks
// the server to end it after a random time in [5m, 10m), to spread the load
// on the apiserver: clients that connected together do not keep timing out
// and watching again together.
const defaultMinWatchTimeout = 5 * time.Minute

// defaultPageSize is tools/pager's `defaultPageSize`
// (k8s.io/client-go@v0.37.0/tools/pager/pager.go:31).
const defaultPageSize = 500

// ReflectorOptions configures a Reflector; the zero value is upstream's
// defaults.
type ReflectorOptions struct {
	// Clock times everything: backoff, resync, watch durations. Default:
	// the real clock; tests inject k8s.io/utils/clock/testing.FakeClock.
	Clock clock.Clock
	// ResyncPeriod is how often the Reflector asks ShouldResync whether to
	// call the store's Resync. 0 (the default) never resyncs.
	ResyncPeriod time.Duration
	// ShouldResync, if set, decides at each ResyncPeriod; nil means yes.
	ShouldResync func() bool
	// MinWatchTimeout is the least timeoutSeconds a watch asks for; the
	// most is twice it. Below the default 5m it is ignored, as upstream's
	// `NewReflectorWithOptions` ignores `MinWatchTimeout`
	// (k8s.io/client-go@v0.37.0/tools/cache/reflector.go:302-307).
	MinWatchTimeout time.Duration
	// DisableWatchList turns the streaming list off: the first sync and
	// every relist are a paginated LIST (upstream: `useWatchList` off, with
	// the WatchListClient gate: k8s.io/client-go@v0.37.0/tools/cache/reflector.go:361).
	DisableWatchList bool
	// PageSize is the LIST page size (upstream: `WatchListPageSize`,
	// k8s.io/client-go@v0.37.0/tools/cache/reflector.go:150-157). 0 means
	// the rules of upstream's `list` (k8s.io/client-go@v0.37.0/tools/cache/reflector.go:696-716):
	// tools/pager's 500, except no limit when listing at a resourceVersion
	// other than "" and "0", unless the first list came back in pages
	// (listPages says why).
	PageSize int64
	// Rand is the random source of the watch timeout and the backoff
	// jitter, in [0,1). Default math/rand/v2.Float64.
	Rand func() float64
	// WatchErrorHandler hears every error ListAndWatch returns and every
	// error that ended a watch (a 410, a dropped connection). Default: none.
	WatchErrorHandler func(error)
}

// Reflector keeps a ReflectorStore in step with the server: it lists (by
// streaming list, or a paginated LIST), puts the list in the store with
// Replace, then watches from the list's resourceVersion, turning each event
// into Add, Update or Delete. A watch that ends normally is reopened from
// the last resourceVersion seen; one that ends with 410 Expired (the
// resourceVersion is older than the server keeps) ends ListAndWatch, and Run
// lists again after a backoff.
type Reflector struct {
	lw    cache.ListerWatcherWithContext
	store ReflectorStore
	opts  ReflectorOptions
	clock clock.Clock

	minWatchTimeout, maxWatchTimeout time.Duration
	useWatchList                     bool
	backoff                          *backoff
	// paginatedResult: the first LIST (at "0") came back in pages. Only
	// the goroutine running ListAndWatch touches it.
	paginatedResult bool

	// rvLock guards the two fields below.
	rvLock sync.RWMutex
	// lastSyncResourceVersion is the resourceVersion of the last list or
	// event the store received: where the next watch starts.
	lastSyncResourceVersion string
	// lastSyncResourceVersionUnavailable is set when the server answered
	// 410 (or "too large") for it: the next list must be a fresh one.
	lastSyncResourceVersionUnavailable bool

	// status is what the live view shows (status.go).
	status reflectorStatus
}

// NewReflector returns a Reflector from lw into store.
func NewReflector(lw cache.ListerWatcherWithContext, store ReflectorStore, opts ReflectorOptions) *Reflector {
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Rand == nil {
		opts.Rand = rand.Float64
	}
	r := &Reflector{lw: lw, store: store, opts: opts, clock: opts.Clock,
		minWatchTimeout: defaultMinWatchTimeout, useWatchList: !opts.DisableWatchList}
	if opts.MinWatchTimeout > defaultMinWatchTimeout {
		r.minWatchTimeout = opts.MinWatchTimeout
	}
	r.maxWatchTimeout = 2 * r.minWatchTimeout
	// A ListerWatcher can say it cannot stream a list (upstream:
	// `DoesClientNotSupportWatchListSemantics`,
	// k8s.io/client-go@v0.37.0/tools/cache/reflector.go:362-368; fakes in
	// tests do).
	if u, ok := lw.(interface{ IsWatchListSemanticsUnSupported() bool }); ok && u.IsWatchListSemanticsUnSupported() {
		r.useWatchList = false
	}
	r.backoff = newBackoff(r.clock, opts.Rand)
	return r
}

// Run lists and watches until ctx ends, waiting a backoff step between two
// rounds (upstream: `delayHandler.Until` with sliding true,
// k8s.io/client-go@v0.37.0/tools/cache/reflector.go:428-433, so even a
// round that ended with a 410 waits before the relist).
func (r *Reflector) Run(ctx context.Context) {
	defer r.setPhase(PhaseStopped)
	for {
		if err := r.ListAndWatch(ctx); err != nil {
			r.report(err)
		}
		r.setPhase(PhaseBackingOff)
		select {
		case <-ctx.Done():
			return
		case <-r.clock.After(r.backoff.Step()):
		}
	}
}

func (r *Reflector) report(err error) {
	r.recordError(err)
	if r.opts.WatchErrorHandler != nil {
		r.opts.WatchErrorHandler(err)
	}
}

// LastSyncResourceVersion is the resourceVersion the store is in step with.
func (r *Reflector) LastSyncResourceVersion() string {
	r.rvLock.RLock()
	defer r.rvLock.RUnlock()
	return r.lastSyncResourceVersion
}

func (r *Reflector) setLastSyncResourceVersion(rv string) {
	r.rvLock.Lock()
	defer r.rvLock.Unlock()
	r.lastSyncResourceVersion = rv
}

func (r *Reflector) setResourceVersionUnavailable(unavailable bool) {
	r.rvLock.Lock()
	defer r.rvLock.Unlock()
	r.lastSyncResourceVersionUnavailable = unavailable
}

// relistResourceVersion is what a LIST asks for, as upstream's
// `relistResourceVersion` (k8s.io/client-go@v0.37.0/tools/cache/reflector.go:1116-1131):
// "0" the first time (any state the watch cache has, cheap), the last
// resourceVersion seen after that (never go back in time), and "" when that
// one was too old. "" is a consistent read, and a 1.37 apiserver serves it
// from its watch cache, not from etcd, with no gate left to turn that off:
// `ShouldDelegateConsistentRead` sends it to etcd only where etcd cannot
// report progress (k8s.io/apiserver@v0.37.0/pkg/storage/cacher/cacher.go:1467-1472;
// `ConsistentReadSupported`: k8s.io/apiserver@v0.37.0/pkg/storage/cacher/delegator/interface.go:105-109),
// and the cache first waits until it has caught up with etcd's current
// revision (`waitAndListConsistent`: k8s.io/apiserver@v0.37.0/pkg/storage/cacher/watch_cache.go:483-491).
// Only if it does not catch up within 3 s does the list go to etcd
// (`IsTooLargeResourceVersion`: k8s.io/apiserver@v0.37.0/pkg/storage/cacher/delegator.go:160-170),
// or, with the alpha gate `ConsistentListFromCacheSkipTimeoutFallback`
// on (off by default: k8s.io/apiserver@v0.37.0/pkg/features/kube_features.go:363-365),
// fail with a 429. (Upstream's comment on this function still says "from
// etcd".)
func (r *Reflector) relistResourceVersion() string {
	r.rvLock.RLock()
	defer r.rvLock.RUnlock()
	switch {
	case r.lastSyncResourceVersionUnavailable:
		return ""
	case r.lastSyncResourceVersion == "":
		return "0"
	}
	return r.lastSyncResourceVersion
}

// rewatchResourceVersion is what a streaming list asks for, as upstream's
// `rewatchResourceVersion` (k8s.io/client-go@v0.37.0/tools/cache/reflector.go:1135-1144):
// the last resourceVersion seen, or "" (the newest, consistent) the first
// time, or once a list or streaming list at the last resourceVersion was
// refused (410 or too large). After a watch's 410 it is still the last
// resourceVersion: the relist asks for it first.
func (r *Reflector) rewatchResourceVersion() string {
	r.rvLock.RLock()
	defer r.rvLock.RUnlock()
	if r.lastSyncResourceVersionUnavailable {
		return ""
	}
	return r.lastSyncResourceVersion
}

// watchTimeout is a random timeoutSeconds in [min, max).
func (r *Reflector) watchTimeout() *int64 {
	s := int64(r.minWatchTimeout.Seconds() + r.opts.Rand()*(r.maxWatchTimeout-r.minWatchTimeout).Seconds())
	return &s
}

// ListAndWatch gets the whole state, then watches until the watch can no
// longer be resumed. It returns an error if it never got to watching.
func (r *Reflector) ListAndWatch(ctx context.Context) error {
	var w watch.Interface
	if r.useWatchList {
		var err error
		w, err = r.watchList(ctx)
		if w == nil && err == nil {
			return nil // ctx ended
		}
		if err != nil {
			// A server (or proxy) that cannot stream a list: fall back to
			// LIST this round only, as upstream's `fallbackToList`
			// (k8s.io/client-go@v0.37.0/tools/cache/reflector.go:483-505).
			r.report(fmt.Errorf("streaming list failed, falling back to LIST: %w", err))
			w = nil
		}
	}
	if w == nil {
		if err := r.list(ctx); err != nil {
			return err
		}
	}
	return r.watchWithResync(ctx, w)
}

// list is the LIST path: one LIST (paginated when the rules say so), put in
// the store with Replace.
func (r *Reflector) list(ctx context.Context) error {
	r.setPhase(PhaseListing)
	opts := metav1.ListOptions{ResourceVersion: r.relistResourceVersion()}
	list, paginated, err := r.listPages(ctx, opts)
	if isExpiredError(err) || isTooLargeResourceVersionError(err) {
		// Our resourceVersion is gone (or from a newer server): ask for the
		// newest state instead, a consistent read (served from the watch
		// cache in 1.37: see relistResourceVersion).
		r.setResourceVersionUnavailable(true)
		list, paginated, err = r.listPages(ctx, metav1.ListOptions{ResourceVersion: r.relistResourceVersion()})
	}
	if err != nil {
		return fmt.Errorf("failed to list: %w", err)
	}
	if opts.ResourceVersion == "0" && paginated {
		r.paginatedResult = true
	}
	r.setResourceVersionUnavailable(false)
	listMeta, err := meta.ListAccessor(list)
	if err != nil {
		return fmt.Errorf("unable to understand list result %T: %w", list, err)
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		return fmt.Errorf("unable to understand list result %T: %w", list, err)
	}
	objs := make([]any, len(items))
	for i := range items {
		objs[i] = items[i]
	}
	rv := listMeta.GetResourceVersion()
	if err := r.store.Replace(objs, rv); err != nil {
		return fmt.Errorf("unable to sync list result: %w", err)
	}
	r.setLastSyncResourceVersion(rv)
	r.countList()
	return nil
}

// listPages LISTs page by page, following continue tokens, through lab
// 02's pager (listwatcher.ListPages, our twin of client-go's tools/pager,
// which the upstream Reflector uses): one LIST of everything if a continue
// token expires. It reports whether the answer came in pages.
//
// The page size follows upstream's `list`
// (k8s.io/client-go@v0.37.0/tools/cache/reflector.go:696-716): the option if
// set; else 500 if the first list came back in pages (`paginatedResult`,
// recorded only for a list at "0": k8s.io/client-go@v0.37.0/tools/cache/reflector.go:760-762),
// since a server that pages at "0" has no watch cache for this resource
// (the cache ignores a limit at "0": `computeListLimit`,
// k8s.io/apiserver@v0.37.0/pkg/storage/cacher/cacher.go:740-745); else no
// limit at a resourceVersion other than "" and "0", else 500
// (TestReflectorKeepsPagingAfterPaginatedFirstList, and client-go's own in
// TestClientGoReflectorKeepsPagingAfterPaginatedFirstList).
//
// Upstream drops the limit at a specific resourceVersion so that the list
// is served from the watch cache. Since 1.34 a limit no longer rules that
// out: with `ListFromCacheSnapshot` beta and on
// (k8s.io/apiserver@v0.37.0/pkg/features/kube_features.go:410-413), a LIST
// at resourceVersion N with a limit, a "legacy exact" read that
// `ShouldDelegateList` passes to `ShouldDelegateExactRV`
// (k8s.io/apiserver@v0.37.0/pkg/storage/cacher/delegator/interface.go:50-53),
// is served from a cache snapshot when one covers N
// (`shouldDelegateExactRV`: k8s.io/apiserver@v0.37.0/pkg/storage/cacher/cacher.go:1453-1465).
// The limit still changes the question: without it N means "not older
// than N", with it "exactly N".
func (r *Reflector) listPages(ctx context.Context, opts metav1.ListOptions) (runtime.Object, bool, error) {
	opts.Limit = defaultPageSize
	switch {
	case r.opts.PageSize > 0:
		opts.Limit = r.opts.PageSize
	case r.paginatedResult:
	case opts.ResourceVersion != "" && opts.ResourceVersion != "0":
		opts.Limit = 0
	}
	paginated := false
	page := func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		obj, err := r.lw.ListWithContext(ctx, o)
		if err == nil {
			if m, merr := meta.ListAccessor(obj); merr == nil && m.GetContinue() != "" {
				paginated = true
			}
		}
		return obj, err
	}
	list, err := listwatcher.ListPages(ctx, page, opts)
	return list, paginated, err
}

// watchList is the streaming list (WatchListClient): one watch with
// sendInitialEvents=true sends every object as a synthetic ADDED, then a
// BOOKMARK annotated k8s.io/initial-events-end=true at the list's
// resourceVersion. The objects are collected aside and handed to the store
// as one Replace when the bookmark arrives, and the same watch goes on.
// With resourceVersionMatch=NotOlderThan and resourceVersion "" the server
// answers from its watch cache once that is at least as fresh as etcd's
// current revision, which `waitUntilWatchCacheFreshAndForceAllEvents`
// waits for (k8s.io/apiserver@v0.37.0/pkg/storage/cacher/cacher.go:1313-1349): as
// consistent as a quorum LIST, without building one huge response.
func (r *Reflector) watchList(ctx context.Context) (watch.Interface, error) {
	for {
		if ctx.Err() != nil {
			return nil, nil
		}
		r.setPhase(PhaseStreamingList)
		collected := newOrderedStore()
		var listRV string
		opts := metav1.ListOptions{
			ResourceVersion:      r.rewatchResourceVersion(),
			AllowWatchBookmarks:  true,
			SendInitialEvents:    ptr.To(true),
			ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan,
			TimeoutSeconds:       r.watchTimeout(),
		}
		start := r.clock.Now()
		w, err := r.lw.WatchWithContext(ctx, opts)
		if err == nil {
			var ended bool
			ended, err = r.handleWatch(ctx, start, w, collected, true, nil, func(rv string, besidesAdded bool) {
				if besidesAdded {
					listRV = rv
				}
			})
			if err == nil && ended {
				r.setResourceVersionUnavailable(false)
				if err := r.store.Replace(collected.list(), listRV); err != nil {
					w.Stop()
					return nil, fmt.Errorf("unable to sync watch-list result: %w", err)
				}
				r.setLastSyncResourceVersion(listRV)
				r.countList()
				return w, nil
			}
			if errors.Is(err, errStopRequested) {
				return nil, nil
			}
			if err == nil {
				continue // the stream ended before the bookmark: start over
			}
		}
		switch {
		case isWatchErrorRetriable(err):
			// Upstream only logs this, at V(2) (`isErrorRetriableWithSideEffectsFn`,
			// k8s.io/client-go@v0.37.0/tools/cache/reflector.go:814-818); we
			// report every retry, so that an apiserver that cannot be
			// reached is never a silent hang (our choice).
			r.report(fmt.Errorf("streaming list failed, backing off: %w", err))
			r.setPhase(PhaseBackingOff)
			select {
			case <-ctx.Done():
				return nil, nil
			case <-r.clock.After(r.backoff.Step()):
			}
		case isExpiredError(err), isTooLargeResourceVersionError(err):
			// Stream from the newest state instead.
			r.setResourceVersionUnavailable(true)
		default:
			return nil, err
		}
	}
}

// watchWithResync watches, and meanwhile asks the store to Resync every
// ResyncPeriod. A resync is not a relist: nothing is sent to the server.
func (r *Reflector) watchWithResync(ctx context.Context, w watch.Interface) error {
	resyncErr := make(chan error, 1)
	resyncCtx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait()
	}()
	wg.Go(func() { r.startResync(resyncCtx, resyncErr) })
	return r.watch(ctx, w, resyncErr)
}

func (r *Reflector) startResync(ctx context.Context, resyncErr chan<- error) {
	if r.opts.ResyncPeriod == 0 {
		return
	}
	for {
		t := r.clock.NewTimer(r.opts.ResyncPeriod)
		select {
		case <-t.C():
		case <-ctx.Done():
			t.Stop()
			return
		}
		if r.opts.ShouldResync == nil || r.opts.ShouldResync() {
			if err := r.store.Resync(); err != nil {
				resyncErr <- err
				return
			}
		}
	}
}

// watch watches from the last resourceVersion, reopening the watch each
// time it ends normally (the server's timeoutSeconds), until an error: 410
// Expired and anything else unexpected return to Run (which relists);
// connection refused and 429 back off and rewatch.
func (r *Reflector) watch(ctx context.Context, w watch.Interface, resyncErr chan error) error {
	defer func() {
		if w != nil {
			w.Stop()
		}
	}()
	for {
		if ctx.Err() != nil {
			return nil
		}
		start := r.clock.Now()
		// After a LIST at "0" the watch would start with synthetic ADDED
		// events in no particular resourceVersion order: do not record
		// their resourceVersions until past them.
		propagateRVFromStart := true
		if w == nil {
			opts := metav1.ListOptions{
				ResourceVersion:     r.LastSyncResourceVersion(),
				TimeoutSeconds:      r.watchTimeout(),
				AllowWatchBookmarks: true,
			}
			if opts.ResourceVersion == "" || opts.ResourceVersion == "0" {
				propagateRVFromStart = false
			}
			var err error
			if w, err = r.lw.WatchWithContext(ctx, opts); err != nil {
				if isWatchErrorRetriable(err) {
					r.report(fmt.Errorf("watch failed, backing off: %w", err))
					r.setPhase(PhaseBackingOff)
					select {
					case <-ctx.Done():
						return nil
					case <-r.clock.After(r.backoff.Step()):
						continue
					}
				}
				return err
			}
		}
		r.setPhase(PhaseWatching)
		r.countWatch()
		_, err := r.handleWatch(ctx, start, w, r.store, false, resyncErr, func(rv string, besidesAdded bool) {
			if propagateRVFromStart || besidesAdded {
				r.setLastSyncResourceVersion(rv)
			}
		})
		w = nil // handleWatch stopped it
		if err == nil {
			continue // ended normally: rewatch from where we are
		}
		if errors.Is(err, errStopRequested) {
			return nil
		}
		if apierrors.IsTooManyRequests(err) {
			r.report(fmt.Errorf("watch ended, backing off: %w", err))
			select {
			case <-ctx.Done():
				return nil
			case <-r.clock.After(r.backoff.Step()):
				continue
			}
		}
		r.report(fmt.Errorf("watch ended: %w", err))
		return nil
	}
}

// errStopRequested ends handleWatch when ctx ends.
var errStopRequested = errors.New("stop requested")

// errVeryShortWatch is a watch that ended within a second with no event:
// the server is likely refusing us, so upstream returns a
// `VeryShortWatchError` (k8s.io/client-go@v0.37.0/tools/cache/reflector.go:1089-1092),
// a relist after backoff, rather than rewatching at once, in a tight loop.
var errVeryShortWatch = errors.New("very short watch: watch lasted less than a second and no items received")

// watchSink is what handleWatch writes to: the store, or the streaming
// list's collection.
type watchSink interface {
	Add(obj any) error
	Update(obj any) error
	Delete(obj any) error
	Bookmark(resourceVersion string) error
}

// handleWatch applies w's events to sink until w ends, ctx ends, a resync
// fails, or (exitOnInitialEventsEnd) the initial-events-end bookmark
// arrives, in which case w is left open and the result is true.
func (r *Reflector) handleWatch(ctx context.Context, start time.Time, w watch.Interface, sink watchSink,
	exitOnInitialEventsEnd bool, resyncErr <-chan error, setRV func(rv string, besidesAdded bool)) (bool, error) {
	initialEventsEnd, besidesAdded, count := false, false, 0
	stopWatcher := true
	defer func() {
		if stopWatcher {
			w.Stop()
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return initialEventsEnd, errStopRequested
		case err := <-resyncErr:
			return initialEventsEnd, err
		case event, ok := <-w.ResultChan():
			if !ok {
				if r.clock.Since(start) < time.Second && count == 0 {
					return initialEventsEnd, errVeryShortWatch
				}
				return initialEventsEnd, nil
			}
			if event.Type == watch.Error {
				return initialEventsEnd, apierrors.FromObject(event.Object)
			}
			m, err := meta.Accessor(event.Object)
			if err != nil {
				r.report(fmt.Errorf("unable to understand watch event %v: %w", event.Type, err))
				continue
			}
			rv := m.GetResourceVersion()
			switch event.Type {
			case watch.Added:
				err = sink.Add(event.Object)
			case watch.Modified:
				besidesAdded = true
				err = sink.Update(event.Object)
			case watch.Deleted:
				besidesAdded = true
				err = sink.Delete(event.Object)
			case watch.Bookmark:
				besidesAdded = true
				if m.GetAnnotations()[metav1.InitialEventsAnnotationKey] == "true" {
					initialEventsEnd = true
				}
				err = sink.Bookmark(rv)
			default:
				err = fmt.Errorf("unknown watch event type %q", event.Type)
			}
			if err != nil {
				r.report(fmt.Errorf("%s event: %w", event.Type, err))
			}
			setRV(rv, besidesAdded)
			count++
			if exitOnInitialEventsEnd && initialEventsEnd {
				stopWatcher = false
				return true, nil
			}
		}
	}
}

func isExpiredError(err error) bool {
	return apierrors.IsResourceExpired(err) || apierrors.IsGone(err)
}

func isTooLargeResourceVersionError(err error) bool {
	return apierrors.HasStatusCause(err, metav1.CauseTypeResourceVersionTooLarge)
}

// isWatchErrorRetriable: connection refused (the apiserver is down or
// restarting) and 429 are worth retrying the same request after a backoff;
// relisting would not help. Upstream's `isWatchErrorRetriable` is the same
// (k8s.io/client-go@v0.37.0/tools/cache/reflector.go:1195-1205).
func isWatchErrorRetriable(err error) bool {
	return utilnet.IsConnectionRefused(err) || apierrors.IsTooManyRequests(err)
}

// orderedStore collects a streaming list: objects by key, in order of first
// arrival.
type orderedStore struct {
	objs  map[string]any
	order []string
}

func newOrderedStore() *orderedStore { return &orderedStore{objs: map[string]any{}} }

func (s *orderedStore) Add(obj any) error {
	key, err := MetaNamespaceKey(obj)
	if err != nil {
		return err
	}
	if _, ok := s.objs[key]; !ok {
		s.order = append(s.order, key)
	}
	s.objs[key] = obj
	return nil
}

func (s *orderedStore) Update(obj any) error { return s.Add(obj) }

func (s *orderedStore) Delete(obj any) error {
	key, err := MetaNamespaceKey(obj)
	if err != nil {
		return err
	}
	delete(s.objs, key)
	return nil
}

func (s *orderedStore) Bookmark(string) error { return nil }

func (s *orderedStore) list() []any {
	out := make([]any, 0, len(s.objs))
	seen := make(map[string]bool, len(s.objs))
	for _, key := range s.order {
		if obj, ok := s.objs[key]; ok && !seen[key] {
			seen[key] = true
			out = append(out, obj)
		}
	}
	return out
}
