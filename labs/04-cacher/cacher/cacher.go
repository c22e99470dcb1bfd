// Package cacher is lab 04's lesson package: it rebuilds kube-apiserver's
// watch cache, the Cacher that serves the watches and most lists of one
// resource from memory, in front of a storage.Interface over etcd. The
// lesson that walks through it is labs/04-cacher/README.md.
//
// Upstream twin: the `Cacher` type of
// k8s.io/apiserver@v0.37.0/pkg/storage/cacher/cacher.go:264-346 and its
// `NewCacherFromConfig` (k8s.io/apiserver@v0.37.0/pkg/storage/cacher/cacher.go:351-487;
// Config, Watch, Get, GetList, Stop), and the `CacheDelegator` of
// k8s.io/apiserver@v0.37.0/pkg/storage/cacher/delegator.go:36-64, which
// upstream puts in front of the Cacher to send writes and some reads to
// etcd: here the Cacher is its own delegator, so it implements
// storage.Interface by itself.
//
// The files, in the order data flows:
//
//	reflector.go             list etcd once, then watch it (one etcd watch per resource)
//	watch_cache.go           the cache: its lock, its RV, reads that wait until it is fresh
//	watch_cache_history.go   the ring of recent events
//	store/                   the current objects: a B-tree and its immutable snapshots
//	watch_cache_interval.go  the initial events of a new watch
//	dispatch.go              one goroutine fans each event out to the watchers
//	trigger.go               which indexed watchers (spec.nodeName=X) an event is offered to
//	time_budget.go           how long dispatch may wait for slow watchers
//	time_budget_take.go      taking from and returning to that budget
//	caching_object.go        one encoding of an event, shared by its watchers
//	cache_watcher.go         one client's watch: input -> filter -> result
//	convert.go               what one watcher sees of an event: ADDED, MODIFIED or DELETED
//	consistent_read.go       a LIST with RV "" served from the cache, or from etcd
//	progress.go              one progress requester for every reader waiting on the cache
//	metrics.go               counters that show what happened
//
// trigger.go, time_budget_take.go and convert.go are the solutions of the
// lab's exercises; the *_exercise.go stubs replace them under -tags
// exercise.
//
// What upstream does that this package leaves out is listed in each file.
// Across all of them: no feature gates (consistent lists are served from
// the cache, which upstream does with no gate since 1.37; sendInitialEvents
// is always accepted; snapshots are always on, as with upstream's
// `ListFromCacheSnapshot`, beta and on by default since 1.34,
// k8s.io/apiserver@v0.37.0/pkg/features/kube_features.go:410-413), no
// tracing, no Prometheus registration (Metrics returns the numbers; the
// miniapiserver exports them on /metrics), no exact-RV and paginated lists
// from the cache (those go to etcd; upstream serves them from older
// snapshots), and no namespace/name scoping of watchers.
package cacher

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/conversion"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/utils/clock"

	"github.com/listwatch-labs/listwatch-labs/labs/04-cacher/cacher/store"
)

const (
	// DefaultEventFreshDuration is the history the event ring keeps at
	// least: the bookmark frequency (1 min) plus 15 s, so that a client
	// reconnecting with the RV of its last bookmark usually finds it in the
	// ring (upstream: `DefaultEventFreshDuration`,
	// k8s.io/apiserver@v0.37.0/pkg/storage/cacher/cacher.go:69-78).
	DefaultEventFreshDuration = bookmarkFrequency + 15*time.Second

	// incomingBufferSize is the queue between the watchCache and the
	// dispatcher (upstream: its `incoming` channel of 100,
	// k8s.io/apiserver@v0.37.0/pkg/storage/cacher/cacher.go:407).
	incomingBufferSize = 100
)

