package robustness

import (
	"slices"
	"strings"
	"testing"
	"time"
)

var (
	blue  = map[string]string{"color": "blue"}
	green = map[string]string{"color": "green"}
)

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

// valid is a small history that keeps every promise: two objects, a label
// change each way, a delete and a re-create under the same name, a create
// refused, four watchers (from RV 1, with a selector, from "" and with
// sendInitialEvents) and one informer.
func valid() *History {
	h := &History{
		Writes: []Write{
			{ID: 1, Client: 0, Op: Create, Key: "ns/a", Value: "a1", Labels: blue, Start: ms(0), End: ms(1), Outcome: OK, RV: 2},
			{ID: 2, Client: 1, Op: Create, Key: "ns/b", Value: "b1", Labels: green, Start: ms(2), End: ms(3), Outcome: OK, RV: 3},
			{ID: 3, Client: 0, Op: Update, Key: "ns/a", Value: "a2", Labels: green, Start: ms(4), End: ms(5), Outcome: OK, RV: 4},
			{ID: 4, Client: 1, Op: Update, Key: "ns/b", Value: "b2", Labels: blue, Start: ms(6), End: ms(7), Outcome: OK, RV: 5},
			{ID: 5, Client: 0, Op: Delete, Key: "ns/a", Start: ms(8), End: ms(9), Outcome: OK, RV: 6},
			{ID: 6, Client: 0, Op: Create, Key: "ns/a", Value: "a3", Labels: blue, Start: ms(10), End: ms(11), Outcome: OK, RV: 7},
			{ID: 7, Client: 1, Op: Create, Key: "ns/b", Value: "b3", Labels: blue, Start: ms(12), End: ms(13), Outcome: Failed, Err: "AlreadyExists"},
		},
		Watches: []WatchSpec{
			{ID: 1, StartRV: "1", Bookmarks: true},
			{ID: 2, StartRV: "1", Selector: "color=blue"},
			{ID: 3, StartRV: "", Start: ms(3) + time.Microsecond}, // after write 2 (RV 3) was answered
			{ID: 5, StartRV: "0", Bookmarks: true},
			{ID: 4, StartRV: "", SendInitialEvents: true, Bookmarks: true},
		},
		Events: []Event{
			{Watcher: 1, Type: Added, Key: "ns/a", RV: 2, Value: "a1"},
			{Watcher: 1, Type: Added, Key: "ns/b", RV: 3, Value: "b1"},
			{Watcher: 1, Type: Modified, Key: "ns/a", RV: 4, Value: "a2"},
			{Watcher: 1, Type: Modified, Key: "ns/b", RV: 5, Value: "b2"},
			{Watcher: 1, Type: Deleted, Key: "ns/a", RV: 6, Value: "a2"},
			{Watcher: 1, Type: Added, Key: "ns/a", RV: 7, Value: "a3"},
			{Watcher: 1, Type: Bookmark, RV: 7},

			{Watcher: 2, Type: Added, Key: "ns/a", RV: 2, Value: "a1"},
			{Watcher: 2, Type: Deleted, Key: "ns/a", RV: 4, Value: "a1"}, // left the selector: the old object at the new RV
			{Watcher: 2, Type: Added, Key: "ns/b", RV: 5, Value: "b2"},   // entered it
			{Watcher: 2, Type: Added, Key: "ns/a", RV: 7, Value: "a3"},

			// From "": the state at RV 3 as ADDED events, then what follows.
			{Watcher: 3, Type: Added, Key: "ns/a", RV: 2, Value: "a1"},
			{Watcher: 3, Type: Added, Key: "ns/b", RV: 3, Value: "b1"},
			{Watcher: 3, Type: Modified, Key: "ns/a", RV: 4, Value: "a2"},
			{Watcher: 3, Type: Modified, Key: "ns/b", RV: 5, Value: "b2"},

			// From "0" with bookmarks, served as sendInitialEvents: the
			// state at RV 4, its end marked, then what follows.
			{Watcher: 5, Type: Added, Key: "ns/a", RV: 4, Value: "a2"},
			{Watcher: 5, Type: Added, Key: "ns/b", RV: 3, Value: "b1"},
			{Watcher: 5, Type: Bookmark, RV: 4, InitialEventsEnd: true},
			{Watcher: 5, Type: Modified, Key: "ns/b", RV: 5, Value: "b2"},

			// sendInitialEvents: the state at RV 5, its end marked.
			{Watcher: 4, Type: Added, Key: "ns/a", RV: 4, Value: "a2"},
			{Watcher: 4, Type: Added, Key: "ns/b", RV: 5, Value: "b2"},
			{Watcher: 4, Type: Bookmark, RV: 5, InitialEventsEnd: true},
			{Watcher: 4, Type: Deleted, Key: "ns/a", RV: 6, Value: "a2"},
			{Watcher: 4, Type: Added, Key: "ns/a", RV: 7, Value: "a3"},
			{Watcher: 4, Type: Error, Code: 410},
		},
		Informers: []InformerSpec{{ID: 1, Name: "lab 05"}},
		Calls: []HandlerCall{
			{Informer: 1, Kind: OnAdd, Key: "ns/a", RV: 2, Value: "a1"},
			{Informer: 1, Kind: OnAdd, Key: "ns/b", RV: 3, Value: "b1"},
			{Informer: 1, Kind: OnUpdate, Key: "ns/a", RV: 4, Value: "a2"},
			{Informer: 1, Kind: OnUpdate, Key: "ns/b", RV: 5, Value: "b2"},
			{Informer: 1, Kind: OnDelete, Key: "ns/a", RV: 4, Value: "a2", Tombstone: true},
			{Informer: 1, Kind: OnAdd, Key: "ns/a", RV: 7, Value: "a3"},
		},
		Finals:      map[int]map[string]Object{1: {"ns/a": {7, "a3"}, "ns/b": {5, "b2"}}},
		FinalList:   map[string]Object{"ns/a": {7, "a3"}, "ns/b": {5, "b2"}},
		FinalListRV: 7,
		FinalListAt: ms(20),
	}
	// Received after the last write was sent (an event cannot come before
	// its write).
	for i := range h.Events {
		h.Events[i].At = ms(14)
	}
	return h
}

