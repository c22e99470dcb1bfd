// Package memstorage is part of lab 03 (the lesson is
// labs/03-watchserver/README.md): the storage its API server serves from.
//
// It is lab 03's in-memory implementation of upstream's
// storage.Interface (k8s.io/apiserver@v0.37.0/pkg/storage/interfaces.go), the
// interface the API server's handlers read and write through. In a real
// apiserver that interface is implemented by the etcd3 store
// (pkg/storage/etcd3/store.go) with the Cacher in front of it
// (pkg/storage/cacher/cacher.go); lab 04 builds both. This one stands in for
// the pair so lab 03 can teach the server side of a watch without etcd.
//
// What it keeps of upstream's semantics: resourceVersions are one global,
// gap-free sequence (a Revision shared by the Storages of one server, as
// every resource in one etcd shares its revision); Get and GetList honour
// resourceVersion "", "0", N and resourceVersionMatch; Watch starts from an
// RV, from the current state (sendInitialEvents, with the
// initial-events-end bookmark), or answers 410 Expired as an ERROR event when
// the RV is older than its history; GuaranteedUpdate retries tryUpdate until
// the object did not change underneath; Delete checks preconditions.
//
// One thing it does as the Cacher does, not as the etcd3 store: the object
// of every watch event is a cachingObject (caching_object.go), a
// runtime.CacheableObject that the WatchServers of all watchers share, so an
// event is encoded once. A consumer that needs the object itself (to read
// its fields) calls GetObject, as upstream's handlers do with the Cacher's
// events. Upstream's Cacher, given this storage, would need plain objects
// (the etcd3 store's events carry them); lab 04's Cacher reads etcd.
//
// What it leaves out: persistence, TTLs, paging (limit/continue),
// compaction (the history is a fixed-size ring; upstream's watch cache ring
// starts at 100 events and is grown or shrunk between 100 and 102,400 so that
// it keeps at least 75 s of events, as long as the cap allows: `resizeCacheLocked`,
// k8s.io/apiserver@v0.37.0/pkg/storage/cacher/watch_cache_history.go:120-135), and
// the cacher's indexes and triggers.
package memstorage

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/storage"
)

// Revision is the resourceVersion counter that the Storages of one server
// share, as all resources in one etcd share its revision: a ConfigMap write
// and a Pod write never get the same resourceVersion.
type Revision struct{ last atomic.Uint64 }

// NewRevision returns a Revision whose current value is start: the next
// write gets start+1.
func NewRevision(start uint64) *Revision {
	r := &Revision{}
	r.last.Store(start)
	return r
}

func (r *Revision) current() uint64 { return r.last.Load() }
func (r *Revision) next() uint64    { return r.last.Add(1) }

// Config describes the one resource a Storage holds.
type Config struct {
	// ResourcePrefix is the key prefix every key of this resource has,
	// e.g. /registry/configmaps (see storage.PrepareKey).
	ResourcePrefix string
	// NewFunc returns an empty object of the resource's kind: what a
	// BOOKMARK carries, and what Get returns with IgnoreNotFound. Required.
	NewFunc func() runtime.Object
	// HistorySize is how many events a watch can be replayed from.
	// Default 100, the watch cache's initial (and minimum) capacity.
	HistorySize int
	// Revision is shared with the other Storages of the server; nil: a new one.
	Revision *Revision
	// BookmarkFrequency is how often a watcher that allows bookmarks gets
	// one (upstream: about once a minute). Default one minute.
	BookmarkFrequency time.Duration
}