// Config configures a Cacher. Its fields follow upstream's `Config`
// (k8s.io/apiserver@v0.37.0/pkg/storage/cacher/cacher.go:82-125); the ones
// this lab does not need are absent.
type Config struct {
	// Storage is the storage the Cacher lists and watches, and to which it
	// sends writes. Required.
	Storage storage.Interface
	// Versioner reads and writes resourceVersions. Default
	// storage.APIObjectVersioner{}.
	Versioner storage.Versioner
	// GroupResource names the resource in errors.
	GroupResource schema.GroupResource
	// ResourcePrefix is the resource's key prefix, e.g. "/pods". Required.
	ResourcePrefix string
	// KeyFunc returns an object's key, e.g. "/pods/default/web-1". Required.
	KeyFunc func(runtime.Object) (string, error)
	// GetAttrsFunc returns the labels and fields selectors match. Required.
	GetAttrsFunc func(runtime.Object) (labels.Set, fields.Set, error)
	// IndexerFuncs names at most one trigger field and how to read it from
	// an object, e.g. {"spec.nodeName": podNodeName}. A watch whose field
	// selector requires an exact value of that field is offered only events
	// of objects with that value. Optional.
	IndexerFuncs storage.IndexerFuncs
	// NewFunc and NewListFunc make empty objects and lists. Required.
	NewFunc     func() runtime.Object
	NewListFunc func() runtime.Object
	// EventsHistoryWindow is the least history the ring keeps; it must not
	// be below DefaultEventFreshDuration (the default). A longer window
	// raises the ring's cap (capacityUpperBound in watch_cache.go).
	EventsHistoryWindow time.Duration
	// Clock drives the time budget, bookmarks, ring sizing and waits.
	// Default: the real clock. Tests pass a fake one.
	Clock clock.WithTicker
}

// Cacher implements storage.Interface: watches and most lists from memory,
// writes and the rest to Config.Storage.
type Cacher struct {
	storage        storage.Interface
	versioner      storage.Versioner
	groupResource  schema.GroupResource
	resourcePrefix string
	keyFunc        func(runtime.Object) (string, error)
	newFunc        func() runtime.Object
	newListFunc    func() runtime.Object
	clock          clock.WithTicker

	// triggerName/triggerFunc: the one trigger index, if configured.
	triggerName string
	triggerFunc func(runtime.Object) string

	watchCache *watchCache
	incoming   chan *watchCacheEvent
	// progress asks etcd for progress notifications while readers wait
	// for the cache to catch up: one for the Cacher (progress.go).
	progress *progressRequester

	// mu guards watchers, watcherIdx, and each watcher's nextBookmark.
	mu         sync.Mutex
	watchers   watcherSet
	watcherIdx int
	// ended: the last watchers that ended, newest last, for the live view
	// (state.go). Guarded by mu.
	ended []WatcherState

	// Owned by the dispatcher goroutine: reused between events.
	watchersBuffer        []*cacheWatcher
	blockedWatchers       []*cacheWatcher
	dispatchTimeoutBudget *timeBudget

	metrics metrics

	// afterSnapshot, if set (by tests), runs in a LIST after the read lock
	// is released and before the snapshot is walked.
	afterSnapshot func()

	// started is when the Cacher was made: the downtime a not-ready
	// answer's Retry-After grows with.
	started  time.Time
	stopCh   chan struct{}
	stopOnce sync.Once
	cancel   context.CancelFunc
	wg       sync.WaitGroup
}

// watcherSet is every registered watcher, by how it is indexed.
type watcherSet struct {
	all      map[int]*cacheWatcher            // watchers offered every event
	byValue  map[string]map[int]*cacheWatcher // trigger value -> watchers
	bookmark map[int]*cacheWatcher            // watchers that asked for bookmarks
}

var _ storage.Interface = (*Cacher)(nil)

