// Upstream: this file stands in for etcd plus k8s.io/apiserver@v0.36.4
// pkg/storage/cacher: watch_cache.go (watchCache: the current objects and a
// ring buffer of recent events; getAllEventsSinceLocked answers "what happened
// after RV N", or "too old resource version") and cacher.go (dispatchEvents:
// one incoming event offered to every watcher).
//
// It is deliberately small: one resource (ConfigMaps), one process, one lock.
// Lab 04 rebuilds the cacher over real etcd; here the store only has to give
// the WatchServer something real to stream. What it leaves out: etcd's MVCC
// and compaction (our history is a fixed-size ring), indexes and triggers
// (every watcher sees every event and filters it), the time-based history
// window, and consistent reads from cache (we are the source of truth).

package watchserver

import (
	"fmt"
	"sort"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
)

var (
	configMapType  = metav1.TypeMeta{Kind: "ConfigMap", APIVersion: "v1"}
	configMapsGR   = schema.GroupResource{Resource: "configmaps"}
	watcherBufSize = 100 // like cacher's chanSize for an unindexed watch (10..1000)
)

func formatRV(rv uint64) string { return strconv.FormatUint(rv, 10) }

// Store holds ConfigMaps in memory and tells watchers about every change.
//
// Invariants, all guarded by mu:
//   - rv is the resourceVersion of the last write; every write takes rv+1,
//     so resourceVersions are a global, gap-free sequence (like etcd's revision
//     when nothing else writes).
//   - history holds the last cap(history) events in RV order; an event is in
//     history before any watcher sees it, so a watch started from any RV in
//     the window misses nothing and sees nothing twice.
//   - objects never holds an object that is being modified: writes store a
//     new *corev1.ConfigMap, so readers and encoded frames need no lock.
type Store struct {
	mu       sync.Mutex
	rv       uint64
	objects  map[string]*corev1.ConfigMap // key: namespace/name
	history  []*Event                     // ring buffer, oldest at start
	start    int                          // index of the oldest event in history
	size     int                          // number of events in history
	watchers map[*Watcher]struct{}
	closed   bool
}

// NewStore returns an empty store that remembers the last historySize events.
// The first write gets resourceVersion firstRV+1.
func NewStore(historySize int, firstRV uint64) *Store {
	if historySize < 1 {
		historySize = 1
	}
	return &Store{
		rv:       firstRV,
		objects:  map[string]*corev1.ConfigMap{},
		history:  make([]*Event, historySize),
		watchers: map[*Watcher]struct{}{},
	}
}

func key(ns, name string) string { return ns + "/" + name }

// ResourceVersion is the RV of the last write (the RV a LIST reports).
func (s *Store) ResourceVersion() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rv
}

// Get returns one object, or a 404 Status error.
func (s *Store) Get(ns, name string) (*corev1.ConfigMap, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	obj, ok := s.objects[key(ns, name)]
	if !ok {
		return nil, apierrors.NewNotFound(configMapsGR, name)
	}
	return obj, nil
}

// List returns the objects that match, sorted by namespace and name (as
// etcd's key order would), and the RV the list is consistent with.
func (s *Store) List(ns string, match func(*corev1.ConfigMap) bool) ([]*corev1.ConfigMap, uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.listLocked(ns, match), s.rv
}

func (s *Store) listLocked(ns string, match func(*corev1.ConfigMap) bool) []*corev1.ConfigMap {
	var out []*corev1.ConfigMap
	for _, obj := range s.objects {
		if (ns == "" || obj.Namespace == ns) && match(obj) {
			out = append(out, obj)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		return key(out[i].Namespace, out[i].Name) < key(out[j].Namespace, out[j].Name)
	})
	return out
}

// Create stores a new object. The caller fills name, namespace, uid and
// creationTimestamp; the store assigns the resourceVersion.
func (s *Store) Create(obj *corev1.ConfigMap) (*corev1.ConfigMap, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, apierrors.NewServiceUnavailable("the server is shutting down")
	}
	k := key(obj.Namespace, obj.Name)
	if _, ok := s.objects[k]; ok {
		return nil, apierrors.NewAlreadyExists(configMapsGR, obj.Name)
	}
	s.rv++
	obj.TypeMeta = configMapType
	obj.ResourceVersion = formatRV(s.rv)
	s.objects[k] = obj
	s.recordLocked(NewEvent(watch.Added, obj, nil, s.rv))
	return obj, nil
}