// Storage holds the objects of one resource and tells watchers about every
// change.
//
// Invariants, all guarded by mu:
//   - every write takes the next revision while holding mu, so within one
//     Storage the events are in RV order;
//   - an event is in history before any watcher sees it, so a watch started
//     from any RV the history covers misses nothing and sees nothing twice;
//   - objects never holds an object that is later modified: writes store a
//     new object, so readers and cached encodings need no lock.
type Storage struct {
	cfg       Config
	versioner storage.APIObjectVersioner
	revision  *Revision
	chanSize  int

	mu       sync.Mutex
	objects  map[string]runtime.Object // key -> object, resourceVersion set
	wrapped  map[string]*cachingObject // key -> the same object, as its last event carried it
	history  []*event                  // ring buffer, oldest at start
	start    int                       // index of the oldest event in history
	size     int                       // number of events in history
	startRV  uint64                    // the revision when we started: a watch from here misses nothing until the ring drops an event
	dropped  bool                      // the ring has dropped an event
	watchers map[*watcher]struct{}
	closed   bool
}

var _ storage.Interface = &Storage{}

// event is one change as the history and the watchers see it. object is
// what filtering looks at; cached wraps the same object for encoding, so
// every watcher that is sent this event shares one serialization.
type event struct {
	typ    watch.EventType
	key    string
	object runtime.Object // the new state; for DELETED, the last state at the deletion's RV
	prev   runtime.Object // the state before a MODIFIED or DELETED
	rv     uint64
	cached *cachingObject
}

// New returns an empty Storage.
func New(cfg Config) *Storage {
	if cfg.HistorySize < 1 {
		cfg.HistorySize = 100
	}
	if cfg.Revision == nil {
		cfg.Revision = &Revision{}
	}
	if cfg.BookmarkFrequency <= 0 {
		cfg.BookmarkFrequency = time.Minute
	}
	return &Storage{
		cfg:      cfg,
		revision: cfg.Revision,
		chanSize: suggestedWatchChannelSize(cfg.HistorySize),
		objects:  map[string]runtime.Object{},
		wrapped:  map[string]*cachingObject{},
		history:  make([]*event, cfg.HistorySize),
		startRV:  cfg.Revision.current(),
		watchers: map[*watcher]struct{}{},
	}
}

// suggestedWatchChannelSize is upstream's rule for a resource without
// indexes (watch_cache_history.go, suggestedWatchChannelSize): room for about one
// second of history (capacity / 75 s), at least 10, at most 100. Upstream
// allows 1000 only for an indexed resource whose watch does not use the
// index; we have no indexes.
func suggestedWatchChannelSize(historySize int) int {
	size := (historySize + 74) / 75
	return min(max(size, 10), 100)
}

func (s *Storage) Versioner() storage.Versioner { return s.versioner }

func formatRV(rv uint64) string { return strconv.FormatUint(rv, 10) }

// setRV stores a resourceVersion in obj (our objects are never lists).
func (s *Storage) setRV(obj runtime.Object, rv uint64) error {
	return s.versioner.UpdateObject(obj, rv)
}

// copyInto sets *out to a deep copy of obj. Both are pointers to the same
// struct type (what upstream's stores do by decoding into out).
func copyInto(obj, out runtime.Object) error {
	if out == nil {
		return nil
	}
	dst, src := reflect.ValueOf(out), reflect.ValueOf(obj.DeepCopyObject())
	if dst.Type() != src.Type() || dst.Kind() != reflect.Pointer {
		return fmt.Errorf("memstorage: cannot store a %T into a %T", obj, out)
	}
	dst.Elem().Set(src.Elem())
	return nil
}

func (s *Storage) checkOpen() error {
	if s.closed {
		return storage.NewInternalError(fmt.Errorf("storage is shutting down"))
	}
	return nil
}