func kinds(r Report) []string {
	var ks []string
	for _, v := range r.Violations {
		ks = append(ks, v.Kind)
	}
	return ks
}

// TestValidHistoryPasses: a history that keeps every promise yields no
// violation, and the checker counts what it looked at.
func TestValidHistoryPasses(t *testing.T) {
	r := Check(valid())
	for _, v := range r.Violations {
		t.Errorf("%s", v)
	}
	if r.Writes != 7 || r.Events != 25 || r.Calls != 6 {
		t.Errorf("counted %d writes, %d events, %d calls; want 7, 25, 6", r.Writes, r.Events, r.Calls)
	}
}

// TestUnknownWriteResolvedByItsEvent: a write whose answer was lost, or a
// delete answered without an RV, seen applied in the events, takes its
// place at the event's RV; a lost one never seen may have been applied or
// not, and breaks nothing.
func TestUnknownWriteResolvedByItsEvent(t *testing.T) {
	h := valid()
	h.Writes[3].Outcome, h.Writes[3].RV, h.Writes[3].End = Unknown, 0, ms(1000)
	h.Writes[4].Outcome, h.Writes[4].RV = Applied, 0 // a delete answered without an RV
	h.Writes = append(h.Writes, Write{ID: 8, Client: 2, Op: Update, Key: "ns/c", Value: "c1", Labels: blue, Start: ms(14), End: ms(15), Outcome: Unknown})
	r := Check(h)
	for _, v := range r.Violations {
		t.Errorf("%s", v)
	}
	if r.Resolved != 2 {
		t.Errorf("placed %d writes answered without an RV, want 2 (writes 4 and 5, by their events)", r.Resolved)
	}
}

