package informer

// Status: what the Reflector and the informer are doing now, for the
// course's live view (`scripts/labs view`, learn/view).
//
// Upstream twin: none. client-go's Reflector shows its state only in its
// logs and through `LastSyncResourceVersion`
// (k8s.io/client-go@v0.37.0/tools/cache/reflector.go:1097-1101), and its
// informer metrics are of the FIFO and store, not of the Reflector
// (`InformerMetricsProvider`, queue depth, processing latency and store RV:
// k8s.io/client-go@v0.37.0/tools/cache/informer_metrics.go:37-59, the file
// 1.36 called fifo_metrics.go); this is the
// course's addition so that a learner can watch a relist happen. It is
// written at the points where the Reflector changes what it does and read
// under a mutex; it changes no behaviour.

import (
	"sync"
	"time"
)

// What the Reflector is doing (ReflectorStatus.Phase).
const (
	PhaseStarting      = "starting"
	PhaseStreamingList = "streaming list (a watch with sendInitialEvents=true)"
	PhaseListing       = "listing (LIST)"
	PhaseWatching      = "watching"
	PhaseBackingOff    = "backing off"
	PhaseStopped       = "stopped"
)

// ReflectorStatus is a snapshot of a Reflector.
type ReflectorStatus struct {
	Phase      string
	PhaseSince time.Time
	// LastSyncResourceVersion: where the next watch starts.
	LastSyncResourceVersion string
	// Lists counts full lists put in the store (streaming or LIST): 1
	// after the first, one more for every relist.
	Lists int64
	// Watches counts watches opened after a list (each watch timeout or
	// clean end opens another from the last RV, without a list).
	Watches int64
	// Errors counts the errors the Reflector reported (what
	// WatchErrorHandler receives); LastError is the latest.
	Errors      int64
	LastError   string
	LastErrorAt time.Time
}

type reflectorStatus struct {
	mu sync.Mutex
	s  ReflectorStatus
}

func (r *Reflector) setPhase(phase string) {
	r.status.mu.Lock()
	defer r.status.mu.Unlock()
	if r.status.s.Phase != phase {
		r.status.s.Phase, r.status.s.PhaseSince = phase, r.clock.Now()
	}
}

func (r *Reflector) countList() {
	r.status.mu.Lock()
	defer r.status.mu.Unlock()
	r.status.s.Lists++
}

func (r *Reflector) countWatch() {
	r.status.mu.Lock()
	defer r.status.mu.Unlock()
	r.status.s.Watches++
}

func (r *Reflector) recordError(err error) {
	r.status.mu.Lock()
	defer r.status.mu.Unlock()
	r.status.s.Errors++
	r.status.s.LastError, r.status.s.LastErrorAt = err.Error(), r.clock.Now()
}

// Status returns what the Reflector is doing now.
func (r *Reflector) Status() ReflectorStatus {
	r.status.mu.Lock()
	s := r.status.s
	r.status.mu.Unlock()
	if s.Phase == "" {
		s.Phase = PhaseStarting
	}
	s.LastSyncResourceVersion = r.LastSyncResourceVersion()
	return s
}

// InformerStatus is a snapshot of a SharedIndexInformer's parts.
type InformerStatus struct {
	Reflector ReflectorStatus
	// QueueLen is how many items wait in the FIFO (RealFIFO: deltas;
	// DeltaFIFO: keys).
	QueueLen int
	// Objects is how many objects the Indexer holds, and
	// StoreResourceVersion the RV the cache has processed up to.
	Objects              int
	StoreResourceVersion string
	Synced               bool
}

// Status returns what the informer's parts are doing now.
func (s *SharedIndexInformer) Status() InformerStatus {
	st := InformerStatus{
		Objects:              len(s.indexer.ListKeys()),
		StoreResourceVersion: s.indexer.LastStoreSyncResourceVersion(),
		Synced:               s.HasSynced(),
	}
	s.startedLock.Lock()
	r, q := s.reflector, s.queue
	s.startedLock.Unlock()
	if r != nil {
		st.Reflector = r.Status()
	} else {
		st.Reflector.Phase = PhaseStarting
	}
	if l, ok := q.(interface{ Len() int }); ok {
		st.QueueLen = l.Len()
	}
	return st
}