// Create stores obj at key unless the key exists. As the etcd3 store does,
// it refuses an object that already carries a resourceVersion.
func (s *Storage) Create(ctx context.Context, key string, obj, out runtime.Object, ttl uint64) error {
	key, err := storage.PrepareKey(s.cfg.ResourcePrefix, key, false)
	if err != nil {
		return err
	}
	if version, err := s.versioner.ObjectResourceVersion(obj); err != nil {
		return err
	} else if version != 0 {
		return storage.ErrResourceVersionSetOnCreate
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.checkOpen(); err != nil {
		return err
	}
	if _, ok := s.objects[key]; ok {
		return storage.NewKeyExistsError(key, 0)
	}
	stored := obj.DeepCopyObject()
	rv := s.revision.next()
	if err := s.setRV(stored, rv); err != nil {
		return err
	}
	s.objects[key] = stored
	s.recordLocked(&event{typ: watch.Added, key: key, object: stored, rv: rv})
	return copyInto(stored, out)
}

// Get reads one object. resourceVersion "" and "0" read the current state;
// N must not be in the future (upstream waits up to 3 s for its cache to
// reach N; we are the source of truth, so no wait can help).
func (s *Storage) Get(ctx context.Context, key string, opts storage.GetOptions, out runtime.Object) error {
	key, err := storage.PrepareKey(s.cfg.ResourcePrefix, key, false)
	if err != nil {
		return err
	}
	rv, err := s.versioner.ParseResourceVersion(opts.ResourceVersion)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if current := s.revision.current(); rv > current {
		return storage.NewTooLargeResourceVersionError(rv, current, 1)
	}
	obj, ok := s.objects[key]
	if !ok {
		if opts.IgnoreNotFound {
			return copyInto(s.cfg.NewFunc(), out)
		}
		return storage.NewKeyNotFoundError(key, 0)
	}
	return copyInto(obj, out)
}

// GetList fills listObj with the objects under key (or the one at key when
// not Recursive) that match opts.Predicate, sorted by key as etcd returns
// them, and the resourceVersion the list is consistent with.
//
//   - RV "" or "0", or NotOlderThan N: the current state (N must not be in
//     the future).
//   - Exact N: the state at N, rebuilt by undoing the history's events after
//     N, as etcd serves an old revision; older than the history it is 410
//     Expired, as etcd answers for a compacted revision. (Upstream's cacher
//     first tries a snapshot of its own, then delegates to etcd.)
func (s *Storage) GetList(ctx context.Context, key string, opts storage.ListOptions, listObj runtime.Object) error {
	key, err := storage.PrepareKey(s.cfg.ResourcePrefix, key, opts.Recursive)
	if err != nil {
		return err
	}
	// Upstream's check, with its words: a malformed RV is a 400 here.
	if _, _, err := storage.ValidateListOptions(s.cfg.ResourcePrefix, s.versioner, opts); err != nil {
		return err
	}
	// No paging: a limit is ignored and the whole list answered without a
	// continue token, which the API allows a server to do (the doc comment
	// of `Limit`, k8s.io/apimachinery@v0.37.0/pkg/apis/meta/v1/types.go:410-426).
	// So no client can hold a token of ours, and a well-formed one made
	// elsewhere is refused rather than answered with page one again.
	if opts.Predicate.Continue != "" {
		return apierrors.NewBadRequest("invalid continue token: this server does not page lists, so it issues no continue tokens")
	}
	rv, _ := s.versioner.ParseResourceVersion(opts.ResourceVersion)
	s.mu.Lock()
	defer s.mu.Unlock()
	current := s.revision.current()
	if rv > current {
		return storage.NewTooLargeResourceVersionError(rv, current, 1)
	}
	objects, listRV := s.objects, current
	if opts.ResourceVersionMatch == metav1.ResourceVersionMatchExact && rv < current {
		if objects, err = s.stateAtLocked(rv); err != nil {
			return err
		}
		listRV = rv
	}
	var keys []string
	for k := range objects {
		if k == key || (opts.Recursive && strings.HasPrefix(k, key)) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	items := make([]runtime.Object, 0, len(keys))
	for _, k := range keys {
		obj := objects[k]
		if ok, err := opts.Predicate.Matches(obj); err != nil {
			return err
		} else if ok {
			items = append(items, obj.DeepCopyObject())
		}
	}
	if err := meta.SetList(listObj, items); err != nil {
		return err
	}
	list, err := meta.ListAccessor(listObj)
	if err != nil {
		return err
	}
	list.SetResourceVersion(formatRV(listRV))
	return nil
}

// stateAtLocked rebuilds the objects as they were at rv by undoing, newest
// first, every event after rv. The history must reach back to rv.
func (s *Storage) stateAtLocked(rv uint64) (map[string]runtime.Object, error) {
	if rv < s.oldestLocked()-1 {
		// etcd3's answer for a compacted revision (etcd3/errors.go).
		return nil, apierrors.NewResourceExpired("The resourceVersion for the provided list is too old.")
	}
	state := make(map[string]runtime.Object, len(s.objects))
	for k, v := range s.objects {
		state[k] = v
	}
	for i := s.size - 1; i >= 0; i-- {
		ev := s.history[(s.start+i)%len(s.history)]
		if ev.rv <= rv {
			break
		}
		if ev.typ == watch.Added {
			delete(state, ev.key)
		} else {
			state[ev.key] = ev.prev
		}
	}
	return state, nil
}

// GuaranteedUpdate is the etcd3 store's optimistic loop: read the current
// object, let tryUpdate compute the new one without holding the lock (it may
// be slow, or decode a patch), and store the result only if nobody wrote the
// key in between; otherwise run tryUpdate again on the new current object.
// A result identical to the current object is not a write: no new RV, no event.
func (s *Storage) GuaranteedUpdate(ctx context.Context, key string, destination runtime.Object, ignoreNotFound bool,
	preconditions *storage.Preconditions, tryUpdate storage.UpdateFunc, cachedExistingObject runtime.Object) error {
	key, err := storage.PrepareKey(s.cfg.ResourcePrefix, key, false)
	if err != nil {
		return err
	}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		s.mu.Lock()
		current, exists := s.objects[key]
		s.mu.Unlock()
		if !exists {
			if !ignoreNotFound {
				return storage.NewKeyNotFoundError(key, 0)
			}
			current = s.cfg.NewFunc()
		}
		if err := preconditions.Check(key, current); err != nil {
			return err
		}
		currentRV, _ := s.versioner.ObjectResourceVersion(current)
		updated, _, err := tryUpdate(current.DeepCopyObject(), storage.ResponseMeta{ResourceVersion: currentRV})
		if err != nil {
			return err
		}

		s.mu.Lock()
		if now, ok := s.objects[key]; ok != exists || (ok && now != current) {
			s.mu.Unlock()
			continue // someone wrote the key meanwhile: try again
		}
		if err := s.checkOpen(); err != nil {
			s.mu.Unlock()
			return err
		}
		if exists && sameContent(s.versioner, current, updated) {
			s.mu.Unlock()
			return copyInto(current, destination)
		}
		stored := updated.DeepCopyObject()
		rv := s.revision.next()
		if err := s.setRV(stored, rv); err != nil {
			s.mu.Unlock()
			return err
		}
		s.objects[key] = stored
		if exists {
			s.recordLocked(&event{typ: watch.Modified, key: key, object: stored, prev: current, rv: rv})
		} else {
			s.recordLocked(&event{typ: watch.Added, key: key, object: stored, rv: rv})
		}
		s.mu.Unlock()
		return copyInto(stored, destination)
	}
}

// sameContent compares two objects as the etcd3 store does: their encodings
// with the resourceVersion cleared.
func sameContent(versioner storage.APIObjectVersioner, a, b runtime.Object) bool {
	a, b = a.DeepCopyObject(), b.DeepCopyObject()
	if versioner.PrepareObjectForStorage(a) != nil || versioner.PrepareObjectForStorage(b) != nil {
		return false
	}
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && bytes.Equal(ja, jb)
}

// Delete removes the object at key after checking preconditions and
// validateDeletion. out gets the last state with the deletion's RV, which is
// also what the DELETED event carries (as etcd's watch reports it).
func (s *Storage) Delete(ctx context.Context, key string, out runtime.Object, preconditions *storage.Preconditions,
	validateDeletion storage.ValidateObjectFunc, cachedExistingObject runtime.Object, opts storage.DeleteOptions) error {
	key, err := storage.PrepareKey(s.cfg.ResourcePrefix, key, false)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.checkOpen(); err != nil {
		return err
	}
	current, ok := s.objects[key]
	if !ok {
		return storage.NewKeyNotFoundError(key, 0)
	}
	if err := preconditions.Check(key, current); err != nil {
		return err
	}
	if validateDeletion != nil {
		if err := validateDeletion(ctx, current.DeepCopyObject()); err != nil {
			return err
		}
	}
	delete(s.objects, key)
	rv := s.revision.next()
	gone := current.DeepCopyObject()
	if err := s.setRV(gone, rv); err != nil {
		return err
	}
	s.recordLocked(&event{typ: watch.Deleted, key: key, object: gone, prev: current, rv: rv})
	return copyInto(gone, out)
}

// recordLocked appends ev to the history (dropping the oldest when full) and
// offers it to every watcher: cacher.dispatchEvents in one loop. A watcher
// whose buffer is full is terminated, not waited for: one slow client must
// not hold up writes or other watchers. Its client sees the stream end and
// re-watches from the last RV it got, which the history can usually replay.
// (Upstream first waits a shared time budget before giving up on a watcher:
// cacher.go, dispatchEvent and its timer.)
func (s *Storage) recordLocked(ev *event) {
	ev.cached = newCachingObject(ev.object)
	// The current object keeps its wrapper, so the initial events of every
	// watch that starts later share one encoding too.
	if ev.typ == watch.Deleted {
		delete(s.wrapped, ev.key)
	} else {
		s.wrapped[ev.key] = ev.cached
	}
	capacity := len(s.history)
	if s.size == capacity {
		s.start = (s.start + 1) % capacity
		s.size--
		s.dropped = true
	}
	s.history[(s.start+s.size)%capacity] = ev
	s.size++
	for w := range s.watchers {
		s.dispatchLocked(w, ev) // dispatch.go
	}
}

// oldestLocked is upstream's "oldest" in `GetIntervalLocked`
// (k8s.io/apiserver@v0.37.0/pkg/storage/cacher/watch_cache_history.go:217-238): the RV of
// the oldest event a watch can still be given. A watch from RV N needs every
// event after N, so N must be at least oldest-1.
func (s *Storage) oldestLocked() uint64 {
	if !s.dropped || s.size == 0 {
		return s.startRV + 1
	}
	return s.history[s.start].rv
}

// GetCurrentResourceVersion is the revision of the last write to any
// resource sharing our Revision (etcd: the store's current revision). Like
// the etcd3 store's, it fails when ctx is done.
func (s *Storage) GetCurrentResourceVersion(ctx context.Context) (uint64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	return s.revision.current(), nil
}

// Stats counts the objects; sizes are not estimated.
func (s *Storage) Stats(ctx context.Context) (storage.Stats, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return storage.Stats{ObjectCount: int64(len(s.objects))}, nil
}

// ReadinessCheck: an in-memory storage is ready when built.
func (s *Storage) ReadinessCheck() error { return nil }

// RequestWatchProgress is a no-op: our watchers are never behind the storage.
func (s *Storage) RequestWatchProgress(ctx context.Context) error { return nil }

// EnableResourceSizeEstimation is accepted and ignored.
func (s *Storage) EnableResourceSizeEstimation(storage.KeysFunc) error { return nil }

// CompactRevision is 0: nothing is ever compacted (the ring only forgets).
func (s *Storage) CompactRevision() int64 { return 0 }

// Close ends every watcher (their streams end) and refuses further writes.
func (s *Storage) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	for w := range s.watchers {
		s.forgetLocked(w)
	}
}
