package informer

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/listwatch-labs/listwatch-labs/labkit"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func activeCM(name, rv string, active bool) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: fakeNamespace, ResourceVersion: rv},
		Data: map[string]string{"active": strconv.FormatBool(active)}}
}

// drain feeds the same notifications to a queue nobody pops yet (the
// informer is busy: a slow cache update held the process loop; in a shared
// informer handlers run on their own goroutines and do not hold it),
// then lets the informer's process loop drain it, and returns the handler
// calls.
func drain(t *testing.T, useDeltaFIFO bool, feed func(q ReflectorStore)) []string {
	var lines []string
	synctest.Test(t, func(t *testing.T) {
		inf := NewSharedIndexInformer(nil, Options{UseDeltaFIFO: useDeltaFIFO})
		rec := newRecorder()
		inf.AddEventHandler(rec)
		var q fifo
		if useDeltaFIFO {
			q = NewDeltaFIFO(inf.indexer, nil)
		} else {
			q = NewRealFIFO(nil)
		}
		feed(q)
		q.Close()
		ctx, cancel := contextWithCancel()
		done := make(chan struct{})
		go func() { defer close(done); inf.processor.run(ctx) }()
		inf.processLoop(q)
		synctest.Wait()
		cancel()
		<-done
		lines = rec.lines()
	})
	return lines
}

// TestDeltaFIFOReordersAcrossObjects is the sequence where the two FIFOs
// call the handlers differently. Two ConfigMaps, at most one of them
// "active=true" at any time on the server: b is active; a is touched (still
// inactive); b steps down; a takes over. While the informer is behind, the
// DeltaFIFO keeps a's changes together at a's place in the queue (a was
// queued first), so a's takeover is delivered before b's step-down: a
// handler (and the cache) sees both active, a state the server never had.
// The RealFIFO delivers in arrival order. The RealFIFO is correct; this is
// why InOrderInformers replaced the DeltaFIFO (GA and locked on since 1.36).
func TestDeltaFIFOReordersAcrossObjects(t *testing.T) {
	feed := func(q ReflectorStore) {
		must(t, q.Replace([]any{activeCM("a", "1", false), activeCM("b", "2", true)}, "2"))
		must(t, q.Update(activeCM("a", "3", false)))
		must(t, q.Update(activeCM("b", "4", false)))
		must(t, q.Update(activeCM("a", "5", true)))
	}
	real := drain(t, false, feed)
	delta := drain(t, true, feed)
	wantReal := []string{
		"OnAdd a rv1 active=false (initial list)",
		"OnAdd b rv2 active=true (initial list)",
		"OnUpdate a rv1 active=false -> a rv3 active=false",
		"OnUpdate b rv2 active=true -> b rv4 active=false",
		"OnUpdate a rv3 active=false -> a rv5 active=true",
	}
	wantDelta := []string{
		"OnAdd a rv1 active=false (initial list)",
		"OnUpdate a rv1 active=false -> a rv3 active=false",
		"OnUpdate a rv3 active=false -> a rv5 active=true",
		"OnAdd b rv2 active=true (initial list)",
		"OnUpdate b rv2 active=true -> b rv4 active=false",
	}
	if !slices.Equal(real, wantReal) {
		t.Errorf("RealFIFO: the handler calls are not in arrival order; %s", labkit.Diff(strings.Join(wantReal, "\n"), strings.Join(real, "\n")))
	}
	if !slices.Equal(delta, wantDelta) {
		t.Errorf("DeltaFIFO: the handler calls are not grouped by object; %s", labkit.Diff(strings.Join(wantDelta, "\n"), strings.Join(delta, "\n")))
	}
	// Replay each sequence after the initial list: how many are active?
	maxActive := func(lines []string) int {
		state := map[string]bool{"a": false, "b": true}
		most := 0
		for _, l := range lines {
			if strings.HasPrefix(l, "OnUpdate") {
				after := l[strings.Index(l, "-> ")+3:]
				state[after[:1]] = strings.HasSuffix(after, "active=true")
			}
			n := 0
			for _, on := range state {
				if on {
					n++
				}
			}
			most = max(most, n)
		}
		return most
	}
	if n := maxActive(real); n != 1 {
		t.Errorf("RealFIFO: a handler saw %d active at once", n)
	}
	if n := maxActive(delta); n != 2 {
		t.Errorf("DeltaFIFO: a handler saw at most %d active at once; the test expects the reordering to show 2", n)
	}
}

