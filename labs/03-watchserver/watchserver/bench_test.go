package watchserver

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync"
	"sync/atomic"
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
			TypeMeta: metav1.TypeMeta{Kind: "ConfigMap", APIVersion: "v1"},
			ObjectMeta: metav1.ObjectMeta{
				Name: fmt.Sprintf("cm-%05d", i), Namespace: "bench", UID: "8f2a5c1e-0000-4000-8000-000000000000",
				ResourceVersion: fmt.Sprint(1000 + i), Labels: map[string]string{"app": "bench", "tier": "backend"},
				CreationTimestamp: metav1.NewTime(time.Date(2026, 7, 22, 0, 0, 0, 0, time.UTC)),
			},
			Data: map[string]string{"color": "blue", "size": "large", "index": fmt.Sprint(i)},
		}
	}
	return out
}

// benchChanSize is the watcher channel size upstream gives a resource
// without indexes at most (watch_cache_history.go, suggestedWatchChannelSize).
const benchChanSize = 100

// cachingObject stands in for the storage's: a kruntime.CacheableObject that
// encodes once per identifier, then hands every writer the same bytes.
// (memstorage's and upstream's cacher's are unexported.)
type cachingObject struct {
	kruntime.Object
	mu      sync.Mutex
	entries map[kruntime.Identifier]*cachedEncoding
	encodes atomic.Int64
}

type cachedEncoding struct {
	once sync.Once
	raw  []byte
	err  error
}

func newCachingObject(obj kruntime.Object) *cachingObject {
	return &cachingObject{Object: obj, entries: map[kruntime.Identifier]*cachedEncoding{}}
}

func (c *cachingObject) CacheEncode(id kruntime.Identifier, encode func(kruntime.Object, io.Writer) error, w io.Writer) error {
	c.mu.Lock()
	e, ok := c.entries[id]
	if !ok {
		e = &cachedEncoding{}
		c.entries[id] = e
	}
	c.mu.Unlock()
	e.once.Do(func() {
		var buf bytes.Buffer
		e.err = encode(c.Object.DeepCopyObject(), &buf)
		e.raw = buf.Bytes()
		c.encodes.Add(1)
	})
	if e.err != nil {
		return e.err
	}
	_, err := w.Write(e.raw)
	return err
}

func (c *cachingObject) GetObject() kruntime.Object { return c.Object.DeepCopyObject() }

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

// labWatchServer serves one watch with the lab's WatchServer.
func labWatchServer(w watch.Interface) http.Handler {
	return &WatchServer{Watching: w, Encoder: JSONEncoder{Typer: scheme.Scheme}, MediaType: "application/json"}
}

func upstreamHandler(w watch.Interface) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) { upstreamWatchServer(w).HandleHTTP(rw, r) })
}

// impl is one way to serve a watch, and the objects it is fed: plain
// objects (each WatchServer encodes each event), or caching objects shared
// by all watchers of an event (encode once).
type impl struct {
	name    string
	serve   func(watch.Interface) http.Handler
	caching bool
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
// k8s.io/apiserver's, both given plain objects: one watcher, so there is
// nothing to share.
func BenchmarkWatchServer(b *testing.B) {
	const n = 10000
	objects := benchObjects(n)
	for _, im := range []impl{{"lab", labWatchServer, false}, {"upstream", upstreamHandler, false}} {
		b.Run("impl="+im.name, func(b *testing.B) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				ch := make(chan watch.Event, benchChanSize)
				go func() {
					defer close(ch)
					for _, obj := range objects {
						ch <- watch.Event{Type: watch.Modified, Object: obj}
					}
				}()
				im.serve(watch.NewProxyWatcher(ch)).ServeHTTP(w, r)
			}))
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
// loopback HTTP connection, as the storage's dispatch would: one producer,
// one channel per watcher. impl=lab gives the lab's WatchServer one caching
// object per event, as memstorage does, so it encodes once and 100 handlers
// write the same bytes; impl=upstream gives k8s.io/apiserver's WatchServer
// plain objects, so it encodes 100 times; impl=upstream-caching gives
// upstream's WatchServer the same caching objects as the lab's: its
// watchEncoder uses CacheEncode too (response.go), which is how a real
// apiserver, whose cacher wraps events in a cachingObject, encodes once.
func BenchmarkFanout(b *testing.B) {
	const events, watchers = 1000, 100
	objects := benchObjects(events)
	for _, im := range []impl{{"lab", labWatchServer, true}, {"upstream", upstreamHandler, false}, {"upstream-caching", upstreamHandler, true}} {
		b.Run("impl="+im.name, func(b *testing.B) {
			var mu sync.Mutex
			var chans []chan watch.Event
			ready := make(chan struct{}, watchers)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				ch := make(chan watch.Event, benchChanSize)
				mu.Lock()
				chans = append(chans, ch)
				mu.Unlock()
				ready <- struct{}{}
				im.serve(watch.NewProxyWatcher(ch)).ServeHTTP(w, r)
			}))
			defer srv.Close()
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: watchers, MaxConnsPerHost: watchers}}
			defer client.CloseIdleConnections()

			measure(b, events*watchers, func() {
				chans = nil
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
					ev := watch.Event{Type: watch.Modified, Object: obj}
					if im.caching {
						ev.Object = newCachingObject(obj) // once, for all watchers
					}
					for _, ch := range chans {
						ch <- ev
					}
				}
				for _, ch := range chans {
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
