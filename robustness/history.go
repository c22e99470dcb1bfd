// Package robustness checks what a watch promises against a recorded
// history: every write with its outcome and times, every event each watcher
// received, every call of each informer's handler, the informers' final
// caches and the state a final LIST read. (Issue #19 of the course:
// check.go and linearizable.go check; workload.go records a history from
// the course's stack, course.go, or the real kube-apiserver, real.go,
// while it injects their faults and the etcd faults of cluster.go.)
//
// Modelled on etcd's robustness suite
// (go.etcd.io/etcd/tests/v3@v3.7.0/robustness, at the course's etcd
// version but not among its dependencies), which records client traffic
// while it injects failures and validates the history against a model of
// etcd with porcupine (`NonDeterministicModel`,
// go.etcd.io/etcd/tests/v3@v3.7.0/robustness/validate/operations.go:49)
// and a set of watch validators (`validateWatch`,
// go.etcd.io/etcd/tests/v3@v3.7.0/robustness/validate/watch.go:42-94).
// This package is written for the course, one level up, and its kinds are
// its own: its "atomic", the right event for each write, is not etcd's
// "atomic", that a revision's events are never split across watch
// responses (https://etcd.io/docs/v3.6/learning/api_guarantees/#watch-apis;
// checked by `validateAtomic`,
// go.etcd.io/etcd/tests/v3@v3.7.0/robustness/validate/watch.go:180-194). The
// objects are Kubernetes objects keyed namespace/name, the revisions are
// resourceVersions, and the guarantees are those a Kubernetes watch and an
// informer give (410 when history is gone, bookmarks, label selectors,
// DeletedFinalStateUnknown).
// Left out: reads other than the final LIST, and etcd's own watch (the
// history is taken at the Kubernetes API).
package robustness

import (
	"fmt"
	"time"
)

// Outcome is what the client learned of a write.
type Outcome string

const (
	// OK: the server applied it and answered with its resourceVersion.
	OK Outcome = "ok"
	// Failed: the server refused it (AlreadyExists, NotFound): it was
	// not applied.
	Failed Outcome = "failed"
	// Applied: the server applied it, and its answer gave no
	// resourceVersion: a DELETE through client-go's typed client, whose
	// `Delete` returns only an error, no object
	// (k8s.io/client-go@v0.37.0/gentype/type.go:250-258).
	Applied Outcome = "applied"
	// Unknown: no answer (a timeout, a cut connection): it may or may not
	// have been applied. Events or the final LIST can tell.
	Unknown Outcome = "unknown"
)

// Op is a kind of write.
type Op string

const (
	Create Op = "create"
	Update Op = "update"
	Delete Op = "delete"
	// Mark is not sent by a client: it is the first of the two writes a
	// Pod's delete makes on kube-apiserver (the deletionTimestamp set,
	// the content unchanged), which the checker finds (placeMarks).
	Mark Op = "mark-deleting"
)

// Write is one write request and what came of it.
type Write struct {
	ID     int
	Client int
	Op     Op
	Key    string // namespace/name
	// Resource is "pods" or "configmaps" ("" means configmaps). A key
	// names one object of one resource: the workload's ConfigMaps are
	// key-NN and its Pods pod-NN.
	Resource string
	// Node is a Pod's spec.nodeName: on a create, the node it names; on
	// an update, the node the writer believes the Pod has (spec.nodeName
	// cannot change once set, so the model takes it from the Pod's
	// create when it knows that).
	Node string
	// Value and Labels are the object's after a create or update. Each
	// create and update carries a value no other write carries, so an
	// event tells which write it shows.
	Value   string
	Labels  map[string]string
	Start   time.Duration // since the run began
	End     time.Duration
	Outcome Outcome
	RV      uint64 // the answer's resourceVersion, when OK
	Err     string
}

// WatchSpec is a watch request.
type WatchSpec struct {
	ID int
	// StartRV is the request's resourceVersion. A number: the changes
	// after it, or 410. "" or "0" without sendInitialEvents: with the
	// `WatchList` gate on, the default since 1.34
	// (k8s.io/apiserver@v0.37.0/pkg/features/kube_features.go:487-493),
	// the apiserver turns such a watch into sendInitialEvents=true with
	// NotOlderThan (`SetListOptionsDefaults`,
	// k8s.io/apimachinery@v0.37.0/pkg/apis/meta/internalversion/defaults.go:25-37;
	// the handler calls `SetListOptionsDefaults` on every list and watch,
	// k8s.io/apiserver@v0.37.0/pkg/endpoints/handlers/get.go:216), and lab
	// 03's server does the same. From "" the Cacher first waits until its
	// cache has etcd's current revision (`GetCurrentResourceVersion`,
	// k8s.io/apiserver@v0.37.0/pkg/storage/cacher/cacher.go:1321), so the
	// state is the newest; from "0" it takes the cache as it is, which need
	// not be the newest. Either way that state comes first as ADDED
	// events, then the changes after it; a watch that allows bookmarks
	// gets the initial-events-end bookmark between the two
	// (`setInitialEventsEndBookmarkIfRequested`,
	// k8s.io/apiserver@v0.37.0/pkg/storage/cacher/cacher.go:1359-1375).
	StartRV  string
	Resource string // "pods" or "configmaps" ("": configmaps)
	Selector string // a label selector, "" for everything
	// FieldSelector is "", metadata.name=NAME, or for Pods
	// spec.nodeName=NODE: what each kubelet watches.
	FieldSelector string
	// Slow: the watcher stalls a little after each event, a consumer
	// that cannot keep up. The server ends such a watch: when its buffer
	// is full, the Cacher waits for it only as long as its
	// `dispatchTimeoutBudget` allows, then closes it
	// (k8s.io/apiserver@v0.37.0/pkg/storage/cacher/cacher.go:1033-1051).
	Slow              bool
	SendInitialEvents bool
	Bookmarks         bool
	// Start is when the watch was sent (since the run began; 0: not
	// recorded). A watch from "" must show a state at least as new as
	// every write answered before it.
	Start time.Duration
}