// TestPlantedViolationsAreReported: each kind of broken promise, planted
// in the valid history, is reported under its kind, with an excerpt.
func TestPlantedViolationsAreReported(t *testing.T) {
	eventIndex := func(h *History, watcher int, typ EventType, key string, rv uint64) int {
		return slices.IndexFunc(h.Events, func(e Event) bool {
			return e.Watcher == watcher && e.Type == typ && e.Key == key && e.RV == rv
		})
	}
	for _, tc := range []struct {
		name  string
		plant func(h *History)
		want  string
	}{
		{"a dropped event", func(h *History) {
			i := eventIndex(h, 1, Modified, "ns/a", 4)
			h.Events = slices.Delete(h.Events, i, i+1)
		}, "reliable"},
		{"a duplicated event", func(h *History) {
			i := eventIndex(h, 1, Added, "ns/b", 3)
			h.Events = slices.Insert(h.Events, i+1, h.Events[i])
		}, "unique"},
		{"two events swapped", func(h *History) {
			i := eventIndex(h, 1, Modified, "ns/a", 4)
			h.Events[i], h.Events[i+1] = h.Events[i+1], h.Events[i]
		}, "ordered"},
		{"a bookmark ahead of an event", func(h *History) {
			i := eventIndex(h, 1, Added, "ns/b", 3)
			h.Events = slices.Insert(h.Events, i+1, Event{Watcher: 1, Type: Bookmark, RV: 5})
		}, "bookmarkable"},
		{"a bookmark going back", func(h *History) {
			i := eventIndex(h, 1, Modified, "ns/b", 5)
			h.Events = slices.Insert(h.Events, i+1, Event{Watcher: 1, Type: Bookmark, RV: 3})
		}, "bookmarkable"},
		{"a selector change delivered as MODIFIED", func(h *History) {
			h.Events[eventIndex(h, 2, Deleted, "ns/a", 4)].Type = Modified
		}, "atomic"},
		{"an event no write made", func(h *History) {
			h.Events = slices.Insert(h.Events, eventIndex(h, 1, Bookmark, "", 7), Event{Watcher: 1, Type: Modified, Key: "ns/b", RV: 9, Value: "b9"})
		}, "atomic"},
		{"an event with the wrong content", func(h *History) {
			h.Events[eventIndex(h, 1, Modified, "ns/b", 5)].Value = "b1"
		}, "atomic"},
		{"events after an ERROR", func(h *History) {
			h.Events = append(h.Events, Event{Watcher: 4, Type: Bookmark, RV: 7})
		}, "ordered"},
		{"a watch from \"\" showing a state older than a write answered before it", func(h *History) {
			// Watcher 3 shows the state at RV 3; write 3 (RV 4) was answered at 5 ms.
			h.Watches[2].Start = ms(6)
		}, "initial-state"},
		{"a watch from \"0\" whose initial-events-end bookmark names the wrong state", func(h *History) {
			// Its initial events are the state at RV 3; the bookmark says 4.
			h.Watches = append(h.Watches, WatchSpec{ID: 6, StartRV: "0", Bookmarks: true})
			h.Events = append(h.Events,
				Event{Watcher: 6, Type: Added, Key: "ns/a", RV: 2, Value: "a1"},
				Event{Watcher: 6, Type: Added, Key: "ns/b", RV: 3, Value: "b1"},
				Event{Watcher: 6, Type: Bookmark, RV: 4, InitialEventsEnd: true})
		}, "initial-state"},
		{"initial events missing an object", func(h *History) {
			i := eventIndex(h, 4, Added, "ns/b", 5)
			h.Events = slices.Delete(h.Events, i, i+1)
		}, "initial-state"},
		{"a stale informer", func(h *History) {
			h.Finals[1]["ns/b"] = Object{3, "b1"}
		}, "informer-final"},
		{"an informer holding a deleted object", func(h *History) {
			h.Finals[1]["ns/gone"] = Object{2, "x"}
		}, "informer-final"},
		{"a delete that never reached the handler", func(h *History) {
			h.Calls = slices.DeleteFunc(h.Calls, func(c HandlerCall) bool { return c.Kind == OnDelete })
		}, "informer-delete"},
		{"a delete missed at the end", func(h *History) {
			h.Calls = slices.DeleteFunc(h.Calls, func(c HandlerCall) bool { return c.Kind == OnDelete || c.RV == 7 })
		}, "informer-delete"},
		{"RVs against real time", func(h *History) {
			// write 2 (RV 3) starts after write 3 (RV 4) has answered.
			h.Writes[1].Start, h.Writes[1].End = ms(20), ms(21)
		}, "linearizable"},
		{"two writes at one RV", func(h *History) {
			h.Writes[4].RV = 5
		}, "linearizable"},
		{"AlreadyExists for a key that is absent", func(h *History) {
			h.Writes = append(h.Writes, Write{ID: 9, Op: Create, Key: "ns/c", Value: "c1", Start: ms(14), End: ms(15), Outcome: Failed, Err: "AlreadyExists"})
		}, "linearizable"},
		{"a final LIST missing an object", func(h *History) {
			delete(h.FinalList, "ns/b")
		}, "linearizable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := valid()
			tc.plant(h)
			r := Check(h)
			if !slices.Contains(kinds(r), tc.want) {
				t.Fatalf("violations %v, want one of kind %q", kinds(r), tc.want)
			}
			for _, v := range r.Violations {
				if v.Kind == tc.want && len(v.Excerpt) == 0 && !strings.Contains(v.Text, "porcupine found no answer") {
					t.Errorf("%s has no excerpt of the history", v)
				}
				t.Logf("%s", v)
			}
		})
	}
}

