package store

import (
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/watch"
)

func keys(t *testing.T, s Snapshot) string {
	t.Helper()
	items, err := s.OrderedListPrefix("/pods/", "")
	if err != nil {
		t.Fatal(err)
	}
	out := ""
	for _, item := range items {
		out += item.(*Element).Key + " "
	}
	return out
}

// A snapshot keeps the store as it was at its RV while the store changes;
// Compact drops the older ones; MarkConsistent(false) drops all and takes
// no more.
func TestSnapshotsAreImmutableAndCompacted(t *testing.T) {
	w := NewWatchCacheStorage()
	w.ReplaceLocked([]*Element{{Key: "/pods/ns/b"}}, 10)
	if err := w.UpdateStoreLocked(watch.Added, &Element{Key: "/pods/ns/a"}, 11); err != nil {
		t.Fatal(err)
	}
	at11, _ := w.LatestSnapshotLocked()
	if err := w.UpdateStoreLocked(watch.Deleted, &Element{Key: "/pods/ns/b"}, 12); err != nil {
		t.Fatal(err)
	}
	if got := keys(t, at11); got != "/pods/ns/a /pods/ns/b " {
		t.Errorf("snapshot at 11 after a delete at 12: %q", got)
	}
	if got := keys(t, w.StoreLocked()); got != "/pods/ns/a " {
		t.Errorf("live store: %q", got)
	}
	at10, err := w.GetExactSnapshotLocked(10)
	if err != nil || keys(t, at10) != "/pods/ns/b " {
		t.Errorf("exact 10: %v", err)
	}
	w.Compact(11)
	if _, err := w.GetExactSnapshotLocked(10); !apierrors.IsResourceExpired(err) {
		t.Errorf("exact 10 after Compact(11): %v, want 410", err)
	}
	if !w.CanServeExactRV(11) {
		t.Error("Compact(11) dropped the snapshot at 11")
	}
	w.MarkConsistent(false)
	if _, ok := w.LatestSnapshotLocked(); ok || w.CanServeExactRV(12) {
		t.Error("snapshots kept after MarkConsistent(false)")
	}
	snap, err := w.GetLatestSnapshotOrBuildLocked("/pods/", "")
	if err != nil || keys(t, snap) != "/pods/ns/a " {
		t.Errorf("built from the live store: %v", err)
	}
}
