// Upstream: k8s.io/client-go@v0.37.0/tools/cache/reflector.go
// (Reflector.RunWithContext, ListAndWatchWithContext, list, watchList,
// watchWithResync, handleWatch) and k8s.io/apimachinery@v0.37.0/pkg/util/wait
// (the jittered exponential backoff).
//
// Left out: the store (we report each step to a callback; lab 05 puts the
// objects in a store), resync, the Reflector's own first request (a
// streaming list from RV "", since WatchListClient is on by default) and,
// only when that fails, a LIST at RV "0" and relists at the
// last RV with paging off, which the watch cache answers (`lastSyncResourceVersion`,
// k8s.io/client-go@v0.37.0/tools/cache/reflector.go:1126-1131; `PageSize`,
// k8s.io/client-go@v0.37.0/tools/cache/reflector.go:703-716), the random watch timeout between 5 and 10 minutes (we take one fixed
// TimeoutSeconds so a test can see a watch end), falling back from the
// streaming list to LIST when the server does not support it, and
// treating a watch that ends at once without events as a failure.

package listwatcher

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/clock"
)

// StepOp names one thing ListAndWatch did.
type StepOp string

const (
	StepList     StepOp = "LIST"      // a (paginated) LIST answered; Step.List holds it
	StepWatch    StepOp = "WATCH"     // a watch opened from Step.ResourceVersion
	StepEvent    StepOp = "EVENT"     // Step.Event arrived (ADDED ... BOOKMARK, ERROR)
	StepWatchEnd StepOp = "WATCH-END" // the watch ended: Step.Err says why, nil if the server closed it
	StepRelist   StepOp = "RELIST"    // Step.Err says our resourceVersion is gone (410): list again
	StepBackoff  StepOp = "BACKOFF"   // Step.Err failed; waiting Step.Delay before trying again
)

// Step is one record of what ListAndWatch did and why.
type Step struct {
	Op StepOp
	// ResourceVersion is the one the loop will resume from after this step;
	// "" means it knows nothing and will list (or watch-list) first.
	ResourceVersion string
	List            runtime.Object
	Event           watch.Event
	Err             error
	Delay           time.Duration
}

// Options tune ListAndWatch. The zero value lists all at once, watches with
// the server's default timeout, without bookmarks, and backs off from 800ms
// up to 30s, the Reflector's defaults.
type Options struct {
	// PageSize is the LIST limit per page; 0 lists everything in one answer.
	PageSize int64
	// TimeoutSeconds asks the server to end each watch after that long
	// (0: the server picks, between 30 and 60 minutes by default).
	TimeoutSeconds int64
	// AllowWatchBookmarks asks for BOOKMARK events: the server tells us how
	// far it has looked even when nothing we watch changed, so a rewatch
	// starts from a newer RV, one less likely to be gone.
	AllowWatchBookmarks bool
	// WatchList replaces the LIST by a streaming list: a watch with
	// sendInitialEvents=true that sends every object as ADDED, then a
	// BOOKMARK annotated k8s.io/initial-events-end, then live events.
	WatchList bool
	// InitialBackoff and MaxBackoff bound the wait between failed attempts.
	InitialBackoff, MaxBackoff time.Duration
	// Clock times the backoff waits (default clock.RealClock{}). Tests pass a
	// k8s.io/utils/clock/testing.FakeClock to prove the waits without
	// waiting, as upstream's ReflectorOptions.Clock allows.
	Clock clock.Clock
}

// ListAndWatch lists, then watches from the list's resourceVersion, for as
// long as ctx lives, and calls report for every step. It never gives up on
// its own: on a clean end of a watch it rewatches from the last RV it saw,
// on 410 (Expired/Gone) it lists again, on any other failure it backs off
// and tries again. It returns ctx's error.
//
// The invariant that makes it lose nothing: rv is only ever the
// resourceVersion of something we have reported (a LIST, an event, a
// bookmark), and a watch from rv sends every change after rv.
func ListAndWatch(ctx context.Context, lw *ListWatch, opts Options, report func(Step)) error {
	backoff := newBackoff(opts)
	rv := ""
	for ctx.Err() == nil {
		if rv == "" && !opts.WatchList {
			list, err := lw.ListAllWithContext(ctx, metav1.ListOptions{Limit: opts.PageSize})
			if err != nil {
				backoff.wait(ctx, err, rv, report)
				continue
			}
			rv = listResourceVersion(list)
			report(Step{Op: StepList, ResourceVersion: rv, List: list})
		}
		w, err := lw.WatchWithContext(ctx, watchOptions(opts, rv))
		if err != nil {
			// The RV may be gone before the watch even started (relist.go).
			rv = afterFailure(ctx, err, rv, backoff, report)
			continue
		}
		backoff.reset()
		report(Step{Op: StepWatch, ResourceVersion: rv})
		rv, err = watchEvents(w, rv, report)
		if ctx.Err() != nil {
			break
		}
		report(Step{Op: StepWatchEnd, ResourceVersion: rv, Err: err})
		if err != nil { // nil: the server ended the watch; resume at once
			rv = afterFailure(ctx, err, rv, backoff, report) // relist.go
		}
	}
	return ctx.Err()
}