// describeDeltas is one line per delta: its type, the object's key and
// resourceVersion, and "(final state unknown)" for a tombstone.
func describeDeltas(ds Deltas) string {
	var lines []string
	for _, d := range ds {
		obj, note := d.Object, ""
		if u, ok := obj.(DeletedFinalStateUnknown); ok {
			obj, note = u.Obj, " (final state unknown)"
		}
		line := fmt.Sprintf("%s %T%s", d.Type, obj, note)
		if m, err := meta.Accessor(obj); err == nil {
			line = fmt.Sprintf("%s %s/%s rv%s%s", d.Type, m.GetNamespace(), m.GetName(), m.GetResourceVersion(), note)
		}
		lines = append(lines, line)
	}
	return strings.Join(lines, "\n")
}

// TestDeltaFIFOCollapsesDeletes: a Deleted after a Deleted is dropped, and
// a delete that knows the final state wins over a DeletedFinalStateUnknown.
func TestDeltaFIFOCollapsesDeletes(t *testing.T) {
	labkit.ChecksExercise(t, "dedup-deletes")
	q := NewDeltaFIFO(NewIndexer(nil), nil)
	a := activeCM("a", "1", false)
	must(t, q.Add(a))
	must(t, q.Delete(DeletedFinalStateUnknown{Key: "ns/a", Obj: a}))
	must(t, q.Delete(a))
	var got Deltas
	q.Close()
	must(t, q.Pop(func(d Deltas, _ bool) error { got = d; return nil }))
	if len(got) != 2 || got[1].Type != Deleted {
		t.Fatalf("a's deltas after Add, Delete (final state unknown), Delete; %s", labkit.Diff("Added ns/a rv1\nDeleted ns/a rv1", describeDeltas(got)))
	}
	if _, unknown := got[1].Object.(DeletedFinalStateUnknown); unknown {
		t.Errorf("kept the DeletedFinalStateUnknown over the delete with the final state")
	}
	// A delete of an object nobody knows is dropped by the DeltaFIFO (the
	// RealFIFO passes it on: the server said so).
	must(t, q.Delete(activeCM("ghost", "9", false)))
	if len(q.queue) != 0 {
		t.Errorf("DeltaFIFO queued a delete of an unknown object")
	}
}

// TestRealFIFOBatches: consecutive changes to distinct objects form one
// batch; a second change to the same object starts the next one; a relist
// is always alone.
func TestRealFIFOBatches(t *testing.T) {
	q := NewRealFIFO(nil)
	must(t, q.Replace(nil, "1"))
	must(t, q.Add(activeCM("a", "2", false)))
	must(t, q.Add(activeCM("b", "3", false)))
	must(t, q.Update(activeCM("a", "4", false)))
	must(t, q.Replace([]any{activeCM("a", "4", false)}, "5"))
	q.Close()
	var sizes []string
	for {
		err := q.PopBatch(func(batch []Delta, _ bool) error {
			var types []string
			for _, d := range batch {
				types = append(types, string(d.Type))
			}
			sizes = append(sizes, strings.Join(types, "+"))
			return nil
		})
		if err == ErrFIFOClosed {
			break
		}
	}
	if got := strings.Join(sizes, " | "); got != "ReplacedAll | Added+Added | Updated | ReplacedAll" {
		t.Errorf("batches: %s", got)
	}
	if !q.HasSynced() {
		t.Error("not synced after popping the first list")
	}
}