// Update replaces an object with a new version. If obj carries a
// resourceVersion it must be the current one (optimistic concurrency);
// otherwise the update is unconditional, as for a PATCH.
func (s *Store) Update(obj *corev1.ConfigMap) (*corev1.ConfigMap, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, apierrors.NewServiceUnavailable("the server is shutting down")
	}
	k := key(obj.Namespace, obj.Name)
	old, ok := s.objects[k]
	if !ok {
		return nil, apierrors.NewNotFound(configMapsGR, obj.Name)
	}
	if obj.ResourceVersion != "" && obj.ResourceVersion != old.ResourceVersion {
		return nil, apierrors.NewConflict(configMapsGR, obj.Name, fmt.Errorf("the object has been modified; please apply your changes to the latest version and try again"))
	}
	// Fields the client may not change.
	obj.UID, obj.CreationTimestamp = old.UID, old.CreationTimestamp
	s.rv++
	obj.TypeMeta = configMapType
	obj.ResourceVersion = formatRV(s.rv)
	s.objects[k] = obj
	s.recordLocked(NewEvent(watch.Modified, obj, old, s.rv))
	return obj, nil
}

// Delete removes an object. The DELETED event carries the last state of the
// object with the resourceVersion of the deletion, as etcd's watch does.
func (s *Store) Delete(ns, name string) (*corev1.ConfigMap, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, apierrors.NewServiceUnavailable("the server is shutting down")
	}
	k := key(ns, name)
	old, ok := s.objects[k]
	if !ok {
		return nil, apierrors.NewNotFound(configMapsGR, name)
	}
	delete(s.objects, k)
	s.rv++
	gone := old.DeepCopy()
	gone.ResourceVersion = formatRV(s.rv)
	s.recordLocked(NewEvent(watch.Deleted, gone, old, s.rv))
	return gone, nil
}

// recordLocked appends ev to the history (dropping the oldest when full) and
// offers it to every watcher: cacher.dispatchEvents in one loop. A watcher
// whose buffer is full is terminated, not waited for: one slow client must
// not hold up writes or other watchers. Its client sees the stream end and
// re-watches from the last RV it got, which the history can usually replay.
func (s *Store) recordLocked(ev *Event) {
	capacity := len(s.history)
	if s.size == capacity {
		s.start = (s.start + 1) % capacity
		s.size--
	}
	s.history[(s.start+s.size)%capacity] = ev
	s.size++
	for w := range s.watchers {
		select {
		case w.input <- ev:
		default:
			s.forgetLocked(w)
		}
	}
}

// oldestLocked is the lowest RV a watch can start from: the history can
// replay every event after it. Before the ring first wraps, that is the RV
// the store started at.
func (s *Store) oldestLocked() uint64 {
	if s.size == 0 {
		return s.rv
	}
	return s.history[s.start].RV - 1
}

// WatchOptions is what a watcher asked for, already parsed and validated.
type WatchOptions struct {
	Namespace           string // "" for all namespaces
	ResourceVersion     string
	SendInitialEvents   *bool
	AllowWatchBookmarks bool
	Match               func(*corev1.ConfigMap) bool
	// Deadline is when the watch will end (zero: never). A watcher that
	// allows bookmarks gets one 2s before it, so the client can resume
	// from a recent RV after the timeout.
	Deadline time.Time
}

