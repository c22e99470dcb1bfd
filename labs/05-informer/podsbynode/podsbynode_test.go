package podsbynode

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	fcache "k8s.io/client-go/tools/cache/testing"

	"github.com/listwatch-labs/listwatch-labs/labkit"
	"github.com/listwatch-labs/listwatch-labs/labs/05-informer/informer"
)

// TestCountsStayExactUnderChurn: random pod churn through client-go's own
// fake ListerWatcher (cache/testing.FakeControllerSource, which cannot
// stream a list, so our Reflector uses LIST): creates, bindings, deletes,
// and changes the watch never delivers followed by a watch reset (a 410 and
// a relist, where deletions arrive as DeletedFinalStateUnknown). After each
// round the published counts equal the counts of the fake's LIST.
func TestCountsStayExactUnderChurn(t *testing.T) {
	labkit.ChecksExercise(t, "index-delete", "relist-final-state-unknown")
	for seed := range uint64(10) {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { churn(t, seed) })
		})
	}
}

func churn(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 7))
	src := fcache.NewFakeControllerSource()
	defer src.Shutdown()
	inf := informer.NewSharedIndexInformer(cache.ToListerWatcherWithContext(src), informer.Options{
		Indexers: informer.Indexers{informer.NodeNameIndex: informer.NodeNameIndexFunc},
	})
	pub := &MapPublisher{}
	ctl, _, err := New(inf, pub)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{}, 2)
	go func() { inf.Run(ctx); done <- struct{}{} }()
	go func() { ctl.Run(ctx); done <- struct{}{} }()
	defer func() { cancel(); <-done; <-done }()

	pods := map[string]*corev1.Pod{}
	next := 0
	randomNode := func() string { return fmt.Sprintf("node-%d", rng.IntN(4)) }
	anyPod := func() *corev1.Pod {
		for _, p := range pods { // map order: random enough, seeded runs need not repeat exactly
			return p
		}
		return nil
	}
	for round := range 15 {
		// Every other round ends with changes the watch never delivers,
		// then a watch reset: the informer's resourceVersion is too old
		// (410), it relists, and only then learns about them. (A real
		// apiserver never drops an event; it is the missed window while
		// the informer's resourceVersion is too old to watch from, up to
		// the relist after the 410, that this stands for.)
		dropped := 0
		if round%2 == 1 {
			dropped = 1 + rng.IntN(5)
		}
		for i := range 20 + dropped {
			drop := i >= 20
			switch op := rng.IntN(4); {
			case op == 0 || len(pods) == 0:
				next++
				p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p%d", next), Namespace: "ns"}}
				if rng.IntN(3) > 0 {
					p.Spec.NodeName = randomNode()
				}
				pods[p.Name] = p
				if drop {
					src.AddDropWatch(p.DeepCopy())
				} else {
					src.Add(p.DeepCopy())
				}
			case op == 1:
				p := anyPod()
				if p.Spec.NodeName == "" {
					p.Spec.NodeName = randomNode() // bound by the scheduler
				}
				p.Labels = map[string]string{"touched": fmt.Sprint(round)}
				if drop {
					src.ModifyDropWatch(p.DeepCopy())
				} else {
					src.Modify(p.DeepCopy())
				}
			default:
				p := anyPod()
				delete(pods, p.Name)
				if drop {
					src.DeleteDropWatch(p.DeepCopy())
				} else {
					src.Delete(p.DeepCopy())
				}
			}
		}
		if dropped > 0 {
			src.ResetWatch()
		}
		elapse(time.Minute) // the bubble's fake clock, past any backoff
		synctest.Wait()
		list, err := src.List(metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		items, _ := meta.ExtractList(list)
		want := map[string]int{}
		for _, item := range items {
			if n := item.(*corev1.Pod).Spec.NodeName; n != "" {
				want[n]++
			}
		}
		{
			if got := Format(Counts(inf.GetIndexer())); got != Format(want) {
				t.Fatalf("round %d: the cache's index says\n%swant\n%s", round, got, Format(want))
			}
			if got := Format(pub.Counts()); got != Format(want) {
				t.Fatalf("round %d: published\n%swant (from a LIST)\n%s", round, got, Format(want))
			}
		}
	}
}

// TestQueueHoldsEachKeyOnce: a key added many times is handed out once;
// added again while being processed, it is handed out again after done.
func TestQueueHoldsEachKeyOnce(t *testing.T) {
	q := newQueue()
	q.add("a")
	q.add("b")
	q.add("a")
	if q.Len() != 2 {
		t.Fatalf("len %d, want 2", q.Len())
	}
	k, _ := q.get()
	q.add(k) // while processing
	if q.Len() != 1 {
		t.Fatalf("len %d while %s is processed, want 1 (b)", q.Len(), k)
	}
	q.done(k)
	if q.Len() != 2 {
		t.Fatalf("len %d after done, want 2 (%s is back)", q.Len(), k)
	}
	q.shutDown()
	if _, ok := q.get(); ok {
		t.Error("get after shutDown")
	}
}

// elapse moves the synctest bubble's fake clock forward by d: the timer
// fires once every goroutine of the bubble is durably blocked, with the
// clock jumped to its deadline, so no wall-clock time passes and nothing is
// waited on but the informer's own timers (backoff, watch timeouts) coming
// due. (The informer package's tests have the same helper.)
func elapse(d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	<-t.C
}
