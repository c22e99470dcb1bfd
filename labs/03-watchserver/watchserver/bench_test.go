package watchserver

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/endpoints/handlers"
	"k8s.io/client-go/kubernetes/scheme"
)

// benchObjects are the ConfigMaps every benchmark streams: small, realistic
// objects (labels, a few data keys), each a new resourceVersion.
func benchObjects(n int) []*corev1.ConfigMap {
	out := make([]*corev1.ConfigMap, n)
	for i := range out {
		out[i] = &corev1.ConfigMap{
			TypeMeta: configMapType,
			ObjectMeta: metav1.ObjectMeta{
				Name: fmt.Sprintf("cm-%05d", i), Namespace: "bench", UID: "8f2a5c1e-0000-4000-8000-000000000000",
				ResourceVersion: formatRV(uint64(1000 + i)), Labels: map[string]string{"app": "bench", "tier": "backend"},
				CreationTimestamp: metav1.NewTime(time.Date(2026, 7, 22, 0, 0, 0, 0, time.UTC)),
			},
			Data: map[string]string{"color": "blue", "size": "large", "index": fmt.Sprint(i)},
		}
	}
	return out
}

// chanSource is an EventSource over a channel the benchmark fills.
type chanSource chan *Event

func (c chanSource) ResultChan() <-chan *Event { return c }
func (c chanSource) Stop()                     {}

// noTimeout is a handlers.TimeoutFactory whose channel never fires.
type noTimeout struct{}

func (noTimeout) TimeoutCh() (<-chan time.Time, func() bool) {
	return nil, func() bool { return false }
}

// upstreamWatchServer builds k8s.io/apiserver's WatchServer from its exported
// fields, as serveWatchHandler would for a JSON watch of configmaps.
func upstreamWatchServer(w watch.Interface) *handlers.WatchServer {
	info, _ := kruntime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), kruntime.ContentTypeJSON)
	gv := schema.GroupVersion{Version: "v1"}
	return &handlers.WatchServer{
		Watching:        w,
		Scope:           &handlers.RequestScope{Resource: gv.WithResource("configmaps"), Kind: gv.WithKind("ConfigMap")},
		UseTextFraming:  true,
		MediaType:       kruntime.ContentTypeJSON,
		Framer:          info.StreamSerializer.Framer,
		Encoder:         scheme.Codecs.EncoderForVersion(info.StreamSerializer.Serializer, gv),
		EmbeddedEncoder: scheme.Codecs.EncoderForVersion(info.Serializer, gv),
		TimeoutFactory:  noTimeout{},
	}
}

// producer feeds the objects of one watch to one implementation; it is
// where the lab encodes (once per event) and upstream does not (its
// WatchServer encodes per watcher).
type impl struct {
	name string
	// handler serves one watch; feed is called with a function that
	// receives every object, in order, and must return when all are sent.
	handler func(feed func(send func(*corev1.ConfigMap))) http.Handler
}

var impls = []impl{
	{"lab", func(feed func(func(*corev1.ConfigMap))) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ch := make(chanSource, watcherBufSize)
			go func() {
				defer close(ch)
				feed(func(obj *corev1.ConfigMap) { ch <- NewEvent(watch.Modified, obj, nil, 0) })
			}()
			(&WatchServer{Watching: ch, MediaType: "application/json"}).HandleHTTP(w, r)
		})
	}},
	{"upstream", func(feed func(func(*corev1.ConfigMap))) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ch := make(chan watch.Event, watcherBufSize)
			go func() {
				defer close(ch)
				feed(func(obj *corev1.ConfigMap) { ch <- watch.Event{Type: watch.Modified, Object: obj} })
			}()
			upstreamWatchServer(watch.NewProxyWatcher(ch)).HandleHTTP(w, r)
		})
	}},
}

