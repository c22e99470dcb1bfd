package informer

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// benchEvents is how many events each run delivers: the streaming list of
// `objects` ConfigMaps, its initial-events-end bookmark, then MODIFIED
// events cycling over them until benchEvents handler calls in all.
const benchEvents = 100_000

// benchLW is an in-memory ListerWatcher for the benchmark: its streaming
// list sends `objects` ADDED events and the k8s.io/initial-events-end
// bookmark (without which client-go's informer would wait for ever), then
// benchEvents-objects MODIFIED events. Every object is built as it is sent,
// as a decoder would, so the cache holds the only reference to it and the
// heap measures what the cache retains.
type benchLW struct{ objects int }

func benchObject(i, rv int) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "cm-" + strconv.Itoa(i), Namespace: "bench",
			ResourceVersion: strconv.Itoa(rv), Labels: map[string]string{"app": "bench"}},
		Data: map[string]string{"value": strconv.Itoa(rv)},
	}
}

func (l *benchLW) ListWithContext(context.Context, metav1.ListOptions) (kruntime.Object, error) {
	return nil, fmt.Errorf("benchLW serves streaming lists only")
}

func (l *benchLW) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	w := &benchWatch{result: make(chan watch.Event, 1024), stop: make(chan struct{})}
	go func() {
		defer close(w.result)
		send := func(ev watch.Event) bool {
			select {
			case w.result <- ev:
				return true
			case <-w.stop:
				return false
			case <-ctx.Done():
				return false
			}
		}
		if opts.SendInitialEvents != nil && *opts.SendInitialEvents {
			for i := range l.objects {
				if !send(watch.Event{Type: watch.Added, Object: benchObject(i, i+1)}) {
					return
				}
			}
			end := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{ResourceVersion: strconv.Itoa(l.objects),
				Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"}}}
			if !send(watch.Event{Type: watch.Bookmark, Object: end}) {
				return
			}
			for j := range benchEvents - l.objects {
				rv := l.objects + j + 1
				if !send(watch.Event{Type: watch.Modified, Object: benchObject(j%l.objects, rv)}) {
					return
				}
			}
		}
		select { // nothing more to say; stay open until stopped
		case <-w.stop:
		case <-ctx.Done():
		}
	}()
	return w, nil
}

func (l *benchLW) List(opts metav1.ListOptions) (kruntime.Object, error) {
	return l.ListWithContext(context.Background(), opts)
}

func (l *benchLW) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return l.WatchWithContext(context.Background(), opts)
}

type benchWatch struct {
	result chan watch.Event
	stop   chan struct{}
	once   atomic.Bool
}

func (w *benchWatch) ResultChan() <-chan watch.Event { return w.result }
func (w *benchWatch) Stop() {
	if w.once.CompareAndSwap(false, true) {
		close(w.stop)
	}
}

// countingHandler counts calls and closes done at want.
type countingHandler struct {
	n    atomic.Int64
	want int64
	done chan struct{}
}

func (h *countingHandler) inc() {
	if h.n.Add(1) == h.want {
		close(h.done)
	}
}
func (h *countingHandler) OnAdd(any, bool)   { h.inc() }
func (h *countingHandler) OnUpdate(any, any) { h.inc() }
func (h *countingHandler) OnDelete(any)      { h.inc() }

// BenchmarkInformer feeds the same 100,000 events to our informer
// (impl=lab) and to client-go's (impl=clientgo), each with a namespace index
// and one counting handler, and reports events/s, allocs/event, and the heap
// the informer retains per cached object once every event is handled.
//
//	go test -run '^$' -bench BenchmarkInformer -benchtime=1x ./informer
func BenchmarkInformer(b *testing.B) {
	for _, objects := range []int{10_000, 100_000} {
		for _, impl := range []string{"lab", "clientgo"} {
			b.Run(fmt.Sprintf("impl=%s/objects=%d", impl, objects), func(b *testing.B) {
				var elapsed time.Duration
				var mallocs, retained uint64
				for range b.N {
					e, m, r := runBench(b, impl, objects)
					elapsed += e
					mallocs += m
					retained += r
				}
				n := float64(b.N)
				b.ReportMetric(float64(benchEvents)*n/elapsed.Seconds(), "events/s")
				b.ReportMetric(float64(mallocs)/n/benchEvents, "allocs/event")
				b.ReportMetric(float64(retained)/n/float64(objects), "B/object")
				b.ReportMetric(0, "ns/op") // the run time is in events/s
			})
		}
	}
}

func runBench(b *testing.B, impl string, objects int) (elapsed time.Duration, mallocs, retained uint64) {
	b.StopTimer()
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	lw := &benchLW{objects: objects}
	h := &countingHandler{want: benchEvents, done: make(chan struct{})}
	var run func(context.Context)
	var keep any
	switch impl {
	case "lab":
		inf := NewSharedIndexInformer(lw, Options{Indexers: Indexers{NamespaceIndex: NamespaceIndexFunc}})
		inf.AddEventHandler(h)
		run, keep = inf.Run, inf
	case "clientgo":
		inf := cache.NewSharedIndexInformer(lw, &corev1.ConfigMap{}, 0, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
		inf.AddEventHandler(h)
		run, keep = inf.RunWithContext, inf
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	b.StartTimer()
	start := time.Now()
	go func() { defer close(done); run(ctx) }()
	<-h.done
	elapsed = time.Since(start)
	b.StopTimer()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	mallocs = after.Mallocs - before.Mallocs
	runtime.GC()
	runtime.ReadMemStats(&after)
	if after.HeapAlloc > before.HeapAlloc {
		retained = after.HeapAlloc - before.HeapAlloc
	}
	runtime.KeepAlive(keep)
	cancel()
	<-done
	return elapsed, mallocs, retained
}