// A delete with no answer that was not applied, then one that was, before
// the key's next write: the one DELETED event is the confirmed delete's.
// Placing it on the first delete sent instead would make the confirmed
// one a delete of nothing, and the history unlinearizable.
func TestUnknownDeleteBeforeAnAppliedOne(t *testing.T) {
	h := valid()
	h.Writes[4].Outcome, h.Writes[4].RV = Applied, 0 // its DELETED event, RV 6, places it
	h.Writes = append(h.Writes, Write{ID: 9, Client: 0, Op: Delete, Key: "ns/a", Start: ms(5) + time.Microsecond, End: ms(7), Outcome: Unknown, Err: "EOF"})
	r := Check(h)
	for _, v := range r.Violations {
		t.Errorf("%s", v)
	}
}

// A delete with no answer that no event shows, applied all the same: the
// key's next write, a create that succeeded, proves it. A watch from "0"
// that shows the state between the two must not be held to the object.
func TestUnknownDeleteShownByTheNextCreate(t *testing.T) {
	h := valid()
	h.Writes = append(h.Writes,
		Write{ID: 8, Client: 2, Op: Create, Key: "ns/c", Value: "c1", Labels: blue, Start: ms(14), End: ms(15), Outcome: OK, RV: 8},
		Write{ID: 9, Client: 2, Op: Delete, Key: "ns/c", Start: ms(15), End: ms(16), Outcome: Unknown, Err: "EOF"}, // applied at RV 9
		Write{ID: 10, Client: 1, Op: Update, Key: "ns/b", Value: "b4", Labels: blue, Start: ms(16), End: ms(17), Outcome: OK, RV: 10},
		Write{ID: 11, Client: 2, Op: Create, Key: "ns/c", Value: "c2", Labels: blue, Start: ms(17), End: ms(18), Outcome: OK, RV: 11},
	)
	h.Watches = append(h.Watches, WatchSpec{ID: 6, StartRV: "0"})
	h.Events = append(h.Events,
		// The state at RV 10: no ns/c.
		Event{Watcher: 6, At: ms(17), Type: Added, Key: "ns/a", RV: 7, Value: "a3"},
		Event{Watcher: 6, At: ms(17), Type: Added, Key: "ns/b", RV: 10, Value: "b4"},
	)
	h.Calls = append(h.Calls,
		HandlerCall{Informer: 1, At: ms(15), Kind: OnAdd, Key: "ns/c", RV: 8, Value: "c1"},
		HandlerCall{Informer: 1, At: ms(17), Kind: OnUpdate, Key: "ns/b", RV: 10, Value: "b4"},
		HandlerCall{Informer: 1, At: ms(17), Kind: OnDelete, Key: "ns/c", RV: 8, Value: "c1"},
		HandlerCall{Informer: 1, At: ms(18), Kind: OnAdd, Key: "ns/c", RV: 11, Value: "c2"},
	)
	h.Finals[1] = map[string]Object{"ns/a": {7, "a3"}, "ns/b": {10, "b4"}, "ns/c": {11, "c2"}}
	h.FinalList = map[string]Object{"ns/a": {7, "a3"}, "ns/b": {10, "b4"}, "ns/c": {11, "c2"}}
	h.FinalListRV = 11
	r := Check(h)
	for _, v := range r.Violations {
		t.Errorf("%s", v)
	}
}