// Watch starts a watcher. The three ways to start (getAllEventsSinceLocked):
//
//   - SendInitialEvents=true: the current state as ADDED events, then (if
//     bookmarks are allowed) a BOOKMARK annotated k8s.io/initial-events-end
//     at the RV of that state, then every change after it.
//   - SendInitialEvents=false with RV "" or "0": changes from now on.
//   - RV N: every change after N, replayed from history; if N is older than
//     the history the watcher gets one ERROR event, 410 Expired, and ends.
//
// An RV in the future is accepted: the watcher sees changes after it only.
// Errors in the RV itself are returned, not streamed (the handler turns them
// into a Status).
func (s *Store) Watch(opts WatchOptions) (*Watcher, error) {
	rv, err := parseRV(opts.ResourceVersion)
	if err != nil {
		return nil, err
	}
	match := opts.Match
	if match == nil {
		match = func(*corev1.ConfigMap) bool { return true }
	}
	s.mu.Lock()
	defer s.mu.Unlock()

	w := &Watcher{
		store:     s,
		namespace: opts.Namespace,
		match:     match,
		bookmarks: opts.AllowWatchBookmarks,
		deadline:  opts.Deadline,
		input:     make(chan *Event, watcherBufSize),
		result:    make(chan *Event, watcherBufSize),
		done:      make(chan struct{}),
	}
	switch {
	case opts.SendInitialEvents != nil && *opts.SendInitialEvents:
		// The snapshot is taken under the lock, so it is exactly the state
		// at s.rv. Each object is encoded here for this watcher, under the
		// lock: fine for a lab's few objects; upstream serves the initial
		// events from the watch cache's store outside the dispatch path,
		// and its cachingObject reuses one encoding across watchers.
		for _, obj := range s.listLocked(opts.Namespace, match) {
			w.initial = append(w.initial, NewEvent(watch.Added, obj, nil, 0))
		}
		if opts.AllowWatchBookmarks {
			w.initial = append(w.initial, bookmarkEvent(s.rv, true))
		}
		w.after = s.rv
	case rv == 0:
		w.after = s.rv
	case rv < s.oldestLocked():
		w.initial = []*Event{ErrorEvent(&apierrors.NewResourceExpired(
			fmt.Sprintf("too old resource version: %d (%d)", rv, s.oldestLocked())).ErrStatus)}
		w.expired = true
	default:
		// Replayed events go through the same filter as live ones: the
		// namespace and selectors apply to history too.
		w.after = rv
		for i := 0; i < s.size; i++ {
			if ev := w.filter(s.history[(s.start+i)%len(s.history)]); ev != nil {
				w.initial = append(w.initial, ev)
			}
		}
	}
	w.lastRV = w.after
	if s.closed {
		w.expired = true // nothing more will come; end after what we have
	}
	if !w.expired {
		s.watchers[w] = struct{}{}
	}
	go w.process()
	return w, nil
}

// SendBookmarks offers a BOOKMARK at the current RV to every watcher that
// allows them. Upstream sends one to each watcher about once a minute and
// shortly before its timeout, so a client can resume from a recent RV even
// when nothing it watches changes. Who calls this and how often is the
// server's choice (see Server.BookmarkInterval).
func (s *Store) SendBookmarks() {
	s.mu.Lock()
	defer s.mu.Unlock()
	ev := bookmarkEvent(s.rv, false)
	for w := range s.watchers {
		if !w.bookmarks {
			continue
		}
		select {
		case w.input <- ev:
		default:
			s.forgetLocked(w)
		}
	}
}

// requestBookmark queues a BOOKMARK at the current RV for one watcher. It
// goes through input like any event, so it cannot overtake an event with a
// lower RV that is still queued: a bookmark promises "you have seen
// everything up to here", and must not lie.
func (s *Store) requestBookmark(w *Watcher) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.watchers[w]; !ok {
		return
	}
	select {
	case w.input <- bookmarkEvent(s.rv, false):
	default:
		s.forgetLocked(w)
	}
}

// Close ends every watcher (their streams end) and refuses further writes.
func (s *Store) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	for w := range s.watchers {
		s.forgetLocked(w)
	}
}

// forgetLocked removes a watcher and closes its input: its process loop
// drains nothing more and closes result, which ends the client's stream.
func (s *Store) forgetLocked(w *Watcher) {
	if _, ok := s.watchers[w]; !ok {
		return
	}
	delete(s.watchers, w)
	close(w.input)
}