// readFrames reads a watch body to its end and returns how many frames it held.
func readFrames(body io.Reader) (int, error) {
	buf := make([]byte, 64<<10)
	n := 0
	for {
		k, err := body.Read(buf)
		n += bytes.Count(buf[:k], []byte{'\n'})
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}

// measure runs fn b.N times and reports events/s and allocs/event, counting
// the allocations of the whole process (server, client, producer): the
// client and producer are the same for both implementations.
func measure(b *testing.B, eventsPerOp int, fn func()) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	b.ResetTimer()
	for range b.N {
		fn()
	}
	b.StopTimer()
	runtime.ReadMemStats(&after)
	events := float64(eventsPerOp) * float64(b.N)
	b.ReportMetric(events/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/events, "allocs/event")
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/events, "B/event")
}

// BenchmarkWatchServer streams the same 10,000 ConfigMap events to one
// client over loopback HTTP/1.1, through our WatchServer and through
// k8s.io/apiserver's.
func BenchmarkWatchServer(b *testing.B) {
	const n = 10000
	objects := benchObjects(n)
	feed := func(send func(*corev1.ConfigMap)) {
		for _, obj := range objects {
			send(obj)
		}
	}
	for _, im := range impls {
		b.Run("impl="+im.name, func(b *testing.B) {
			srv := httptest.NewServer(im.handler(feed))
			defer srv.Close()
			client := srv.Client()
			defer client.CloseIdleConnections()
			measure(b, n, func() {
				resp, err := client.Get(srv.URL)
				if err != nil {
					b.Fatal(err)
				}
				got, err := readFrames(resp.Body)
				resp.Body.Close()
				if err != nil || got != n {
					b.Fatalf("read %d frames (%v), want %d", got, err, n)
				}
			})
		})
	}
}

// BenchmarkFanout sends each of 1,000 events to 100 watchers, each its own
// loopback HTTP connection. The lab encodes an event once and all 100
// watchers write the same bytes; upstream's WatchServer, given plain objects,
// encodes it 100 times. (In a real apiserver the cacher wraps objects in a
// cachingObject to get the lab's behaviour back; that type is internal.)
func BenchmarkFanout(b *testing.B) {
	const events, watchers = 1000, 100
	objects := benchObjects(events)
	for _, im := range []string{"lab", "upstream"} {
		b.Run("impl="+im, func(b *testing.B) {
			// One producer per iteration; each watcher's handler reads from
			// its own channel, filled by the producer in turn, as the
			// cacher's dispatchEvents does.
			var mu sync.Mutex
			var labChans []chanSource
			var upChans []chan watch.Event
			ready := make(chan struct{}, watchers)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if im == "lab" {
					ch := make(chanSource, watcherBufSize)
					mu.Lock()
					labChans = append(labChans, ch)
					mu.Unlock()
					ready <- struct{}{}
					(&WatchServer{Watching: ch, MediaType: "application/json"}).HandleHTTP(w, r)
					return
				}
				ch := make(chan watch.Event, watcherBufSize)
				mu.Lock()
				upChans = append(upChans, ch)
				mu.Unlock()
				ready <- struct{}{}
				upstreamWatchServer(watch.NewProxyWatcher(ch)).HandleHTTP(w, r)
			}))
			defer srv.Close()
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: watchers, MaxConnsPerHost: watchers}}
			defer client.CloseIdleConnections()

			measure(b, events*watchers, func() {
				labChans, upChans = nil, nil
				var wg sync.WaitGroup
				errs := make(chan error, watchers)
				for range watchers {
					resp, err := client.Get(srv.URL)
					if err != nil {
						b.Fatal(err)
					}
					wg.Add(1)
					go func() {
						defer wg.Done()
						defer resp.Body.Close()
						if got, err := readFrames(resp.Body); err != nil || got != events {
							errs <- fmt.Errorf("read %d frames (%v), want %d", got, err, events)
						}
					}()
				}
				for range watchers {
					<-ready
				}
				for _, obj := range objects {
					if im == "lab" {
						ev := NewEvent(watch.Modified, obj, nil, 0) // once, for all
						for _, ch := range labChans {
							ch <- ev
						}
					} else {
						for _, ch := range upChans {
							ch <- watch.Event{Type: watch.Modified, Object: obj}
						}
					}
				}
				for _, ch := range labChans {
					close(ch)
				}
				for _, ch := range upChans {
					close(ch)
				}
				wg.Wait()
				close(errs)
				for err := range errs {
					b.Fatal(err)
				}
			})
		})
	}
}