// A watcher with a label selector sees an update that takes the object out
// of the selector as a DELETED (the old object, at the update's RV). When
// that update got no answer and only the informer's handler showed it, the
// DELETED must not be taken for the key's delete, which also got no RV:
// the informer's OnUpdate places the update first (the ten-minute run on
// the real kube-apiserver, seed 7, met exactly this after a cut connection).
func TestLabelledDeletedIsNotTakenForADelete(t *testing.T) {
	h := valid()
	h.Writes[2].Outcome, h.Writes[2].RV = Unknown, 0 // the update to green, applied at RV 4
	h.Writes[4].Outcome, h.Writes[4].RV = Applied, 0 // the delete, applied at RV 6
	keep := func(e Event) bool {
		switch e.Watcher {
		case 1, 3:
			return e.RV <= 3 && e.Type == Added // streams that ended at RV 3
		case 2:
			return true // its DELETED at RV 4 is the update leaving color=blue
		case 4:
			return e.Type == Error
		}
		return false
	}
	h.Events = slices.DeleteFunc(h.Events, func(e Event) bool { return !keep(e) })
	r := Check(h)
	for _, v := range r.Violations {
		t.Errorf("%s", v)
	}
}

// validPods is a small history of Pods beside a ConfigMap that keeps every
// promise: a Pod on node-a is updated (the update does not name the node:
// spec.nodeName cannot change, so it keeps its create's), deleted and
// created again on node-b; a watcher of node-a's Pods sees it leave and
// never sees it come back; a watcher of every Pod sees all; a ConfigMap
// watcher sees no Pod. Two informers: node-a's Pods (as a kubelet lists
// them) and every Pod.
func validPods() *History {
	pod := func(w Write) Write { w.Resource = "pods"; return w }
	h := &History{
		Writes: []Write{
			pod(Write{ID: 1, Op: Create, Key: "ns/pod-1", Node: "node-a", Value: "p1", Labels: blue, Start: ms(0), End: ms(1), Outcome: OK, RV: 2}),
			pod(Write{ID: 2, Client: 1, Op: Create, Key: "ns/pod-2", Node: "node-b", Value: "q1", Labels: blue, Start: ms(2), End: ms(3), Outcome: OK, RV: 3}),
			pod(Write{ID: 3, Op: Update, Key: "ns/pod-1", Value: "p2", Labels: green, Start: ms(4), End: ms(5), Outcome: OK, RV: 4}),
			pod(Write{ID: 4, Op: Delete, Key: "ns/pod-1", Start: ms(6), End: ms(7), Outcome: OK, RV: 5}),
			pod(Write{ID: 5, Op: Create, Key: "ns/pod-1", Node: "node-b", Value: "p3", Labels: blue, Start: ms(8), End: ms(9), Outcome: OK, RV: 6}),
			{ID: 6, Client: 2, Op: Create, Key: "ns/key-1", Value: "c1", Labels: blue, Start: ms(10), End: ms(11), Outcome: OK, RV: 7},
		},
		Watches: []WatchSpec{
			{ID: 1, Resource: "pods", StartRV: "1", FieldSelector: "spec.nodeName=node-a"},
			{ID: 2, Resource: "pods", StartRV: "1"},
			{ID: 3, StartRV: "1"},
		},
		Events: []Event{
			{Watcher: 1, Type: Added, Key: "ns/pod-1", RV: 2, Value: "p1"},
			{Watcher: 1, Type: Modified, Key: "ns/pod-1", RV: 4, Value: "p2"},
			{Watcher: 1, Type: Deleted, Key: "ns/pod-1", RV: 5, Value: "p2"},

			{Watcher: 2, Type: Added, Key: "ns/pod-1", RV: 2, Value: "p1"},
			{Watcher: 2, Type: Added, Key: "ns/pod-2", RV: 3, Value: "q1"},
			{Watcher: 2, Type: Modified, Key: "ns/pod-1", RV: 4, Value: "p2"},
			{Watcher: 2, Type: Deleted, Key: "ns/pod-1", RV: 5, Value: "p2"},
			{Watcher: 2, Type: Added, Key: "ns/pod-1", RV: 6, Value: "p3"},

			{Watcher: 3, Type: Added, Key: "ns/key-1", RV: 7, Value: "c1"},
		},
		Informers: []InformerSpec{
			{ID: 1, Name: "client-go", Resource: "pods", FieldSelector: "spec.nodeName=node-a"},
			{ID: 2, Name: "lab 05", Resource: "pods"},
		},
		Calls: []HandlerCall{
			{Informer: 1, Kind: OnAdd, Key: "ns/pod-1", RV: 2, Value: "p1"},
			{Informer: 1, Kind: OnUpdate, Key: "ns/pod-1", RV: 4, Value: "p2"},
			{Informer: 1, Kind: OnDelete, Key: "ns/pod-1", RV: 5, Value: "p2"},

			{Informer: 2, Kind: OnAdd, Key: "ns/pod-1", RV: 2, Value: "p1"},
			{Informer: 2, Kind: OnAdd, Key: "ns/pod-2", RV: 3, Value: "q1"},
			{Informer: 2, Kind: OnUpdate, Key: "ns/pod-1", RV: 4, Value: "p2"},
			{Informer: 2, Kind: OnDelete, Key: "ns/pod-1", RV: 5, Value: "p2"},
			{Informer: 2, Kind: OnAdd, Key: "ns/pod-1", RV: 6, Value: "p3"},
		},
		Finals: map[int]map[string]Object{
			1: {},
			2: {"ns/pod-1": {6, "p3"}, "ns/pod-2": {3, "q1"}},
		},
		FinalList:   map[string]Object{"ns/pod-1": {6, "p3"}, "ns/pod-2": {3, "q1"}, "ns/key-1": {7, "c1"}},
		FinalListRV: 7,
		FinalListAt: ms(20),
	}
	for i := range h.Events {
		h.Events[i].At = ms(12)
	}
	return h
}

