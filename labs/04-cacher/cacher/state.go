package cacher

// State: a snapshot of everything inside the Cacher, for the course's live
// view (`scripts/labs view`, learn/view).
//
// Upstream twin: none. kube-apiserver shows its Cacher only through
// metrics (`WatchCacheCapacity`, `EventsCounter`,
// `TerminatedWatchersCounter`, ...:
// k8s.io/apiserver@v0.37.0/pkg/storage/cacher/metrics/metrics.go:127-240)
// and logs; it has no call that lists its watchers or its ring. This file is
// the course's addition, so that a learner can see the state the lab
// describes: the ring's reach, each watcher's buffer, why a watcher ended.
// It reads under the same locks the Cacher uses and changes nothing.

import (
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/watch"
)

// Why a watcher ended (WatcherState.Ended).
const (
	// EndTooSlow: its input was still full when the dispatcher's time
	// budget ran out (dispatch.go): the lesson of the slow watcher.
	EndTooSlow = "too slow: its buffer stayed full past the dispatcher's time budget"
	// EndClientStopped: its consumer called Stop (the WatchServer does
	// when the client goes away or the request times out).
	EndClientStopped = "stopped by its consumer (client gone or request timed out)"
	// EndRequestEnded: the request's context ended first.
	EndRequestEnded = "the request's context ended"
	// EndCacherRelisted: the Cacher relisted (after a 410 from etcd, say)
	// and ended every watcher, which must start again.
	EndCacherRelisted = "the Cacher relisted: every watcher ends and its client watches again"
	// EndCacherStopped: the Cacher was stopped (the API server stops).
	EndCacherStopped = "the Cacher stopped"
	// EndIntervalFailed: its initial events could not be read (a
	// snapshot's item was not an object): upstream ends such a watcher too.
	EndIntervalFailed = "its initial events could not be read"
)

// endedKept is how many ended watchers State remembers.
const endedKept = 32

// State is a snapshot of the Cacher.
type State struct {
	Ready           bool
	ResourceVersion uint64 // the RV the cache is current to
	Objects         int    // objects in the store
	Ring            RingState
	// BudgetLeft is the dispatcher's time budget available now (it refills
	// at 50 ms a second up to 100 ms: time_budget.go).
	BudgetLeft time.Duration
	Metrics    Metrics
	// Watchers are the watchers registered now, by ID; Ended the last
	// ones that ended (at most 32), oldest first.
	Watchers []WatcherState
	Ended    []WatcherState
}

// RingState is the watch cache's ring of recent events. A watch from an RV
// at or after the listed RV is served while no event was dropped; once the
// ring dropped some, from OldestRV-1 on. An older one gets 410
// (getAllEventsSinceLocked in watch_cache.go).
type RingState struct {
	Capacity int
	Len      int
	OldestRV uint64 // 0 when empty
	NewestRV uint64
	Resizes  int64
}

// WatcherState is one watcher: what it asked for, and how it is doing.
type WatcherState struct {
	ID                int
	Key               string
	Recursive         bool
	LabelSelector     string // "" for none
	FieldSelector     string
	RequestedRV       string // as the client sent it
	SendInitialEvents bool
	AllowBookmarks    bool
	StartRV           uint64 // live events newer than this
	Started           time.Time
	// InputUsed/InputCapacity: the dispatcher's side of its buffer (full
	// means the dispatcher waits on it, spending time budget);
	// ResultUsed/ResultCapacity: the side its consumer reads.
	InputUsed, InputCapacity   int
	ResultUsed, ResultCapacity int
	Sent, Bookmarks            int64  // events and bookmarks delivered to result
	LastRV                     uint64 // of the last one
	Ended                      string // why it ended ("" while it runs)
	EndedAt                    time.Time
}

// State returns a snapshot of the Cacher.
func (c *Cacher) State() State {
	st := State{Ready: c.Ready(), Metrics: c.Metrics(), BudgetLeft: c.dispatchTimeoutBudget.available()}
	w := c.watchCache
	w.RLock()
	st.ResourceVersion = w.resourceVersion
	st.Objects = w.storage.Len()
	h := w.history
	st.Ring = RingState{Capacity: h.capacity, Len: h.endIndex - h.startIndex, Resizes: h.resizes}
	if st.Ring.Len > 0 {
		st.Ring.OldestRV = h.cache[h.startIndex%h.capacity].ResourceVersion
		st.Ring.NewestRV = h.cache[(h.endIndex-1)%h.capacity].ResourceVersion
	}
	w.RUnlock()

	c.mu.Lock()
	defer c.mu.Unlock()
	add := func(cw *cacheWatcher) { st.Watchers = append(st.Watchers, cw.state()) }
	for _, cw := range c.watchers.all {
		add(cw)
	}
	for _, ws := range c.watchers.byValue {
		for _, cw := range ws {
			add(cw)
		}
	}
	slices.SortFunc(st.Watchers, func(a, b WatcherState) int { return a.ID - b.ID })
	st.Ended = append([]WatcherState(nil), c.ended...)
	return st
}

// recordEndedLocked keeps the state of a watcher that is leaving. c.mu held.
func (c *Cacher) recordEndedLocked(cw *cacheWatcher) {
	s := cw.state()
	s.Ended, s.EndedAt = EndClientStopped, c.clock.Now()
	if r := cw.endReason.Load(); r != nil {
		s.Ended = *r
	}
	if len(c.ended) == endedKept {
		c.ended = append(c.ended[:0], c.ended[1:]...)
	}
	c.ended = append(c.ended, s)
}

func (cw *cacheWatcher) state() WatcherState {
	s := cw.info
	s.InputUsed, s.ResultUsed = len(cw.input), len(cw.result)
	s.Sent, s.Bookmarks, s.LastRV = cw.sent.Load(), cw.bookmarks.Load(), cw.lastRV.Load()
	return s
}

// delivered counts an event the watcher's consumer now has.
func (c *cacheWatcher) delivered(ev *watchCacheEvent) {
	c.sent.Add(1)
	if ev.Type == watch.Bookmark {
		c.bookmarks.Add(1)
	}
	c.lastRV.Store(ev.ResourceVersion)
}

func labelString(s labels.Selector) string {
	if s == nil || s.Empty() {
		return ""
	}
	return s.String()
}

func fieldString(s fields.Selector) string {
	if s == nil || s.Empty() {
		return ""
	}
	return s.String()
}

func ptr[T any](v T) *T { return &v }
