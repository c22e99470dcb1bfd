package watchserver

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// collect reads n events from w (or fails after a deadline) and renders
// them as "TYPE name rv" lines.
func collect(t *testing.T, w *Watcher, n int) []string {
	t.Helper()
	var out []string
	for len(out) < n {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatalf("watch ended after %v, want %d events", out, n)
			}
			out = append(out, render(ev))
		case <-time.After(10 * time.Second):
			t.Fatalf("got %v, want %d events", out, n)
		}
	}
	return out
}

func render(ev *Event) string {
	if ev.Object == nil {
		return fmt.Sprintf("%s %s", ev.Type, strings.TrimSpace(string(ev.Frame)))
	}
	return fmt.Sprintf("%s %s %s", ev.Type, ev.Object.Name, ev.Object.ResourceVersion)
}

func cm(name string, lbls map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Labels: lbls}}
}

func mustUpdate(t *testing.T, s *Store, obj *corev1.ConfigMap) {
	t.Helper()
	if _, err := s.Update(obj); err != nil {
		t.Fatal(err)
	}
}

func TestWatchFromResourceVersionReplaysHistory(t *testing.T) {
	s := NewStore(10, 100)
	s.Create(cm("a", nil)) // 101
	s.Create(cm("b", nil)) // 102
	s.Delete("ns", "a")    // 103
	w, err := s.Watch(WatchOptions{ResourceVersion: "101"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	s.Create(cm("c", nil)) // 104, live
	got := strings.Join(collect(t, w, 3), "\n")
	want := "ADDED b 102\nDELETED a 103\nADDED c 104"
	if got != want {
		t.Fatalf("got\n%s\nwant the events after RV 101, replayed then live:\n%s", got, want)
	}
}

func TestTooOldResourceVersionIsExpired(t *testing.T) {
	s := NewStore(2, 0)
	for _, n := range []string{"a", "b", "c", "d"} { // RVs 1..4; history keeps 3, 4
		s.Create(cm(n, nil))
	}
	w, err := s.Watch(WatchOptions{ResourceVersion: "1"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	got := collect(t, w, 1)[0]
	want := `ERROR {"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old resource version: 1 (2)","reason":"Expired","code":410}}`
	if got != want {
		t.Fatalf("got %s\nwant %s", got, want)
	}
	if _, ok := <-w.ResultChan(); ok {
		t.Fatal("an expired watch must end after its ERROR event")
	}
	// RV 2 is exactly the oldest we can replay from: accepted.
	w2, _ := s.Watch(WatchOptions{ResourceVersion: "2"})
	defer w2.Stop()
	if got := strings.Join(collect(t, w2, 2), ","); got != "ADDED c 3,ADDED d 4" {
		t.Fatalf("from RV 2: %s", got)
	}
}

func TestInitialEventsThenBookmark(t *testing.T) {
	s := NewStore(10, 0)
	s.Create(cm("b", nil))
	s.Create(cm("a", nil))
	w, _ := s.Watch(WatchOptions{SendInitialEvents: ptr(true), AllowWatchBookmarks: true})
	defer w.Stop()
	got := collect(t, w, 3)
	if got[0] != "ADDED a 2" || got[1] != "ADDED b 1" {
		t.Fatalf("initial events %v, want a then b (key order) as ADDED", got[:2])
	}
	want := `BOOKMARK {"type":"BOOKMARK","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"resourceVersion":"2","annotations":{"k8s.io/initial-events-end":"true"}}}}`
	if got[2] != want {
		t.Fatalf("got %s\nwant %s", got[2], want)
	}
}

func TestSelectorChangesBecomeAddedAndDeleted(t *testing.T) {
	s := NewStore(10, 0)
	sel := labels.SelectorFromSet(labels.Set{"app": "x"})
	w, _ := s.Watch(WatchOptions{SendInitialEvents: ptr(false), Match: func(o *corev1.ConfigMap) bool { return sel.Matches(labels.Set(o.Labels)) }})
	defer w.Stop()
	s.Create(cm("a", nil))                                             // 1: not ours
	mustUpdate(t, s, cm("a", map[string]string{"app": "x"}))           // 2: now matches -> ADDED
	mustUpdate(t, s, cm("a", map[string]string{"app": "x", "v": "2"})) // 3: MODIFIED
	mustUpdate(t, s, cm("a", nil))                                     // 4: no longer matches -> DELETED
	s.Delete("ns", "a")                                                // 5: not ours any more
	s.Create(cm("b", map[string]string{"app": "x"}))                   // 6
	got := strings.Join(collect(t, w, 4), "\n")
	want := "ADDED a 2\nMODIFIED a 3\nDELETED a 4\nADDED b 6"
	if got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
}

func TestSlowWatcherIsTerminatedNotWaitedFor(t *testing.T) {
	s := NewStore(10, 0)
	slow, _ := s.Watch(WatchOptions{SendInitialEvents: ptr(false)})
	defer slow.Stop()
	// Nobody reads slow: after its two buffers fill, the store drops it
	// instead of blocking this loop.
	for i := range 2*watcherBufSize + 10 {
		s.Create(cm(fmt.Sprintf("cm-%d", i), nil))
	}
	n := 0
	for range slow.ResultChan() {
		n++
	}
	if n == 0 || n >= 2*watcherBufSize+10 {
		t.Fatalf("slow watcher got %d events; want it cut off after its buffers filled", n)
	}
}

func TestUpdateConflict(t *testing.T) {
	s := NewStore(10, 0)
	s.Create(cm("a", nil))
	stale := cm("a", nil)
	stale.ResourceVersion = "7"
	_, err := s.Update(stale)
	if err == nil || !strings.Contains(err.Error(), "the object has been modified") {
		t.Fatalf("err = %v, want a Conflict", err)
	}
}

// TestPreTimeoutBookmark: 2s before its deadline a watcher that allows
// bookmarks gets one, if the store moved past what the watcher has seen.
func TestPreTimeoutBookmark(t *testing.T) {
	s := NewStore(10, 0)
	s.Create(cm("x", nil)) // RV 1
	s.Create(cm("y", nil)) // RV 2: after the watch's start, but not its to see
	mine := labels.SelectorFromSet(labels.Set{"app": "mine"})
	// The deadline is 1s away, so the bookmark is already due.
	w, _ := s.Watch(WatchOptions{
		ResourceVersion: "1", AllowWatchBookmarks: true,
		Match:    func(o *corev1.ConfigMap) bool { return mine.Matches(labels.Set(o.Labels)) },
		Deadline: time.Now().Add(time.Second),
	})
	defer w.Stop()
	got := collect(t, w, 1)[0]
	if !strings.HasPrefix(got, "BOOKMARK ") || !strings.Contains(got, `"resourceVersion":"2"`) {
		t.Fatalf("got %s, want a BOOKMARK at RV 2: the watcher has seen nothing past RV 1", got)
	}
}

// TestReplayIsFiltered: events replayed from history pass the same
// namespace and selector checks as live ones.
func TestReplayIsFiltered(t *testing.T) {
	s := NewStore(10, 0)
	s.Create(cm("a", nil)) // RV 1, namespace ns
	other := cm("b", nil)
	other.Namespace = "other"
	s.Create(other)        // RV 2, another namespace
	s.Create(cm("c", nil)) // RV 3
	w, _ := s.Watch(WatchOptions{Namespace: "ns", ResourceVersion: "1"})
	defer w.Stop()
	if got := collect(t, w, 1)[0]; got != "ADDED c 3" {
		t.Fatalf("got %s, want ADDED c 3: b is in another namespace", got)
	}
}
