package informer

// client-go's typed informers, new in 1.37 (k8s.io/client-go@v0.37.0
// tools/cache: `TypedSharedIndexInformer`, `DeletedObject`; informers/: a
// `TypedInformer` on every generated informer). They wrap the same
// SharedIndexInformer: the Reflector, the FIFO, the Indexer and the
// handlers' buffers are unchanged, so the lab does not rebuild them
// (DEEPER.md, "What changed in 1.37"). These tests show the two things a
// controller author meets: what a typed OnDelete receives, and that
// Informer() is a new wrapper on every call.

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
)

// TestClientGoTypedHandlerGetsDeletedObject: a typed handler's OnDelete
// gets a `DeletedObject` (k8s.io/client-go@v0.37.0/tools/cache/controller.go:319-338),
// which the typed wrapper builds from what the untyped OnDelete got
// (`typedResourceEventHandler.OnDelete`,
// k8s.io/client-go@v0.37.0/tools/cache/shared_informer.go:362-372): for a
// watch's DELETED, the deleted object and no FinalStateUnknown; for a
// delete a relist found, the DeletedFinalStateUnknown in FinalStateUnknown
// and its last known object in OptionalObj, stale by definition. GetKey
// gives the cache key either way. The same contract as the untyped
// handler's (TestRelistDeletesWithFinalStateUnknown), with the type
// assertion done for you.
func TestClientGoTypedHandlerGetsDeletedObject(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newFakeServer(nil)
		srv.create("a", "1")
		srv.create("b", "1")
		inf := cache.NewTypedSharedIndexInformer[*corev1.ConfigMap](
			cache.NewSharedIndexInformer(srv, &corev1.ConfigMap{}, 0, cache.Indexers{}))
		var mu sync.Mutex
		var got []string
		if _, err := inf.AddTypedEventHandler(cache.TypedResourceEventHandlerFuncs[*corev1.ConfigMap]{
			DeleteFunc: func(d cache.DeletedObject[*corev1.ConfigMap]) {
				mu.Lock()
				defer mu.Unlock()
				got = append(got, fmt.Sprintf("OnDelete key=%s object=%s rv%s finalStateUnknown=%v",
					d.GetKey(), d.OptionalObj.Name, d.OptionalObj.ResourceVersion, d.FinalStateUnknown != nil))
			},
		}); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); inf.RunWithContext(ctx) }()
		synctest.Wait()

		srv.remove("a") // a watch event
		synctest.Wait()
		srv.expire()    // a 410: the Reflector relists...
		srv.remove("b") // ...and b is gone by then
		elapse(2 * time.Minute)
		synctest.Wait()

		mu.Lock()
		defer mu.Unlock()
		want := []string{
			"OnDelete key=ns/a object=a rv3 finalStateUnknown=false",
			"OnDelete key=ns/b object=b rv2 finalStateUnknown=true",
		}
		if !slices.Equal(got, want) {
			t.Errorf("typed OnDelete calls:\n got %q\nwant %q", got, want)
		}
		cancel()
		<-done
	})
}

// TestClientGoInformerIsANewWrapperEachCall: since 1.37 a generated
// informer's Informer() returns `TypedInformer`'s result, a new wrapper
// around the one informer the factory keeps per type
// (k8s.io/client-go@v0.37.0/informers/core/v1/configmap.go:162-168;
// `NewTypedSharedIndexInformer`: k8s.io/client-go@v0.37.0/tools/cache/shared_informer.go:318-320).
// Two calls are no longer ==, so code that compares informers, or keys a
// map by them, sees two; they still share one cache, and the factory
// starts one informer.
func TestClientGoInformerIsANewWrapperEachCall(t *testing.T) {
	client := fake.NewClientset(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "default"}})
	factory := informers.NewSharedInformerFactory(client, 0)
	first := factory.Core().V1().ConfigMaps().Informer()
	second := factory.Core().V1().ConfigMaps().Informer()
	if first == second {
		t.Error("two Informer() calls returned the same value; 1.37 returns a new wrapper each time")
	}
	if first.GetStore() != second.GetStore() {
		t.Error("two Informer() calls have different caches; want the factory's one informer")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	factory.Start(ctx.Done())
	defer func() { cancel(); factory.Shutdown() }() // stop, then wait for the informer's goroutines
	synced := factory.WaitForCacheSync(ctx.Done())
	if len(synced) != 1 {
		t.Errorf("the factory started %d informers, want 1: %v", len(synced), synced)
	}
	for typ, ok := range synced {
		if !ok {
			t.Fatalf("the informer of %v did not sync", typ)
		}
	}
	if keys := second.GetStore().ListKeys(); !slices.Equal(keys, []string{"default/a"}) {
		t.Errorf("cache through the second wrapper: %v, want [default/a]", keys)
	}
}