// NewCacherFromConfig starts a Cacher: its reflector lists and watches
// Config.Storage, and its dispatcher serves watchers. Stop it with Stop.
func NewCacherFromConfig(config Config) (*Cacher, error) {
	if config.Storage == nil || config.KeyFunc == nil || config.GetAttrsFunc == nil ||
		config.NewFunc == nil || config.NewListFunc == nil || config.ResourcePrefix == "" {
		return nil, errors.New("cacher: Storage, ResourcePrefix, KeyFunc, GetAttrsFunc, NewFunc and NewListFunc are required")
	}
	window := config.EventsHistoryWindow
	if window == 0 {
		window = DefaultEventFreshDuration
	}
	if window < DefaultEventFreshDuration {
		return nil, fmt.Errorf("cacher: EventsHistoryWindow (%v) must not be below %v", window, DefaultEventFreshDuration)
	}
	if len(config.IndexerFuncs) > 1 {
		return nil, errors.New("cacher: at most one IndexerFunc (trigger) is supported")
	}
	if config.Versioner == nil {
		config.Versioner = storage.APIObjectVersioner{}
	}
	if config.Clock == nil {
		config.Clock = clock.RealClock{}
	}
	c := &Cacher{
		storage:               config.Storage,
		versioner:             config.Versioner,
		groupResource:         config.GroupResource,
		resourcePrefix:        config.ResourcePrefix,
		keyFunc:               config.KeyFunc,
		newFunc:               config.NewFunc,
		newListFunc:           config.NewListFunc,
		clock:                 config.Clock,
		incoming:              make(chan *watchCacheEvent, incomingBufferSize),
		dispatchTimeoutBudget: newTimeBudget(config.Clock),
		watchers: watcherSet{
			all:      map[int]*cacheWatcher{},
			byValue:  map[string]map[int]*cacheWatcher{},
			bookmark: map[int]*cacheWatcher{},
		},
		started: config.Clock.Now(),
		stopCh:  make(chan struct{}),
	}
	for name, f := range config.IndexerFuncs {
		c.triggerName, c.triggerFunc = name, f
	}
	c.watchCache = newWatchCache(config.KeyFunc, config.GetAttrsFunc, config.Versioner, config.Clock, window,
		func(ev *watchCacheEvent) {
			select {
			case c.incoming <- ev:
			case <-c.stopCh:
			}
		})
	// A relist ends every watcher, while the watchCache is write-locked, so
	// no watcher can straddle two generations of the cache.
	c.watchCache.onReplace = c.terminateAllWatchers
	c.progress = newProgressRequester(config.Clock, config.Storage.RequestWatchProgress)
	ctx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	c.wg.Add(3)
	go c.runReflector(ctx)
	go func() {
		defer c.wg.Done()
		c.progress.run(ctx, func() { c.metrics.progressRequests.Add(1) })
	}()
	go c.dispatchEvents(c.clock.NewTicker(bookmarkTick))
	return c, nil
}

// Stop ends the reflector, the dispatcher and every watcher, and waits for
// their goroutines.
func (c *Cacher) Stop() {
	c.stopOnce.Do(func() {
		close(c.stopCh)
		c.cancel()
		c.wg.Wait()
		c.terminateAllWatchers()
	})
}

// Ready reports whether the first list has been loaded.
func (c *Cacher) Ready() bool {
	select {
	case <-c.watchCache.initialized:
		return true
	default:
		return false
	}
}

// checkReady is what a request meets while the cache is not ready (its
// first list not loaded yet, or the Cacher stopped): it does not wait, it
// fails at once with 429 Too Many Requests and a Retry-After that grows
// with how long the cache has been down, as upstream's Cacher does (with
// no gate since 1.37; in 1.36 it was `ResilientWatchCacheInitialization`,
// GA and locked on): its Watch and GetList call `checkAndReadGeneration`
// or `check` and answer `NewTooManyRequests`
// (k8s.io/apiserver@v0.37.0/pkg/storage/cacher/cacher.go:531-533,
// k8s.io/apiserver@v0.37.0/pkg/storage/cacher/cacher.go:769-771).
//
// One difference, our choice: upstream is also not ready while it relists
// (`startCaching` sets the error when `ListAndWatch` returns,
// k8s.io/apiserver@v0.37.0/pkg/storage/cacher/cacher.go:489-504), and
// counts generations of readiness so that no watch straddles a relist. Ours
// keeps serving the old cache while it relists; Replace swaps the cache and
// ends every watcher under the watchCache's write lock, and Watch registers
// a watcher under its read lock, so none straddles two caches either.
func (c *Cacher) checkReady() error {
	select {
	case <-c.stopCh:
		return notReadyError("apiserver cacher is stopped", 0)
	default:
	}
	select {
	case <-c.watchCache.initialized:
		return nil
	default:
	}
	msg := "storage is (re)initializing"
	if last, _ := c.metrics.lastReflectorError.Load().(string); last != "" {
		msg += ": " + last
	}
	return notReadyError(msg, c.clock.Since(c.started))
}

