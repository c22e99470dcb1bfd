package main

import (
	"context"
	"slices"
	"time"

	"github.com/listwatch-labs/listwatch-labs/labs/04-cacher/cacher"
	"github.com/listwatch-labs/listwatch-labs/labs/05-informer/informer"
)

// ViewState is everything the page shows, sent as one JSON object at most
// ten times a second.
type ViewState struct {
	At       time.Time     `json:"at"`
	Restarts int64         `json:"restarts"`
	Busy     bool          `json:"busy"`
	Etcd     EtcdState     `json:"etcd"`
	Cacher   *CacherView   `json:"cacher"` // nil while the API server restarts
	Streams  StreamsView   `json:"streams"`
	Informer InformerView  `json:"informer"`
	Watchers []WatcherView `json:"watchers"`
	Real     *RealView     `json:"real"`   // nil: no real cluster beside it
	Log      []LogEntry    `json:"log"`    // notes: actions, errors, endings
	Events   []LogEntry    `json:"events"` // the handler's calls
}

type EtcdState struct {
	Revision  int64  `json:"revision"`
	Compacted int64  `json:"compacted"`
	Error     string `json:"error,omitempty"`
}

// CacherView is lab 04's cacher.State, in the page's units.
type CacherView struct {
	Ready           bool                  `json:"ready"`
	ResourceVersion uint64                `json:"resourceVersion"`
	Objects         int                   `json:"objects"`
	Ring            cacher.RingState      `json:"ring"`
	BudgetLeftMs    float64               `json:"budgetLeftMs"`
	Dispatched      int64                 `json:"dispatched"`
	Blocked         int64                 `json:"blocked"`
	Terminated      int64                 `json:"terminated"`
	BookmarksSent   int64                 `json:"bookmarksSent"`
	Relists         int64                 `json:"relists"`
	Watchers        []cacher.WatcherState `json:"watchers"`
	Ended           []cacher.WatcherState `json:"ended"`
}

type StreamsView struct {
	Open   []StreamState `json:"open"`
	Closed []StreamState `json:"closed"`
}

type InformerView struct {
	Reflector informer.ReflectorStatus `json:"reflector"`
	QueueLen  int                      `json:"queueLen"`
	Objects   int                      `json:"objects"`
	StoreRV   string                   `json:"storeRV"`
	Synced    bool                     `json:"synced"`
	IndexKeys map[string]int           `json:"indexKeys"` // color -> objects
	Handler   HandlerView              `json:"handler"`
}

type HandlerView struct {
	Adds      int64   `json:"adds"`
	Updates   int64   `json:"updates"`
	Deletes   int64   `json:"deletes"`
	LastLagMs float64 `json:"lastLagMs"`
	P50LagMs  float64 `json:"p50LagMs"`
	P99LagMs  float64 `json:"p99LagMs"`
}

type WatcherView struct {
	ID       int    `json:"id"`
	Kind     string `json:"kind"`
	Options  string `json:"options"`
	Received int64  `json:"received"`
	Last     string `json:"last"`
	Ended    string `json:"ended"`
}

// view is the handler's counts and its lag's median and 99th percentile
// over the last 200 calls.
func (h *handlerStats) view() HandlerView {
	h.mu.Lock()
	v := HandlerView{Adds: h.adds, Updates: h.updates, Deletes: h.deletes, LastLagMs: ms(h.lastLag)}
	lags := slices.Clone(h.lags)
	h.mu.Unlock()
	if len(lags) > 0 {
		slices.Sort(lags)
		v.P50LagMs, v.P99LagMs = ms(lags[len(lags)/2]), ms(lags[(len(lags)*99)/100])
	}
	return v
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// snapshot reads every layer once.
func (s *Stack) snapshot(ctx context.Context) ViewState {
	v := ViewState{At: time.Now(), Restarts: s.restarts.Load(), Busy: s.busy.Load()}
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	var err error
	if v.Etcd.Revision, v.Etcd.Compacted, err = s.mini.EtcdRevisions(ctx); err != nil {
		v.Etcd.Error = err.Error()
	}
	if st, ok := s.mini.State("configmaps"); ok {
		m := st.Metrics
		v.Cacher = &CacherView{
			Ready: st.Ready, ResourceVersion: st.ResourceVersion, Objects: st.Objects, Ring: st.Ring,
			BudgetLeftMs: ms(st.BudgetLeft), Dispatched: m.EventsDispatched, Blocked: m.BlockedDispatches,
			Terminated: m.WatchersTerminated, BookmarksSent: m.BookmarksSent, Relists: m.Relists,
			Watchers: st.Watchers, Ended: st.Ended,
		}
	}
	v.Streams.Open, v.Streams.Closed = s.streams.snapshot()
	slices.SortFunc(v.Streams.Open, func(a, b StreamState) int { return a.ID - b.ID })

	is := s.inf.Status()
	v.Informer = InformerView{Reflector: is.Reflector, QueueLen: is.QueueLen, Objects: is.Objects, StoreRV: is.StoreResourceVersion, Synced: is.Synced, IndexKeys: map[string]int{}}
	idx := s.inf.GetIndexer()
	for _, c := range idx.ListIndexFuncValues("color") {
		keys, _ := idx.IndexKeys("color", c)
		v.Informer.IndexKeys[c] = len(keys)
	}
	v.Informer.Handler = s.handler.view()
	if s.real != nil {
		v.Real = s.real.view()
	}

	s.watchersMu.Lock()
	for _, w := range s.watchers {
		wv := WatcherView{ID: w.ID, Kind: w.Kind, Options: w.Options, Received: w.received.Load()}
		if l := w.last.Load(); l != nil {
			wv.Last = *l
		}
		if e := w.ended.Load(); e != nil {
			wv.Ended = *e
		}
		v.Watchers = append(v.Watchers, wv)
	}
	s.watchersMu.Unlock()
	v.Log, v.Events = s.log.recent(40)
	return v
}