// watchOptions asks for a watch from rv, or for a streaming list when rv is
// "" in WatchList mode. A streaming list must say NotOlderThan: with RV ""
// that means "at least as new as a consistent read", which is what a LIST
// with RV "" gives.
func watchOptions(opts Options, rv string) metav1.ListOptions {
	o := metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: opts.AllowWatchBookmarks}
	if opts.TimeoutSeconds > 0 {
		o.TimeoutSeconds = &opts.TimeoutSeconds
	}
	if rv == "" && opts.WatchList {
		yes := true
		o.SendInitialEvents = &yes
		o.ResourceVersionMatch = metav1.ResourceVersionMatchNotOlderThan
		o.AllowWatchBookmarks = true // required: the end of the list is a bookmark
	}
	return o
}

// watchEvents reports every event of w and returns the RV to resume from,
// with the error that ended the watch (nil if the server closed it).
//
// During a streaming list (rv == "") the objects arrive in key order, not
// RV order, so their RVs mean nothing for resuming: rv moves only when the
// initial-events-end bookmark says the list is complete.
func watchEvents(w watch.Interface, rv string, report func(Step)) (string, error) {
	defer w.Stop()
	listing := rv == ""
	for ev := range w.ResultChan() {
		if ev.Type == watch.Error {
			report(Step{Op: StepEvent, ResourceVersion: rv, Event: ev})
			return rv, StatusError(ev.Object)
		}
		obj, err := meta.Accessor(ev.Object)
		if err != nil {
			return rv, err
		}
		rv, listing = resumeFrom(ev, obj, rv, listing) // resume.go
		report(Step{Op: StepEvent, ResourceVersion: rv, Event: ev})
	}
	return rv, nil
}

// listResourceVersion is the RV of the collection as a whole: the state the
// list shows, the point to watch from.
func listResourceVersion(list runtime.Object) string {
	m, err := meta.ListAccessor(list)
	if err != nil {
		return ""
	}
	return m.GetResourceVersion()
}

// backoff doubles the wait after each failure, up to a cap, and adds up to
// 100% random jitter, so a thousand clients cut off by the same apiserver
// restart do not all come back in the same millisecond. With the defaults
// the waits are 0.8-1.6s, 1.6-3.2s, ... and, from the seventh failure on,
// 30-60s: upstream's wait.Backoff{Duration: 800ms, Factor: 2, Jitter: 1,
// Cap: 30s} in the Reflector (`defaultBackoffInit`, k8s.io/client-go@v0.37.0/tools/cache/reflector.go:62-67),
// whose jitter is also added on top of the capped delay. Upstream's
// `backoffManager.Step` resets the backoff when more than 2 minutes have
// passed since its previous reset, failures or not (k8s.io/apimachinery@v0.37.0/pkg/util/wait/backoff.go:292-304;
// the comment above `defaultBackoffReset` says "if we don't backoff for
// 2min", which is not what the code does: k8s.io/client-go@v0.37.0/tools/cache/reflector.go:64-65),
// so a Reflector that keeps failing starts again at 800ms every 2 minutes.
// We reset it when a watch opens.
type backoff struct {
	clock              clock.Clock
	initial, max, next time.Duration
}

func newBackoff(opts Options) *backoff {
	b := &backoff{clock: opts.Clock, initial: opts.InitialBackoff, max: opts.MaxBackoff}
	if b.clock == nil {
		b.clock = clock.RealClock{}
	}
	if b.initial <= 0 {
		b.initial = 800 * time.Millisecond
	}
	if b.max <= 0 {
		b.max = 30 * time.Second
	}
	b.reset()
	return b
}

func (b *backoff) reset() { b.next = b.initial }

// wait reports the failure and the delay, then waits (or returns early when
// ctx ends).
func (b *backoff) wait(ctx context.Context, err error, rv string, report func(Step)) {
	if ctx.Err() != nil {
		return // the failure was our own cancellation: nothing to retry
	}
	delay := b.nextDelay() // backoff_delay.go
	report(Step{Op: StepBackoff, ResourceVersion: rv, Err: err, Delay: delay})
	t := b.clock.NewTimer(delay)
	defer t.Stop()
	select {
	case <-t.C():
	case <-ctx.Done():
	}
}
