// Upstream: k8s.io/apiserver@v0.37.0/pkg/storage/cacher/cacher.go (Cacher.Watch:
// where a watch starts; newErrWatcher), watch_cache.go
// (getAllEventsSinceLocked: replay after RV N, from the history ring of
// watch_cache_history.go since 1.37, or "too old resource version") and cache_watcher.go (cacheWatcher: input and result channels,
// processInterval, convertToWatchEvent, nextBookmarkTime).
//
// Simplified: one goroutine per watcher does what processInterval and the
// cacher's bookmark timer do together; every watcher sees every event of the
// resource and filters it (no indexed triggers); a watcher whose buffer is
// full is terminated at once (no blocking budget).

package memstorage

import (
	"context"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/storage"
)

// Watch starts a watcher of the object at key (or, Recursive, of every
// object under it) that passes opts.Predicate. Where the stream starts:
//
//   - SendInitialEvents=true: the current objects as ADDED, then (if
//     Predicate.AllowWatchBookmarks) a BOOKMARK annotated
//     k8s.io/initial-events-end at their RV, then every change after it.
//   - SendInitialEvents unset and RV "" or "0": the current objects as
//     ADDED, then changes (the legacy meaning; the handler's defaulting
//     turns such requests into the first case).
//   - SendInitialEvents=false and RV "" or "0": changes from now on.
//   - RV N: every change after N, replayed from the history, then live; if
//     N is older than the history, one ERROR event, 410 Expired, and the end.
//
// As upstream, only a bad key or a malformed RV is returned as an error
// (upstream's Cacher also returns 429 while its cache is not ready, which a
// store with no cache never is); everything that goes wrong after that is an
// ERROR event in the stream.
func (s *Storage) Watch(ctx context.Context, key string, opts storage.ListOptions) (watch.Interface, error) {
	key, err := storage.PrepareKey(s.cfg.ResourcePrefix, key, opts.Recursive)
	if err != nil {
		return nil, err
	}
	rv, err := s.versioner.ParseResourceVersion(opts.ResourceVersion)
	if err != nil {
		return nil, err
	}
	initial := opts.SendInitialEvents != nil && *opts.SendInitialEvents
	legacyInitial := opts.SendInitialEvents == nil && rv == 0
	if opts.ResourceVersion == "" && opts.SendInitialEvents != nil {
		// Upstream asks etcd for its current revision here
		// (getWatchCacheResourceVersion), with the request's context: a
		// context that is already done (timeoutSeconds=-1) fails here, and
		// only for RV "". With RV "0" or N the watch starts and simply
		// ends at once.
		if _, err := s.GetCurrentResourceVersion(ctx); err != nil {
			return newErrWatcher(err), nil
		}
	}
	deadline, _ := ctx.Deadline()

	s.mu.Lock()
	defer s.mu.Unlock()
	current := s.revision.current()
	w := &watcher{
		storage:   s,
		key:       key,
		recursive: opts.Recursive,
		pred:      opts.Predicate,
		bookmarks: opts.Predicate.AllowWatchBookmarks,
		deadline:  deadline,
		input:     make(chan *event, s.chanSize),
		result:    make(chan watch.Event, s.chanSize),
		done:      make(chan struct{}),
	}
	switch {
	case initial && rv > current:
		// Upstream waits up to 3 s for its cache to reach rv, then fails
		// with this error. We are the source of truth: waiting cannot help.
		return newErrWatcher(storage.NewTooLargeResourceVersionError(rv, current, 1)), nil
	case initial || legacyInitial:
		for _, k := range s.sortedKeysLocked() {
			if obj := s.objects[k]; w.inScope(k) && w.matches(obj) {
				w.initial = append(w.initial, watch.Event{Type: watch.Added, Object: s.wrapped[k]})
			}
		}
		if initial && w.bookmarks {
			bookmark := s.cfg.NewFunc()
			s.setRV(bookmark, current)
			metaObj, _ := meta.Accessor(bookmark)
			metaObj.SetAnnotations(map[string]string{metav1.InitialEventsAnnotationKey: "true"})
			w.initial = append(w.initial, watch.Event{Type: watch.Bookmark, Object: bookmark})
		}
		w.after = current
	case rv == 0:
		w.after = current
	default:
		// A history that no longer reaches back to rv cannot replay what
		// the client missed: 410 Expired (expired.go).
		if err := s.tooOldLocked(rv); err != nil {
			return newErrWatcher(err), nil
		}
		// Replayed events go through the same filter as live ones.
		w.after = rv
		for i := 0; i < s.size; i++ {
			if ev, ok := w.convert(s.history[(s.start+i)%len(s.history)]); ok {
				w.initial = append(w.initial, ev)
			}
		}
	}
	if s.closed {
		close(w.input) // nothing more will come: end after the initial events
	} else {
		s.watchers[w] = struct{}{}
	}
	go w.process(ctx)
	return w, nil
}