// TestPodsByNodeName: the Pod history keeps every promise, and each broken
// promise planted in it is reported: the node's watcher and informer are
// held to spec.nodeName, a ConfigMap watcher to ConfigMaps.
func TestPodsByNodeName(t *testing.T) {
	r := Check(validPods())
	for _, v := range r.Violations {
		t.Errorf("valid: %s", v)
	}
	for _, tc := range []struct {
		name  string
		plant func(h *History)
		want  string
	}{
		{"node-a's watcher shown the Pod re-created on node-b", func(h *History) {
			h.Events = slices.Insert(h.Events, 3, Event{Watcher: 1, At: ms(12), Type: Added, Key: "ns/pod-1", RV: 6, Value: "p3"})
		}, "atomic"},
		{"node-a's watcher missing the update", func(h *History) {
			h.Events = slices.Delete(h.Events, 1, 2)
		}, "reliable"},
		{"a ConfigMap watcher shown a Pod", func(h *History) {
			h.Events = slices.Insert(h.Events, 8, Event{Watcher: 3, At: ms(12), Type: Added, Key: "ns/pod-2", RV: 3, Value: "q1"})
		}, "atomic"},
		{"node-a's informer still holding the Pod now on node-b", func(h *History) {
			h.Finals[1]["ns/pod-1"] = Object{6, "p3"}
		}, "informer-final"},
		{"node-a's informer never told the Pod left", func(h *History) {
			h.Calls = slices.Delete(h.Calls, 2, 3)
		}, "informer-delete"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := validPods()
			tc.plant(h)
			r := Check(h)
			if !slices.Contains(kinds(r), tc.want) {
				t.Fatalf("violations %v, want one of kind %q", kinds(r), tc.want)
			}
			for _, v := range r.Violations {
				t.Logf("%s", v)
			}
		})
	}
}

