package lab05_test

// The differential test against the real apiserver: our informer (over lab
// 02's ListWatch) and client-go's (over its typed client) watch the same
// namespace while the test creates, updates, relabels and deletes
// ConfigMaps; for every object, both handlers must see the same calls in
// the same order. (The unit-level differential tests in
// informer/differential_test.go add 410s, relists and bookmarks on a fake
// server; here the events are the apiserver's own.)

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/listwatch-labs/listwatch-labs/labkit"
	"github.com/listwatch-labs/listwatch-labs/labs/02-listwatcher/listwatcher"
	"github.com/listwatch-labs/listwatch-labs/labs/05-informer/informer"
	"github.com/listwatch-labs/listwatch-labs/labs/05-informer/internal/informercmd"
)

// callLog records handler calls with the key of their object.
type callLog struct {
	mu    sync.Mutex
	calls [][2]string // key, line
}

func (l *callLog) add(obj any, line string) {
	key := ""
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		key = d.Key
	} else if cm, ok := obj.(*corev1.ConfigMap); ok {
		key = cm.Name
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls = append(l.calls, [2]string{key, line})
}

func (l *callLog) OnAdd(obj any, initial bool) {
	l.add(obj, fmt.Sprintf("OnAdd %s initial=%v", informercmd.Describe(obj), initial))
}
func (l *callLog) OnUpdate(old, new any) {
	l.add(new, "OnUpdate "+informercmd.Describe(old)+" -> "+informercmd.Describe(new))
}
func (l *callLog) OnDelete(obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		l.add(obj, "OnDelete "+informercmd.Describe(d.Obj)+" (final state unknown)")
		return
	}
	l.add(obj, "OnDelete "+informercmd.Describe(obj))
}

// perObject is the calls in order, stably sorted by object: the order of
// the initial list may differ (client-go hands it over in map order).
func (l *callLog) perObject() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	calls := slices.Clone(l.calls)
	sort.SliceStable(calls, func(i, j int) bool { return calls[i][0] < calls[j][0] })
	out := make([]string, len(calls))
	for i, c := range calls {
		out[i] = c[1]
	}
	return out
}

func (l *callLog) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.calls)
}

func TestDifferentialAgainstCluster(t *testing.T) {
	c := labkit.Current()
	ns := fmt.Sprintf("lab05-differential-%d", time.Now().UnixNano()%1e6)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if _, err := c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	defer c.Client.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})
	cms := c.Client.CoreV1().ConfigMaps(ns)
	create := func(name, color string, labels map[string]string) {
		t.Helper()
		_, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Data: map[string]string{"color": color}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
	}
	patch := func(name, p string) {
		t.Helper()
		if _, err := cms.Patch(ctx, name, types.MergePatchType, []byte(p), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	demo := map[string]string{"app": "demo"}
	create("before-1", "gray", demo)
	create("before-2", "white", demo)

	// Ours: lab 02's ListWatch, our informer.
	lw, err := listwatcher.New(c.Config, "configmaps", ns)
	if err != nil {
		t.Fatal(err)
	}
	lw.LabelSelector = "app=demo"
	ours := informer.NewSharedIndexInformer(lw, informer.Options{Transform: informer.StripManagedFields})
	oursLog := &callLog{}
	ours.AddEventHandler(oursLog)

	// client-go's: the informer factory, as a controller would build it.
	factory := informers.NewSharedInformerFactoryWithOptions(c.Client, 0, informers.WithNamespace(ns),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = "app=demo" }),
		informers.WithTransform(func(obj any) (any, error) { return informer.StripManagedFields(obj) }))
	theirs := factory.Core().V1().ConfigMaps().Informer()
	theirsLog := &callLog{}
	theirs.AddEventHandler(theirsLog)

	runCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { ours.Run(runCtx) })
	factory.Start(runCtx.Done())
	defer func() { stop(); wg.Wait(); factory.Shutdown() }()
	if !cache.WaitForCacheSync(ctx.Done(), ours.HasSynced, theirs.HasSynced) {
		t.Fatal("informers did not sync")
	}

	// Churn: adds, updates, a relabel out of and back into the selection,
	// deletes, a recreate.
	for i := range 5 {
		create(fmt.Sprintf("cm-%d", i), "blue", demo)
	}
	patch("cm-0", `{"data":{"color":"green"}}`)
	patch("cm-1", `{"metadata":{"labels":{"app":"other"}}}`)
	patch("cm-1", `{"data":{"color":"red"}}`)
	patch("cm-1", `{"metadata":{"labels":{"app":"demo"}}}`)
	if err := cms.Delete(ctx, "cm-2", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cms.Delete(ctx, "before-1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	create("cm-2", "black", demo)
	patch("before-2", `{"data":{"color":"yellow"}}`)
	const want = 2 + 5 + 1 + 1 + 1 + 2 + 1 + 1 // calls each handler must see
	err = wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 60*time.Second, true, func(context.Context) (bool, error) {
		return oursLog.len() >= want && theirsLog.len() >= want, nil
	})
	if err != nil {
		t.Fatalf("handler calls: ours %d, client-go %d, want %d each", oursLog.len(), theirsLog.len(), want)
	}
	o, th := oursLog.perObject(), theirsLog.perObject()
	if !slices.Equal(o, th) {
		t.Errorf("per-object calls differ:\nours:\n%s\nclient-go:\n%s", strings.Join(o, "\n"), strings.Join(th, "\n"))
	}
	var ourCache, theirCache []string
	for _, obj := range ours.GetIndexer().List() {
		ourCache = append(ourCache, informercmd.Describe(obj))
	}
	for _, obj := range theirs.GetStore().List() {
		theirCache = append(theirCache, informercmd.Describe(obj))
	}
	sort.Strings(theirCache)
	if !slices.Equal(ourCache, theirCache) {
		t.Errorf("caches differ:\nours: %q\nclient-go: %q", ourCache, theirCache)
	}
}