func (s *Storage) sortedKeysLocked() []string {
	keys := make([]string, 0, len(s.objects))
	for k := range s.objects {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// requestBookmark queues a BOOKMARK at the current RV for one watcher. It
// goes through input like any event, so it cannot overtake an event with a
// lower RV that is still queued: a bookmark promises "you have seen
// everything up to here", and must not lie.
func (s *Storage) requestBookmark(w *watcher) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.watchers[w]; !ok {
		return
	}
	bookmark := s.cfg.NewFunc()
	rv := s.revision.current()
	s.setRV(bookmark, rv)
	select {
	case w.input <- &event{typ: watch.Bookmark, rv: rv, cached: newCachingObject(bookmark)}:
	default:
		s.forgetLocked(w)
	}
}

// forgetLocked removes a watcher and closes its input: its process loop
// ends and closes result, which ends the client's stream.
func (s *Storage) forgetLocked(w *watcher) {
	if _, ok := s.watchers[w]; !ok {
		return
	}
	delete(s.watchers, w)
	close(w.input)
}

// watcher is one client's view of the storage: cacheWatcher, simplified.
//
// Events arrive on input (filled by the storage under its lock, never
// blocking) and leave on result (read by the WatchServer). Between the two,
// process sends the initial events first, then converts each event for this
// watcher (convert) and sends bookmarks when they are due. Stop, the
// request's context, or the storage closing input ends process, which
// closes result.
type watcher struct {
	storage   *Storage
	key       string
	recursive bool
	pred      storage.SelectionPredicate
	bookmarks bool
	deadline  time.Time     // zero: none
	initial   []watch.Event // sent before anything from input
	after     uint64        // live events with RV <= after were already covered

	input    chan *event
	result   chan watch.Event
	done     chan struct{} // closed by Stop
	stopOnce sync.Once
}

func (w *watcher) ResultChan() <-chan watch.Event { return w.result }

// Stop ends the watcher and releases its goroutine. Safe to call twice.
func (w *watcher) Stop() {
	w.stopOnce.Do(func() {
		close(w.done)
		w.storage.mu.Lock()
		w.storage.forgetLocked(w)
		w.storage.mu.Unlock()
	})
}

func (w *watcher) process(ctx context.Context) {
	defer close(w.result)
	if ctx.Err() != nil {
		// Already over (timeoutSeconds=-1): end without sending anything,
		// rather than race the initial events against the done context.
		return
	}
	for _, ev := range w.initial {
		if !w.send(ctx, ev) {
			return
		}
	}
	w.initial = nil
	// The bookmark timer: nil channel (never fires) when none is due.
	var timer *time.Timer
	var bookmarkDue <-chan time.Time
	if next, ok := w.nextBookmarkTime(time.Now(), false); ok && w.bookmarks {
		timer = time.NewTimer(time.Until(next))
		defer timer.Stop()
		bookmarkDue = timer.C
	}
	for {
		select {
		case now := <-bookmarkDue:
			w.storage.requestBookmark(w)
			if next, ok := w.nextBookmarkTime(now, true); ok {
				timer.Reset(next.Sub(now))
			} else {
				bookmarkDue = nil
			}
		case ev, ok := <-w.input:
			if !ok || !w.forward(ctx, ev) {
				return
			}
		case <-ctx.Done():
			return
		case <-w.done:
			return
		}
	}
}

// nextBookmarkTime is cacheWatcher.nextBookmarkTime: about once per
// BookmarkFrequency, and 2 s before the deadline, whichever is first. A
// watch whose pre-timeout time has already passed (timeoutSeconds < 2) gets
// no bookmark scheduled at all, as upstream. After a bookmark has been sent
// (again=true), one due at that very instant is not sent twice.
func (w *watcher) nextBookmarkTime(now time.Time, again bool) (time.Time, bool) {
	next := now.Add(w.storage.cfg.BookmarkFrequency)
	if !w.deadline.IsZero() {
		if preTimeout := w.deadline.Add(-2 * time.Second); preTimeout.Before(next) {
			next = preTimeout
		}
	}
	if next.Before(now) || (again && !next.After(now)) {
		return time.Time{}, false
	}
	return next, true
}

// forward converts one event from input and sends it if this watcher
// should see it. It returns false when the watcher is ending.
func (w *watcher) forward(ctx context.Context, ev *event) bool {
	out, ok := w.convert(ev)
	if !ok {
		return true
	}
	return w.send(ctx, out)
}

func (w *watcher) send(ctx context.Context, ev watch.Event) bool {
	select {
	case w.result <- ev:
		return true
	case <-ctx.Done():
		return false
	case <-w.done:
		return false
	}
}

// convert is cacheWatcher.convertToWatchEvent: which event, if any, this
// watcher sees. The shared cachingObject is passed on whenever possible (its
// encodings are cached per event type, so ADDED and MODIFIED of the same
// object do not collide); only when a selector's answer changes from match
// to no match do we build an object for this watcher alone:
//
//	old matched, new matches:   the event itself
//	old did not, new matches:   ADDED new
//	old matched, new does not:  DELETED old, with the change's RV
func (w *watcher) convert(ev *event) (watch.Event, bool) {
	if ev.typ == watch.Bookmark {
		// Like cacheWatcher.process for live events: sent if its RV is past
		// the requested one, even at an RV the watcher has seen (nothing new
		// for the client, but cheap). Upstream first raises that RV past the
		// events it replays (processInterval); we do not, a simplification.
		if !w.bookmarks || ev.rv <= w.after {
			return watch.Event{}, false
		}
		return watch.Event{Type: watch.Bookmark, Object: ev.cached}, true
	}
	if ev.rv <= w.after || !w.inScope(ev.key) {
		return watch.Event{}, false
	}
	cur := ev.typ != watch.Deleted && w.matches(ev.object)
	prev := ev.prev != nil && w.matches(ev.prev)
	switch {
	case ev.typ == watch.Deleted && prev:
		return watch.Event{Type: watch.Deleted, Object: ev.cached}, true
	case ev.typ == watch.Deleted:
		return watch.Event{}, false
	case cur && (prev || ev.typ == watch.Added):
		return watch.Event{Type: ev.typ, Object: ev.cached}, true
	case cur:
		return watch.Event{Type: watch.Added, Object: ev.cached}, true
	case prev:
		old := ev.prev.DeepCopyObject()
		w.storage.setRV(old, ev.rv)
		return watch.Event{Type: watch.Deleted, Object: old}, true
	}
	return watch.Event{}, false
}

func (w *watcher) inScope(key string) bool {
	if w.recursive {
		return strings.HasPrefix(key, w.key)
	}
	return key == w.key
}

func (w *watcher) matches(obj runtime.Object) bool {
	ok, err := w.pred.Matches(obj)
	return err == nil && ok
}

// errWatcher is newErrWatcher: a watch whose only event is an ERROR
// carrying the error as a Status (a 500 InternalError for an error that is
// not already a Status), then the end.
type errWatcher chan watch.Event

func newErrWatcher(err error) errWatcher {
	var status *metav1.Status
	if se, ok := err.(*apierrors.StatusError); ok {
		status = &se.ErrStatus
	} else {
		status = &metav1.Status{Status: metav1.StatusFailure, Message: err.Error(),
			Reason: metav1.StatusReasonInternalError, Code: http.StatusInternalServerError}
	}
	ch := make(errWatcher, 1)
	ch <- watch.Event{Type: watch.Error, Object: status}
	close(ch)
	return ch
}

func (e errWatcher) ResultChan() <-chan watch.Event { return e }
func (e errWatcher) Stop()                          {}
