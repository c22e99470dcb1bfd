package cacher

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/utils/clock"

	"github.com/listwatch-labs/listwatch-labs/labkit"
	"github.com/listwatch-labs/listwatch-labs/labs/04-cacher/internal/labtest"
)

// TestTriggeredWatchersOfOldAndNewValue: a pod moved from node-1 to node-3
// is offered to the unindexed watcher, to node-3's watcher and to node-1's
// (it must see the pod leave), each once, and not to node-2's. It checks
// watchersFor alone (trigger.go), without the events' conversion.
func TestTriggeredWatchersOfOldAndNewValue(t *testing.T) {
	labkit.ChecksExercise(t, "trigger-values")
	e := newPodEnv(t, clock.RealClock{})
	watchers := map[string]*cacheWatcher{}
	for _, node := range []string{"", "node-1", "node-2", "node-3"} {
		pred := labtest.Predicate(nil, nil)
		if node != "" {
			pred = labtest.Predicate(nil, fields.OneTermEqualSelector("spec.nodeName", node))
		}
		w, err := e.cacher.Watch(context.Background(), e.prefix, storage.ListOptions{ResourceVersion: "0", Recursive: true, Predicate: pred})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		watchers[node] = w.(*cacheWatcher)
	}
	pod := func(node string) *v1.Pod {
		return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}, Spec: v1.PodSpec{NodeName: node}}
	}
	got := map[*cacheWatcher]int{}
	for _, w := range e.cacher.watchersFor(&watchCacheEvent{Type: watch.Modified, Object: pod("node-3"), PrevObject: pod("node-1")}) {
		got[w]++
	}
	for node, want := range map[string]int{"": 1, "node-1": 1, "node-2": 0, "node-3": 1} {
		if got[watchers[node]] != want {
			t.Errorf("watcher of %q offered the move %d times, want %d", node, got[watchers[node]], want)
		}
	}
}