// notReadyError is 429 with Retry-After e^(0.06 * seconds down), within
// 1..30 s: a client retries soon after a short outage, and rarely during a
// long one (upstream: `calculateRetryAfterForUnreadyCache`,
// k8s.io/apiserver@v0.37.0/pkg/storage/cacher/util.go:24-30).
func notReadyError(msg string, downtime time.Duration) error {
	retryAfter := int(min(30, max(1, math.Exp(0.06*downtime.Seconds()))))
	return apierrors.NewTooManyRequests(msg, retryAfter)
}

// delegateListWhileNotReady: the one LIST a not-ready Cacher still sends
// to etcd rather than refusing: no selector and a limit, a page etcd
// serves cheaply (upstream: `shouldDelegateListOnNotReadyCache`,
// k8s.io/apiserver@v0.37.0/pkg/storage/cacher/delegator.go:185-191).
func delegateListWhileNotReady(opts storage.ListOptions) bool {
	p := opts.Predicate
	return (p.Label == nil || p.Label.Empty()) && (p.Field == nil || p.Field.Empty()) && p.Limit > 0
}

// terminateAllWatchers ends every watcher's stream cleanly.
func (c *Cacher) terminateAllWatchers() {
	c.mu.Lock()
	var all []*cacheWatcher
	for _, w := range c.watchers.all {
		all = append(all, w)
	}
	for _, ws := range c.watchers.byValue {
		for _, w := range ws {
			all = append(all, w)
		}
	}
	c.mu.Unlock()
	reason := EndCacherRelisted
	select {
	case <-c.stopCh:
		reason = EndCacherStopped
	default:
	}
	for _, w := range all {
		w.stopWith(reason)
	}
}