// Watcher is one client's view of the store: cacheWatcher, simplified.
//
// Events arrive on input (filled by the store under its lock, never
// blocking) and leave on result (read by the WatchServer). Between the two,
// process sends the initial events first, drops events at or before `after`,
// and applies the watcher's namespace and selectors. Stop or the store
// closing input ends process, which closes result.
type Watcher struct {
	store     *Store
	namespace string
	match     func(*corev1.ConfigMap) bool
	bookmarks bool
	deadline  time.Time
	initial   []*Event // sent before anything from input
	after     uint64   // live events with RV <= after were already covered
	expired   bool     // the watch ends after initial (410 Expired)
	lastRV    uint64   // RV of the last event sent (only process touches it)

	input    chan *Event
	result   chan *Event
	done     chan struct{} // closed by Stop
	stopOnce sync.Once
}

// ResultChan is the stream of events for this watcher; it is closed when the
// watcher ends (Stop, store closed, or the watcher fell behind).
func (w *Watcher) ResultChan() <-chan *Event { return w.result }

// Stop ends the watcher and releases its goroutine. Safe to call twice.
func (w *Watcher) Stop() {
	w.stopOnce.Do(func() {
		close(w.done)
		w.store.mu.Lock()
		w.store.forgetLocked(w)
		w.store.mu.Unlock()
	})
}

func (w *Watcher) process() {
	defer close(w.result)
	for _, ev := range w.initial {
		if !w.send(ev) {
			return
		}
	}
	w.initial = nil
	if w.expired {
		return
	}
	// The pre-timeout bookmark: 2s before the deadline (at once if that is
	// already past), as the cacher's bookmark timer does.
	var bookmarkDue <-chan time.Time
	if w.bookmarks && !w.deadline.IsZero() {
		t := time.NewTimer(time.Until(w.deadline.Add(-2 * time.Second)))
		defer t.Stop()
		bookmarkDue = t.C
	}
	for {
		select {
		case <-bookmarkDue:
			bookmarkDue = nil
			w.store.requestBookmark(w)
		case ev, ok := <-w.input:
			if !ok {
				return
			}
			out := w.filter(ev)
			if out != nil && !w.send(out) {
				return
			}
		case <-w.done:
			return
		}
	}
}

func (w *Watcher) send(ev *Event) bool {
	select {
	case w.result <- ev:
		if ev.RV > w.lastRV {
			w.lastRV = ev.RV
		}
		return true
	case <-w.done:
		return false
	}
}

// filter is cacheWatcher.convertToWatchEvent: which event, if any, this
// watcher sees. The shared *Event is passed through whenever possible; only
// when a selector's answer changes between the old and the new object do
// we make (and encode) a watcher-specific event:
//
//	old matched, new matches:   the event itself
//	old did not, new matches:   ADDED new
//	old matched, new does not:  DELETED old, with the change's RV
func (w *Watcher) filter(ev *Event) *Event {
	if ev.Type == watch.Bookmark {
		// Only a bookmark that moves the client forward is worth sending:
		// one at or below what it has seen tells it nothing.
		if !w.bookmarks || ev.RV <= w.lastRV {
			return nil
		}
		return ev
	}
	if ev.RV <= w.after {
		return nil // already covered by the initial events or the start RV
	}
	cur := ev.Type != watch.Deleted && w.matches(ev.Object)
	prev := ev.Prev != nil && w.matches(ev.Prev)
	switch {
	case ev.Type == watch.Deleted && prev:
		return ev
	case ev.Type == watch.Deleted:
		return nil
	case cur && (prev || ev.Type == watch.Added):
		return ev
	case cur:
		return NewEvent(watch.Added, ev.Object, nil, ev.RV)
	case prev:
		old := ev.Prev.DeepCopy()
		old.ResourceVersion = formatRV(ev.RV)
		return NewEvent(watch.Deleted, old, nil, ev.RV)
	}
	return nil
}

func (w *Watcher) matches(obj *corev1.ConfigMap) bool {
	return (w.namespace == "" || obj.Namespace == w.namespace) && w.match(obj)
}