// EventType is a watch event's type, as on the wire.
type EventType string

const (
	Added    EventType = "ADDED"
	Modified EventType = "MODIFIED"
	Deleted  EventType = "DELETED"
	Bookmark EventType = "BOOKMARK"
	Error    EventType = "ERROR"
)

// Event is one event a watcher received, in the order received.
type Event struct {
	Watcher int
	At      time.Duration
	Type    EventType
	Key     string
	RV      uint64
	Value   string
	Labels  map[string]string
	// InitialEventsEnd marks the bookmark that ends a sendInitialEvents
	// watch's initial events (the k8s.io/initial-events-end annotation).
	InitialEventsEnd bool
	// Code is an ERROR event's HTTP status (410 for Expired).
	Code int
}

// WatchEnd is how a watcher's stream ended.
type WatchEnd struct {
	Watcher int
	At      time.Duration
	// Err is "" when the stream ended cleanly (its timeout, or the client
	// stopped it).
	Err string
}

// HandlerKind is an informer handler's method.
type HandlerKind string

const (
	OnAdd    HandlerKind = "add"
	OnUpdate HandlerKind = "update"
	OnDelete HandlerKind = "delete"
)

// HandlerCall is one call of an informer's handler, with the object it was
// given (for OnUpdate the new one).
type HandlerCall struct {
	Informer int
	At       time.Duration
	Kind     HandlerKind
	Key      string
	RV       uint64
	Value    string
	// Tombstone: OnDelete was given a DeletedFinalStateUnknown, the
	// object's last state the informer knew.
	Tombstone bool
}

// InformerSpec is an informer and what it selects.
type InformerSpec struct {
	ID            int
	Name          string // "lab 05", "client-go"
	Resource      string // "pods" or "configmaps" ("": configmaps)
	Selector      string
	FieldSelector string // as WatchSpec's
}

// Object is one object of a cache or a LIST.
type Object struct {
	RV    uint64
	Value string
}

// Fault is one fault injected, for the report.
type Fault struct {
	At     time.Duration
	Kind   string
	Detail string
}

// History is everything a run recorded.
type History struct {
	Seed      int64
	Writes    []Write
	Watches   []WatchSpec
	Events    []Event
	Ends      []WatchEnd
	Informers []InformerSpec
	Calls     []HandlerCall
	// Finals is each informer's cache at the end, by informer ID.
	Finals map[int]map[string]Object
	// FinalList is what LISTs of each resource read after the last
	// write, and FinalListRV the lower of their RVs.
	FinalList   map[string]Object
	FinalListRV uint64
	FinalListAt time.Duration
	Faults      []Fault
}

// resourceName is "configmaps" for "", else r.
func resourceName(r string) string {
	if r == "" {
		return "configmaps"
	}
	return r
}

func (w Write) String() string {
	s := fmt.Sprintf("write %d (client %d) %s %s", w.ID, w.Client, w.Op, w.Key)
	if w.Op != Delete {
		s += fmt.Sprintf(" value=%s labels=%v", w.Value, w.Labels)
	}
	if w.Op == Create && w.Node != "" {
		s += " node=" + w.Node
	}
	s += fmt.Sprintf(" [%v, %v] -> %s", w.Start, w.End, w.Outcome)
	if w.Outcome == OK {
		s += fmt.Sprintf(" rv=%d", w.RV)
	}
	if w.Err != "" {
		s += " (" + w.Err + ")"
	}
	return s
}

func (e Event) String() string {
	s := fmt.Sprintf("watcher %d at %v: %s", e.Watcher, e.At, e.Type)
	switch e.Type {
	case Bookmark:
		s += fmt.Sprintf(" rv=%d", e.RV)
		if e.InitialEventsEnd {
			s += " (initial-events-end)"
		}
	case Error:
		s += fmt.Sprintf(" %d", e.Code)
	default:
		s += fmt.Sprintf(" %s rv=%d value=%s", e.Key, e.RV, e.Value)
	}
	return s
}

func (c HandlerCall) String() string {
	s := fmt.Sprintf("informer %d at %v: On%s %s rv=%d value=%s", c.Informer, c.At, map[HandlerKind]string{OnAdd: "Add", OnUpdate: "Update", OnDelete: "Delete"}[c.Kind], c.Key, c.RV, c.Value)
	if c.Tombstone {
		s += " (DeletedFinalStateUnknown)"
	}
	return s
}