// Watch serves a watch from the cache. Every watch is served here; none
// goes to etcd.
//
//   - RV "" or "0" (no sendInitialEvents): the current objects as ADDED,
//     then changes;
//   - RV N: the ring's events after N, then changes; 410 Expired as a
//     single ERROR event if the ring no longer reaches back to N;
//   - sendInitialEvents=false: no initial events; live changes from RV N,
//     from the cache's RV for RV "0", or from etcd's current revision for
//     RV "";
//   - sendInitialEvents=true (a streaming list): the current objects as
//     ADDED (for RV "", after the cache caught up with etcd's current
//     revision), then, if the watch allows bookmarks, a BOOKMARK
//     annotated k8s.io/initial-events-end: "true", then changes.
func (c *Cacher) Watch(ctx context.Context, key string, opts storage.ListOptions) (watch.Interface, error) {
	preparedKey, err := storage.PrepareKey(c.resourcePrefix, key, opts.Recursive)
	if err != nil {
		return nil, err
	}
	requestedRV, err := c.versioner.ParseResourceVersion(opts.ResourceVersion)
	if err != nil {
		// Returned as is, as upstream's Watch returns what
		// `ParseResourceVersion` gives
		// (k8s.io/apiserver@v0.37.0/pkg/storage/cacher/cacher.go:525-528):
		// a storage.InvalidError, not a StatusError, so the API server
		// answers 500 with no reason (kube-apiserver does: lab 03's
		// bad-requests scenario).
		return nil, err
	}
	if err := c.checkReady(); err != nil {
		return nil, err
	}
	pred := opts.Predicate
	sendInitialEvents := opts.SendInitialEvents != nil && *opts.SendInitialEvents

	triggerValue, triggerUsed := "", false
	if c.triggerFunc != nil && pred.Field != nil {
		triggerValue, triggerUsed = pred.Field.RequiresExactMatch(c.triggerName)
	}
	chanSize := c.watchCache.suggestedWatchChannelSize(c.triggerFunc != nil, triggerUsed)
	deadline, _ := ctx.Deadline()
	watcher := newCacheWatcher(chanSize, filterFor(preparedKey, opts.Recursive, pred), c.versioner, c.newFunc,
		deadline, pred.AllowWatchBookmarks)
	watcher.clock, watcher.dispatchDurations = c.clock, &c.metrics.dispatchDurations

	// requiredRV is the RV the watch starts from. RV "" with
	// sendInitialEvents set, true or false, means "from etcd's current
	// revision"; RV "" without it is the legacy watch, 0 (upstream:
	// `getWatchCacheResourceVersion`,
	// k8s.io/apiserver@v0.37.0/pkg/storage/cacher/cacher.go:1313-1323).
	requiredRV := requestedRV
	if opts.ResourceVersion == "" && opts.SendInitialEvents != nil {
		currentRV, err := c.storage.GetCurrentResourceVersion(ctx)
		if err != nil {
			return newErrWatcher(statusFor(err)), nil
		}
		requiredRV = currentRV
	}
	// A streaming list must reflect at least requiredRV: wait until the
	// cache has it (asking etcd for progress meanwhile). Without initial
	// events there is nothing to wait for: the watcher simply skips live
	// events up to requiredRV.
	c.watchCache.RLock()
	defer c.watchCache.RUnlock()
	if sendInitialEvents && requiredRV > 0 {
		if err := c.watchCache.waitUntilFreshLocked(ctx, requiredRV, c.progress); err != nil {
			return newErrWatcher(statusFor(err)), nil
		}
	}
	// The interval is taken under the read lock, in O(1) when it is the
	// whole state (a lazy snapshot): its events are copied on the
	// watcher's goroutine, at its first Next.
	interval, err := c.watchCache.getAllEventsSinceLocked(requiredRV, preparedKey, opts.Recursive, opts.SendInitialEvents)
	if err != nil {
		return newErrWatcher(statusFor(err)), nil
	}
	// Live events must be newer than everything the initial events cover:
	// they bring the watcher to the cache's RV.
	startRV := max(requiredRV, c.watchCache.resourceVersion)
	if sendInitialEvents && pred.AllowWatchBookmarks {
		watcher.initialEventsEndRV = c.watchCache.resourceVersion
	}

	c.mu.Lock()
	id := c.watcherIdx
	c.watcherIdx++
	if triggerUsed {
		if c.watchers.byValue[triggerValue] == nil {
			c.watchers.byValue[triggerValue] = map[int]*cacheWatcher{}
		}
		c.watchers.byValue[triggerValue][id] = watcher
	} else {
		c.watchers.all[id] = watcher
	}
	if watcher.allowWatchBookmarks {
		if next, ok := watcher.nextBookmarkTime(c.clock.Now(), bookmarkFrequency); ok {
			watcher.nextBookmark = next
		}
		c.watchers.bookmark[id] = watcher
	}
	watcher.info = WatcherState{
		ID: id, Key: preparedKey, Recursive: opts.Recursive,
		LabelSelector: labelString(pred.Label), FieldSelector: fieldString(pred.Field),
		RequestedRV: opts.ResourceVersion, SendInitialEvents: sendInitialEvents,
		AllowBookmarks: pred.AllowWatchBookmarks, StartRV: startRV,
		Started: c.clock.Now(), InputCapacity: chanSize, ResultCapacity: chanSize,
	}
	watcher.forget = func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.recordEndedLocked(watcher)
		delete(c.watchers.all, id)
		delete(c.watchers.bookmark, id)
		if ws := c.watchers.byValue[triggerValue]; ws != nil {
			delete(ws, id)
			if len(ws) == 0 {
				delete(c.watchers.byValue, triggerValue)
			}
		}
	}
	c.mu.Unlock()

	go watcher.processInterval(ctx, interval, startRV)
	return watcher, nil
}

// filterFor is the watcher's and the list's test: the key is under the
// requested key (or is it, for a single object), and the selectors match.
func filterFor(key string, recursive bool, pred storage.SelectionPredicate) filterFunc {
	return func(objKey string, l labels.Set, f fields.Set) bool {
		if recursive {
			if !strings.HasPrefix(objKey, key) {
				return false
			}
		} else if objKey != key {
			return false
		}
		if pred.Empty() {
			return true
		}
		return pred.MatchesObjectAttributes(l, f)
	}
}

