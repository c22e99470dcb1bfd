package informer

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/listwatch-labs/listwatch-labs/labkit"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

// TestIndexerProperty runs random Add/Update/Delete/Replace sequences on our
// Indexer and on client-go's cache.NewIndexer (the oracle), with three
// indexes (namespace, spec.nodeName, and a label index of the kind a learner
// writes), and after every operation checks: the same keys, the same
// ByIndex answer for every value either has, and no stale entry in ours
// (every key under a value is an object whose index function returns that
// value, and no value has an empty set).
func TestIndexerProperty(t *testing.T) {
	labkit.ChecksExercise(t, "index-delete")
	indexers := Indexers{NamespaceIndex: NamespaceIndexFunc, NodeNameIndex: NodeNameIndexFunc, "app": LabelIndexFunc("app")}
	oracleIndexers := cache.Indexers{}
	for name, f := range indexers {
		oracleIndexers[name] = cache.IndexFunc(f)
	}
	for seed := range uint64(100) {
		rng := rand.New(rand.NewPCG(seed, 1))
		ours := NewIndexer(indexers)
		oracle := cache.NewIndexer(cache.DeletionHandlingMetaNamespaceKeyFunc, oracleIndexers)
		randomPod := func() *corev1.Pod {
			p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
				Namespace: []string{"ns1", "ns2"}[rng.IntN(2)],
				Name:      fmt.Sprintf("p%d", rng.IntN(12)),
				Labels:    map[string]string{},
			}}
			if rng.IntN(3) > 0 {
				p.Spec.NodeName = fmt.Sprintf("node-%d", rng.IntN(4))
			}
			if rng.IntN(2) == 0 {
				p.Labels["app"] = []string{"web", "db"}[rng.IntN(2)]
			}
			return p
		}
		for step := range 200 {
			var op string
			switch n := rng.IntN(10); {
			case n < 4:
				p := randomPod()
				op = "add " + p.Namespace + "/" + p.Name
				must(t, ours.Add(p))
				must(t, oracle.Add(p))
			case n < 7:
				p := randomPod()
				op = "update " + p.Namespace + "/" + p.Name
				must(t, ours.Update(p))
				must(t, oracle.Update(p))
			case n < 9:
				p := randomPod()
				op = "delete " + p.Namespace + "/" + p.Name
				must(t, ours.Delete(p))
				must(t, oracle.Delete(p))
			default:
				var list []any
				for range rng.IntN(6) {
					list = append(list, randomPod())
				}
				op = fmt.Sprintf("replace with %d", len(list))
				must(t, ours.Replace(list, "1"))
				must(t, oracle.Replace(list, "1"))
			}
			if err := compareIndexers(ours, oracle, indexers); err != nil {
				t.Fatalf("seed %d step %d (%s): %v", seed, step, op, err)
			}
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func compareIndexers(ours *Indexer, oracle cache.Indexer, indexers Indexers) error {
	theirKeys := oracle.ListKeys()
	slices.Sort(theirKeys)
	if got := ours.ListKeys(); !slices.Equal(got, theirKeys) {
		return fmt.Errorf("keys %v, oracle %v", got, theirKeys)
	}
	// In name order, so that a failure names the same index every run.
	for _, name := range slices.Sorted(maps.Keys(indexers)) {
		f := indexers[name]
		values := ours.ListIndexFuncValues(name)
		theirValues := oracle.ListIndexFuncValues(name)
		all := append(slices.Clone(values), theirValues...)
		slices.Sort(all)
		for _, v := range slices.Compact(all) {
			got, err := ours.IndexKeys(name, v)
			if err != nil {
				return err
			}
			want, err := oracle.IndexKeys(name, v)
			if err != nil {
				return err
			}
			slices.Sort(want)
			if !slices.Equal(got, want) {
				return fmt.Errorf("index %s=%s: %v, oracle %v", name, v, got, want)
			}
		}
		// No stale entries in ours, whatever the oracle does.
		for _, v := range values {
			keys, _ := ours.IndexKeys(name, v)
			if len(keys) == 0 {
				return fmt.Errorf("index %s keeps value %q with no object", name, v)
			}
			for _, k := range keys {
				obj, ok, _ := ours.GetByKey(k)
				if !ok {
					return fmt.Errorf("index %s=%s names %s, which is not stored", name, v, k)
				}
				if vs, _ := f(obj); !slices.Contains(vs, v) {
					return fmt.Errorf("index %s=%s names %s, whose value is now %v", name, v, k, vs)
				}
			}
		}
	}
	return nil
}

// TestIndexerErrorLeavesStoreUnchanged: an index function that fails (a
// ConfigMap in a spec.nodeName index) is an error, and nothing changes;
// upstream's `updateSingleIndex` panics here
// (k8s.io/client-go@v0.37.0/tools/cache/thread_safe_store.go:174-197;
// TestClientGoIndexerPanicsOnIndexError).
func TestIndexerErrorLeavesStoreUnchanged(t *testing.T) {
	c := NewIndexer(Indexers{NodeNameIndex: NodeNameIndexFunc})
	err := c.Add(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "ns"}})
	if err == nil || !strings.Contains(err.Error(), "want *v1.Pod, got *v1.ConfigMap") {
		t.Fatalf("Add: %v", err)
	}
	if keys := c.ListKeys(); len(keys) != 0 {
		t.Errorf("store holds %v after a failed Add", keys)
	}
	if _, err := c.ByIndex("nope", "x"); err == nil || err.Error() != "index with name nope does not exist" {
		t.Errorf("ByIndex of an unknown index: %v", err)
	}
}