// podsWithMark is validPods with the Pod's delete made as kube-apiserver
// makes it: first a write that sets its deletionTimestamp (RV 5, content
// unchanged), then the delete (RV 6). Both watchers of the Pod and both
// informers see the mark as a MODIFIED (OnUpdate) with the old value.
func podsWithMark() *History {
	h := validPods()
	bump := func(rv *uint64) {
		if *rv >= 5 {
			*rv++
		}
	}
	for i := range h.Writes {
		bump(&h.Writes[i].RV)
	}
	for i := range h.Events {
		bump(&h.Events[i].RV)
	}
	for i := range h.Calls {
		bump(&h.Calls[i].RV)
	}
	for k, o := range h.FinalList {
		bump(&o.RV)
		h.FinalList[k] = o
	}
	for _, f := range h.Finals {
		for k, o := range f {
			bump(&o.RV)
			f[k] = o
		}
	}
	h.FinalListRV++
	mark := func(watcher int) Event {
		return Event{Watcher: watcher, At: ms(12), Type: Modified, Key: "ns/pod-1", RV: 5, Value: "p2"}
	}
	// Before each watcher's DELETED of pod-1 (now at RV 6).
	for _, w := range []int{1, 2} {
		i := slices.IndexFunc(h.Events, func(e Event) bool { return e.Watcher == w && e.Type == Deleted })
		h.Events = slices.Insert(h.Events, i, mark(w))
	}
	for _, inf := range []int{1, 2} {
		i := slices.IndexFunc(h.Calls, func(c HandlerCall) bool { return c.Informer == inf && c.Kind == OnDelete })
		h.Calls = slices.Insert(h.Calls, i, HandlerCall{Informer: inf, Kind: OnUpdate, Key: "ns/pod-1", RV: 5, Value: "p2"})
	}
	return h
}

// TestPodDeleteIsTwoWrites: the MODIFIED that marks a Pod deleting is taken
// for the first of its delete's two writes, not for an event no write made;
// and once known, every watcher of the Pod must get it.
func TestPodDeleteIsTwoWrites(t *testing.T) {
	r := Check(podsWithMark())
	for _, v := range r.Violations {
		t.Errorf("with the mark: %s", v)
	}
	// As client-go's typed Delete answers: applied, with no RV; the
	// DELETED events place it, after its mark.
	h := podsWithMark()
	for i := range h.Writes {
		if h.Writes[i].Op == Delete {
			h.Writes[i].Outcome, h.Writes[i].RV = Applied, 0
		}
	}
	for _, v := range Check(h).Violations {
		t.Errorf("with the mark, the delete answered without an RV: %s", v)
	}
	h = podsWithMark()
	i := slices.IndexFunc(h.Events, func(e Event) bool { return e.Watcher == 2 && e.RV == 5 })
	h.Events = slices.Delete(h.Events, i, i+1)
	if r := Check(h); !slices.Contains(kinds(r), "reliable") {
		t.Errorf("a watcher that missed the mark another saw: violations %v, want one of kind reliable", kinds(r))
	}
	h = podsWithMark()
	// The same MODIFIED with no delete after it: no write made it.
	h.Writes = slices.DeleteFunc(h.Writes, func(w Write) bool { return w.Op == Delete })
	if r := Check(h); !slices.Contains(kinds(r), "atomic") {
		t.Errorf("a MODIFIED of the old content with no delete after it: violations %v, want one of kind atomic", kinds(r))
	}
}

// TestInitialEventsCutShort: a watch from "0" without bookmarks whose
// stream ended after some of its initial events (here one of two) shows
// part of one state; an initial event that is no state's is still
// reported.
func TestInitialEventsCutShort(t *testing.T) {
	h := valid()
	h.Watches = append(h.Watches, WatchSpec{ID: 7, StartRV: "0"})
	h.Events = append(h.Events, Event{Watcher: 7, At: ms(14), Type: Added, Key: "ns/a", RV: 4, Value: "a2"})
	for _, v := range Check(h).Violations {
		t.Errorf("cut short: %s", v)
	}
	h.Events[len(h.Events)-1].Value = "a1"
	if r := Check(h); !slices.Contains(kinds(r), "initial-state") {
		t.Errorf("an initial event with the wrong content: violations %v, want one of kind initial-state", kinds(r))
	}
}