// statusFor turns an error into the Status an ERROR event carries.
func statusFor(err error) runtime.Object {
	var apiStatus apierrors.APIStatus
	if errors.As(err, &apiStatus) {
		s := apiStatus.Status()
		return &s
	}
	if storage.IsTooLargeResourceVersion(err) {
		return &apierrors.NewTimeoutError(err.Error(), 1).ErrStatus
	}
	return &apierrors.NewInternalError(err).ErrStatus
}

// Get serves RV "" (the newest) from etcd, as upstream's `CacheDelegator.Get`
// does (k8s.io/apiserver@v0.37.0/pkg/storage/cacher/delegator.go:110-115),
// and other RVs from the cache once it is at least that fresh; while the
// cache is not ready, from etcd too, as upstream does when `Ready` is false
// (k8s.io/apiserver@v0.37.0/pkg/storage/cacher/delegator.go:117-121).
func (c *Cacher) Get(ctx context.Context, key string, opts storage.GetOptions, objPtr runtime.Object) error {
	if opts.ResourceVersion == "" {
		return c.storage.Get(ctx, key, opts, objPtr)
	}
	rv, err := c.versioner.ParseResourceVersion(opts.ResourceVersion)
	if err != nil {
		return apierrors.NewBadRequest(fmt.Sprintf("invalid resource version: %v", err))
	}
	preparedKey, err := storage.PrepareKey(c.resourcePrefix, key, false)
	if err != nil {
		return err
	}
	if !c.Ready() {
		// Not ready: etcd answers, rather than a 429.
		return c.storage.Get(ctx, key, opts, objPtr)
	}
	item, exists, cacheRV, err := c.watchCache.WaitUntilFreshAndGet(ctx, rv, preparedKey)
	if err != nil {
		return err
	}
	if !exists {
		if opts.IgnoreNotFound {
			return runtime.SetZeroValue(objPtr)
		}
		return storage.NewKeyNotFoundError(key, int64(cacheRV))
	}
	return copyInto(item.(*store.Element).Object, objPtr)
}

func copyInto(src, dst runtime.Object) error {
	sv, dv := reflect.ValueOf(src), reflect.ValueOf(dst)
	if sv.Type() != dv.Type() {
		return fmt.Errorf("cacher: cannot copy %T into %T", src, dst)
	}
	dv.Elem().Set(reflect.ValueOf(src.DeepCopyObject()).Elem())
	return nil
}

// GetList serves a list from the cache when it can (see consistent_read.go
// for RV ""), and from etcd when the cache cannot answer it: an exact RV, a
// continue token, or a limit with any RV but "0". Those need etcd's MVCC
// history or a paginated answer. Upstream serves exact RVs and continue
// pages from older B-tree snapshots of the cache, and a limited consistent
// list from its newest one (`waitUntilFreshAndList`,
// k8s.io/apiserver@v0.37.0/pkg/storage/cacher/watch_cache.go:416-448); we
// keep the same snapshots (store/) but read only the newest: our choice,
// to keep this routing short.
// A limit with RV "0" is ignored and the whole list served from memory, as
// upstream's `computeListLimit` does
// (k8s.io/apiserver@v0.37.0/pkg/storage/cacher/cacher.go:740-745).
func (c *Cacher) GetList(ctx context.Context, key string, opts storage.ListOptions, listObj runtime.Object) error {
	if _, _, err := storage.ValidateListOptions(c.resourcePrefix, c.versioner, opts); err != nil {
		return err
	}
	if opts.ResourceVersionMatch == metav1.ResourceVersionMatchExact || opts.Predicate.Continue != "" ||
		(opts.Predicate.Limit > 0 && opts.ResourceVersion != "0") {
		c.metrics.listsFromStorage.Add(1)
		return c.storage.GetList(ctx, key, opts, listObj)
	}
	if !c.Ready() && delegateListWhileNotReady(opts) {
		c.metrics.listsFromStorage.Add(1)
		return c.storage.GetList(ctx, key, opts, listObj)
	}
	if err := c.checkReady(); err != nil {
		return err
	}
	if opts.ResourceVersion == "" {
		return c.consistentList(ctx, key, opts, listObj)
	}
	rv, err := c.versioner.ParseResourceVersion(opts.ResourceVersion)
	if err != nil {
		return apierrors.NewBadRequest(fmt.Sprintf("invalid resource version: %v", err))
	}
	return c.listFromCache(ctx, key, opts, rv, nil, listObj)
}

