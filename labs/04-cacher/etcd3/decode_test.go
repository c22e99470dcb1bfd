package etcd3_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/features"
	"k8s.io/apiserver/pkg/storage"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	featuregatetesting "k8s.io/component-base/featuregate/testing"

	"github.com/listwatch-labs/listwatch-labs/labs/04-cacher/internal/labtest"
)

// gatedCodec decodes like the lab's codec and, once armed, counts the
// decodes running at once and records the order they finish in. With hold,
// the objects go by tens, d-0..d-9, d-10..d-19, ...: no decode of a ten
// returns before all of its ten have begun, which can only happen if ten
// decodes run at once; and each one returns only after the next one
// returned, so a ten finishes backwards, d-9 first, d-0 last.
type gatedCodec struct {
	runtime.Codec
	armed, hold       bool
	mu                sync.Mutex
	running, most     int
	finishOrder       []int
	started, finished map[int]chan struct{}
	waitedTooLong     atomic.Bool
}

func newGatedCodec(hold bool) *gatedCodec {
	g := &gatedCodec{Codec: labtest.Codec(), hold: hold, started: map[int]chan struct{}{}, finished: map[int]chan struct{}{}}
	for i := range 40 {
		g.started[i] = make(chan struct{})
		g.finished[i] = make(chan struct{})
	}
	return g
}

// wait waits for ch, for 10 s at most (then the test fails).
func (g *gatedCodec) wait(ch chan struct{}) {
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		g.waitedTooLong.Store(true)
	}
}

func (g *gatedCodec) Decode(data []byte, defaults *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	obj, gvk, err := g.Codec.Decode(data, defaults, into)
	g.mu.Lock()
	armed := g.armed
	if armed {
		g.running++
		g.most = max(g.most, g.running)
	}
	g.mu.Unlock()
	if !armed || err != nil {
		return obj, gvk, err
	}
	n, _ := strconv.Atoi(strings.TrimPrefix(obj.(*v1.ConfigMap).Name, "d-"))
	close(g.started[n])
	if g.hold {
		first, last := n/10*10, n/10*10+9
		for i := first; i <= last; i++ {
			g.wait(g.started[i])
		}
		if n != last {
			g.wait(g.finished[n+1])
		}
	}
	g.mu.Lock()
	g.running--
	g.finishOrder = append(g.finishOrder, n)
	g.mu.Unlock()
	close(g.finished[n])
	return obj, gvk, err
}

func (g *gatedCodec) arm() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.armed = true
}

func (g *gatedCodec) mostAtOnce() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.most
}

// decodeWatch writes d-0..d-29, then watches them from before the first
// write with codec, and returns the names in the order the watch sent them.
func decodeWatch(t *testing.T, ns string, codec *gatedCodec) []string {
	t.Helper()
	ctx := context.Background()
	cfg := labtest.ConfigMapStorage(etcdServer.Client)
	cfg.Codec = codec
	s := storeWith(t, cfg)
	emptyNamespace(t, ns)
	start, err := s.GetCurrentResourceVersion(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 30 {
		name := fmt.Sprintf("d-%d", i)
		if err := s.Create(ctx, key(ns, name), cm(ns, name, "1"), nil, 0); err != nil {
			t.Fatal(err)
		}
	}
	codec.arm()
	w, err := s.Watch(ctx, "/configmaps/"+ns, storage.ListOptions{ResourceVersion: strconv.FormatUint(start, 10), Recursive: true, Predicate: labtest.Predicate(nil, nil)})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	var got []string
	for range 30 {
		got = append(got, nextObject(t, w, watch.Added).(*v1.ConfigMap).Name)
	}
	return got
}

func wantD(n int) []string {
	var want []string
	for i := range n {
		want = append(want, fmt.Sprintf("d-%d", i))
	}
	return want
}

// ConcurrentWatchObjectDecode (on by default since 1.37): ten decodes run
// at once, never more, and the events still come in etcd's order, although
// each ten finishes decoding backwards.
func TestWatchDecodesConcurrentlyInOrder(t *testing.T) {
	checkLeaks(t)
	if !utilfeature.DefaultFeatureGate.Enabled(features.ConcurrentWatchObjectDecode) {
		t.Fatal("ConcurrentWatchObjectDecode is off by default; at 1.37 it is on")
	}
	codec := newGatedCodec(true)
	got := decodeWatch(t, "decode-concurrent", codec)
	if fmt.Sprint(got) != fmt.Sprint(wantD(30)) {
		t.Errorf("order %v", got)
	}
	if codec.waitedTooLong.Load() {
		t.Error("a decode waited 10 s for another of its ten: fewer than 10 decodes ran at once")
	}
	if most := codec.mostAtOnce(); most != 10 {
		t.Errorf("at most %d decodes at once, want 10", most)
	}
	// The premise: each ten finished backwards.
	codec.mu.Lock()
	finished := fmt.Sprint(codec.finishOrder[:10])
	codec.mu.Unlock()
	if finished != "[9 8 7 6 5 4 3 2 1 0]" {
		t.Errorf("first ten finished in the order %s, want backwards", finished)
	}
}

// With the gate off (1.36's default), one decode at a time.
func TestWatchDecodesSeriallyWithTheGateOff(t *testing.T) {
	checkLeaks(t)
	featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, features.ConcurrentWatchObjectDecode, false)
	codec := newGatedCodec(false)
	got := decodeWatch(t, "decode-serial", codec)
	if fmt.Sprint(got) != fmt.Sprint(wantD(30)) {
		t.Errorf("order %v", got)
	}
	if most := codec.mostAtOnce(); most != 1 {
		t.Errorf("at most %d decodes at once, want 1", most)
	}
}