// TestUpdateThatDeletedAMarkedPod: a Pod's delete gets no answer, and only
// its first write, the mark (RV 3), is applied; the writer's next update is
// answered OK at the mark's RV, older than a write answered before it was
// sent, because kube-apiserver deleted the Pod instead (RV 5). The checker
// reads the update as that delete. Without the unanswered delete before
// it, an update answered at an RV older than a write answered before it
// was sent is reported.
func TestUpdateThatDeletedAMarkedPod(t *testing.T) {
	pod := func(w Write) Write { w.Resource = "pods"; return w }
	h := &History{
		Writes: []Write{
			pod(Write{ID: 1, Op: Create, Key: "ns/pod-1", Node: "node-a", Value: "p1", Labels: blue, Start: ms(0), End: ms(1), Outcome: OK, RV: 2}),
			pod(Write{ID: 2, Op: Delete, Key: "ns/pod-1", Start: ms(2), End: ms(3), Outcome: Unknown, Err: "unexpected EOF"}),
			{ID: 3, Client: 1, Op: Create, Key: "ns/key-1", Value: "c1", Labels: blue, Start: ms(4), End: ms(5), Outcome: OK, RV: 4},
			pod(Write{ID: 4, Op: Update, Key: "ns/pod-1", Value: "p2", Labels: blue, Start: ms(6), End: ms(7), Outcome: OK, RV: 3}),
			pod(Write{ID: 5, Op: Update, Key: "ns/pod-1", Value: "p3", Labels: blue, Start: ms(8), End: ms(9), Outcome: Failed, Err: "NotFound"}),
		},
		Watches: []WatchSpec{{ID: 1, Resource: "pods", StartRV: "1"}},
		Events: []Event{
			{Watcher: 1, At: ms(10), Type: Added, Key: "ns/pod-1", RV: 2, Value: "p1"},
			{Watcher: 1, At: ms(10), Type: Modified, Key: "ns/pod-1", RV: 3, Value: "p1"}, // the mark
			{Watcher: 1, At: ms(10), Type: Deleted, Key: "ns/pod-1", RV: 5, Value: "p1"},  // the update's delete
		},
		FinalList:   map[string]Object{"ns/key-1": {4, "c1"}},
		FinalListRV: 5,
		FinalListAt: ms(20),
	}
	recorded := slices.Clone(h.Writes)
	for _, v := range Check(h).Violations {
		t.Errorf("an update that deleted its marked Pod: %s", v)
	}
	if !slices.EqualFunc(recorded, h.Writes, func(a, b Write) bool { return a.String() == b.String() }) {
		t.Errorf("Check changed the history's writes")
	}
	// With no write answered between the mark and the update (an outage
	// failed them all), the event at the answer's RV, the mark with the
	// old value, still tells.
	h2 := &History{Writes: slices.Clone(recorded), Watches: h.Watches, Events: slices.Clone(h.Events), FinalListRV: 5, FinalListAt: ms(20), FinalList: map[string]Object{}}
	h2.Writes = slices.Delete(h2.Writes, 2, 3) // key-1's create
	for _, v := range Check(h2).Violations {
		t.Errorf("the same, told by the mark's event: %s", v)
	}
	h.Writes = slices.Delete(h.Writes, 1, 2)
	h.Events = h.Events[:1]
	if r := Check(h); !slices.Contains(kinds(r), "linearizable") {
		t.Errorf("an update answered at an old RV with no delete before it: violations %v, want one of kind linearizable", kinds(r))
	}
}

// TestRelistRecreateFinding: an informer whose handler got OnUpdate from
// the deleted object to the one created again under its name, with no
// OnDelete between them, is reported as a relist-recreate finding, and its
// excerpt shows the handler's calls and the delete and the create.
func TestRelistRecreateFinding(t *testing.T) {
	h := valid()
	h.Calls = slices.DeleteFunc(h.Calls, func(c HandlerCall) bool { return c.Kind == OnDelete })
	i := slices.IndexFunc(h.Calls, func(c HandlerCall) bool { return c.Key == "ns/a" && c.RV == 7 })
	h.Calls[i].Kind = OnUpdate
	r := Check(h)
	if got := kinds(r); !slices.Equal(got, []string{RelistRecreate}) {
		t.Fatalf("violations %v, want only %s", got, RelistRecreate)
	}
	v := r.Violations[0]
	t.Logf("%s", v)
	if !strings.Contains(v.Text, "deleted at RV 6 and created again at RV 7") || !strings.Contains(v.Text, "OnUpdate(rv 4 -> rv 7)") {
		t.Errorf("text %q: want the delete's and the create's RVs and the OnUpdate across them", v.Text)
	}
	ex := strings.Join(v.Excerpt, "\n")
	for _, want := range []string{"OnUpdate ns/a rv=7 value=a3", "delete ns/a", "create ns/a value=a3"} {
		if !strings.Contains(ex, want) {
			t.Errorf("excerpt lacks %q:\n%s", want, ex)
		}
	}
}