// listFromCache waits until the cache is at least at rv and lists from it,
// whole (a list with a limit only comes here with RV "0").
func (c *Cacher) listFromCache(ctx context.Context, key string, opts storage.ListOptions, rv uint64, progress *progressRequester, listObj runtime.Object) error {
	preparedKey, err := storage.PrepareKey(c.resourcePrefix, key, opts.Recursive)
	if err != nil {
		return err
	}
	listPtr, err := meta.GetItemsPtr(listObj)
	if err != nil {
		return err
	}
	listVal, err := conversion.EnforcePtr(listPtr)
	if err != nil || listVal.Kind() != reflect.Slice {
		return fmt.Errorf("need a pointer to slice, got %T", listPtr)
	}
	// The read lock is held only to wait and to take the newest snapshot;
	// the walk, the filter and the copies run without it.
	snap, cacheRV, err := c.watchCache.waitAndGetLatestSnapshot(ctx, rv, preparedKey, progress)
	if err != nil {
		return err
	}
	if c.afterSnapshot != nil {
		c.afterSnapshot()
	}
	items, err := snap.OrderedListPrefix(preparedKey, "")
	if err != nil {
		return err
	}
	filter := filterFor(preparedKey, opts.Recursive, opts.Predicate)
	listVal.Set(reflect.MakeSlice(listVal.Type(), 0, len(items)))
	for _, item := range items {
		e := item.(*store.Element)
		if filter(e.Key, e.Labels, e.Fields) {
			listVal.Set(reflect.Append(listVal, reflect.ValueOf(e.Object.DeepCopyObject()).Elem()))
		}
	}
	c.metrics.listsFromCache.Add(1)
	return c.versioner.UpdateList(listObj, cacheRV, "", nil)
}

// Versioner returns the storage's versioner.
func (c *Cacher) Versioner() storage.Versioner { return c.versioner }

// Create goes to storage; the change reaches the cache through its watch.
func (c *Cacher) Create(ctx context.Context, key string, obj, out runtime.Object, ttl uint64) error {
	return c.storage.Create(ctx, key, obj, out, ttl)
}

// Delete goes to storage.
func (c *Cacher) Delete(ctx context.Context, key string, out runtime.Object, preconditions *storage.Preconditions,
	validateDeletion storage.ValidateObjectFunc, cachedExistingObject runtime.Object, opts storage.DeleteOptions) error {
	return c.storage.Delete(ctx, key, out, preconditions, validateDeletion, cachedExistingObject, opts)
}

// GuaranteedUpdate goes to storage.
func (c *Cacher) GuaranteedUpdate(ctx context.Context, key string, destination runtime.Object, ignoreNotFound bool,
	preconditions *storage.Preconditions, tryUpdate storage.UpdateFunc, cachedExistingObject runtime.Object) error {
	return c.storage.GuaranteedUpdate(ctx, key, destination, ignoreNotFound, preconditions, tryUpdate, cachedExistingObject)
}

// Stats goes to storage.
func (c *Cacher) Stats(ctx context.Context) (storage.Stats, error) { return c.storage.Stats(ctx) }

// ReadinessCheck fails until the first list is loaded.
func (c *Cacher) ReadinessCheck() error {
	if !c.Ready() {
		return fmt.Errorf("the %s cache is not ready", c.groupResource)
	}
	return nil
}

// RequestWatchProgress goes to storage.
func (c *Cacher) RequestWatchProgress(ctx context.Context) error {
	return c.storage.RequestWatchProgress(ctx)
}

// GetCurrentResourceVersion goes to storage (etcd's current revision).
func (c *Cacher) GetCurrentResourceVersion(ctx context.Context) (uint64, error) {
	return c.storage.GetCurrentResourceVersion(ctx)
}

// EnableResourceSizeEstimation goes to storage.
func (c *Cacher) EnableResourceSizeEstimation(f storage.KeysFunc) error {
	return c.storage.EnableResourceSizeEstimation(f)
}

// CompactRevision goes to storage.
func (c *Cacher) CompactRevision() int64 { return c.storage.CompactRevision() }
