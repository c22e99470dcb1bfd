package cacher

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	etcdkube "go.etcd.io/etcd/client/v3/kubernetes"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/storage"
	upstreamcacher "k8s.io/apiserver/pkg/storage/cacher"
	upstreametcd3 "k8s.io/apiserver/pkg/storage/etcd3"
	"k8s.io/apiserver/pkg/storage/value/encrypt/identity"
	"k8s.io/utils/clock"

	"github.com/listwatch-labs/listwatch-labs/labs/04-cacher/etcd3"
	"github.com/listwatch-labs/listwatch-labs/labs/04-cacher/internal/labtest"
)

// BenchmarkCacherFanout: N watchers, each a counting consumer, all watching
// one resource; b.N pods created by 4 writers on the same embedded etcd.
// impl=lab is this package over this lab's etcd3 store; impl=upstream is
// k8s.io/apiserver@v0.37.0's Cacher (NewCacherFromConfig) over its own etcd3
// store, built here from their Configs.
//
// Reported per sub-benchmark:
//   - deliveries/s: events received by all watchers together per second;
//   - allocs/delivery: heap allocations of the whole process (etcd server,
//     storage, cacher, consumers) per delivered event;
//   - at 1000 watchers, p50-ns and p99-ns: time from the start of the
//     write to etcd until a watcher received the event.
//
// Run: go test -run '^$' -bench CacherFanout -benchtime 1000x ./cacher/
func BenchmarkCacherFanout(b *testing.B) {
	for _, impl := range []string{"lab", "upstream"} {
		for _, watchers := range []int{10, 100, 1000} {
			b.Run(fmt.Sprintf("impl=%s/watchers=%d", impl, watchers), func(b *testing.B) {
				benchmarkFanout(b, impl, watchers)
			})
		}
	}
}

// watchStorage is what the benchmark needs from either Cacher.
type watchStorage interface {
	Watch(ctx context.Context, key string, opts storage.ListOptions) (watch.Interface, error)
}

func benchmarkFanout(b *testing.B, impl string, numWatchers int) {
	prefix := fmt.Sprintf("/bench-%d", prefixSeq.Add(1))
	cfg := labtest.PodStorage(etcdServer.Client)
	cfg.ResourcePrefix = prefix
	labStore, err := etcd3.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	var target watchStorage
	switch impl {
	case "lab":
		c, err := NewCacherFromConfig(benchPodConfig(labStore, prefix))
		if err != nil {
			b.Fatal(err)
		}
		defer c.Stop()
		// A Cacher that is not ready answers 429 (checkReady): wait for
		// its first list, as newUpstreamCacher waits for upstream's.
		if err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 30*time.Second, true,
			func(context.Context) (bool, error) { return c.Ready(), nil }); err != nil {
			b.Fatal("lab cacher not ready: ", err)
		}
		target = c
	case "upstream":
		c, stop := newUpstreamCacher(b, prefix, false)
		defer stop()
		target = c
	}
	ctx := context.Background()
	startRV, err := labStore.GetCurrentResourceVersion(ctx)
	if err != nil {
		b.Fatal(err)
	}

	recordLatency := numWatchers == 1000
	writeStart := make([]atomic.Int64, b.N) // unix nanos, by pod number
	latencies := make([][]time.Duration, numWatchers)
	var delivered, terminated atomic.Int64
	var consumers sync.WaitGroup
	var watches []watch.Interface
	for i := range numWatchers {
		w, err := target.Watch(ctx, prefix, storage.ListOptions{ResourceVersion: fmt.Sprint(startRV), Recursive: true,
			Predicate: labtest.Predicate(nil, nil)})
		if err != nil {
			b.Fatal(err)
		}
		watches = append(watches, w)
		consumers.Add(1)
		// A counting consumer: done when it has all b.N events, or when
		// the Cacher terminated it for being too slow (counted).
		go func() {
			defer consumers.Done()
			got := 0
			for ev := range w.ResultChan() {
				if ev.Type != watch.Added {
					continue
				}
				got++
				if recordLatency {
					if m, err := meta.Accessor(ev.Object); err == nil {
						n, _ := strconv.Atoi(strings.TrimPrefix(m.GetName(), "p"))
						latencies[i] = append(latencies[i], time.Since(time.Unix(0, writeStart[n].Load())))
					}
				}
				if got == b.N {
					delivered.Add(int64(got))
					return
				}
			}
			delivered.Add(int64(got))
			terminated.Add(1)
		}()
	}

	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	b.ResetTimer()
	start := time.Now()
	var writers sync.WaitGroup
	var nextPod atomic.Int64
	// Paced writes: a token per write from a ticker (unpaced if rate 0).
	tokens := make(chan struct{})
	stopPacer := make(chan struct{})
	defer close(stopPacer)
	go pace(benchWriteRate(), tokens, stopPacer)
	cpuBefore := cpuTime()
	for range 4 {
		writers.Go(func() {
			for {
				<-tokens
				n := int(nextPod.Add(1) - 1)
				if n >= b.N {
					return
				}
				p := &v1.Pod{}
				p.Namespace, p.Name = "ns", "p"+strconv.Itoa(n)
				writeStart[n].Store(time.Now().UnixNano())
				if err := labStore.Create(ctx, prefix+"/ns/"+p.Name, p, nil, 0); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	writers.Wait()
	consumers.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	want := delivered.Load()
	cpu := cpuTime() - cpuBefore

	b.ReportMetric(float64(want)/elapsed.Seconds(), "deliveries/s")
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/float64(want), "allocs/delivery")
	if cpu > 0 {
		// CPU time of the whole process (etcd included) per delivery.
		b.ReportMetric(float64(cpu.Nanoseconds())/float64(want), "cpu-ns/delivery")
	}
	// Watchers the time budget cut off on a busy machine; 0 on an idle one.
	b.ReportMetric(float64(terminated.Load()), "terminated")
	if recordLatency {
		var all []time.Duration
		for _, l := range latencies {
			all = append(all, l...)
		}
		slices.Sort(all)
		if len(all) > 0 {
			b.ReportMetric(float64(all[len(all)/2].Nanoseconds()), "p50-ns")
			b.ReportMetric(float64(all[len(all)*99/100].Nanoseconds()), "p99-ns")
		}
	}
	for _, w := range watches {
		w.Stop()
	}
}

// benchWriteRate is the writes per second the benchmark offers:
// LAB04_BENCH_RATE, default 200; 0 means as fast as 4 writers can go.
//
// Why paced by default: unpaced, 4 writers create events faster than 1,000
// consumer goroutines on 2 cores can take them, and both Cachers then do
// what they are built to do, terminate the watchers that fall behind, which
// measures the machine rather than the Cacher. At a rate both keep up with,
// deliveries/s is the offered rate times the watchers, and the comparison is
// in latency, allocations and CPU per delivery.
func benchWriteRate() int {
	if v := os.Getenv("LAB04_BENCH_RATE"); v != "" {
		if n, err := strconv.Atoi(v); err == nil && n >= 0 {
			return n
		}
	}
	return 200
}

// pace sends a token rate times a second (or as fast as taken, for 0)
// until stop closes.
func pace(rate int, tokens chan<- struct{}, stop <-chan struct{}) {
	if rate == 0 {
		for {
			select {
			case tokens <- struct{}{}:
			case <-stop:
				return
			}
		}
	}
	ticker := time.NewTicker(time.Second / time.Duration(rate))
	defer ticker.Stop()
	for {
		select {
		case <-ticker.C:
			select {
			case tokens <- struct{}{}:
			case <-stop:
				return
			}
		case <-stop:
			return
		}
	}
}

// benchPodConfig is PodConfig without the trigger index: plain watchers.
func benchPodConfig(s storage.Interface, prefix string) Config {
	cfg := PodConfig(s, prefix, clock.RealClock{})
	cfg.IndexerFuncs = nil
	return cfg
}

// noCompactor satisfies upstream's `Compactor`
// (k8s.io/apiserver@v0.37.0/pkg/storage/etcd3/compact.go:77-80): the
// benchmark runs no compaction, and the store only asks for the last
// compacted revision.
type noCompactor struct{}

func (noCompactor) CompactRevision() int64 { return 0 }

// newUpstreamCacher builds k8s.io/apiserver@v0.37.0's etcd3 store and
// Cacher for pods under prefix, on the benchmark's etcd, as
// storagebackend/factory and registry/generic/registry would, minus what a
// benchmark does not need (TLS, encryption at rest, compaction, metrics).
func newUpstreamCacher(b testing.TB, prefix string, withTrigger bool) (*upstreamcacher.Cacher, func()) {
	b.Helper()
	store, closeStore := newUpstreamStore(b, prefix)
	labCfg := benchPodConfig(store, prefix)
	if withTrigger {
		labCfg = PodConfig(store, prefix, clock.RealClock{})
	}
	c := upstreamCacherFor(b, labCfg)
	return c, func() {
		c.Stop()
		closeStore()
	}
}

// upstreamCacherFor is k8s.io/apiserver@v0.37.0's Cacher configured as labCfg
// configures ours (its storage, prefix, key, attrs, index and object
// functions), loaded: Wait has returned. The caller stops it.
func upstreamCacherFor(b testing.TB, labCfg Config) *upstreamcacher.Cacher {
	b.Helper()
	c, err := upstreamcacher.NewCacherFromConfig(upstreamcacher.Config{
		Storage:             labCfg.Storage,
		Versioner:           storage.APIObjectVersioner{},
		GroupResource:       schema.GroupResource{Resource: "pods"},
		EventsHistoryWindow: upstreamcacher.DefaultEventFreshDuration,
		ResourcePrefix:      labCfg.ResourcePrefix,
		KeyFunc:             labCfg.KeyFunc,
		GetAttrsFunc:        labCfg.GetAttrsFunc,
		IndexerFuncs:        labCfg.IndexerFuncs,
		NewFunc:             labCfg.NewFunc,
		NewListFunc:         labCfg.NewListFunc,
		Codec:               labtest.Codec(),
		Clock:               clock.RealClock{},
	})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.Wait(ctx); err != nil {
		c.Stop()
		b.Fatal(err)
	}
	return c
}

// newUpstreamStore is k8s.io/apiserver@v0.37.0's etcd3 store for pods under
// prefix, with its own etcd client, as `newETCD3Storage` makes one per
// resource (k8s.io/apiserver@v0.37.0/pkg/storage/storagebackend/factory/etcd3.go:455-461).
func newUpstreamStore(b testing.TB, prefix string) (storage.Interface, func()) {
	b.Helper()
	kubeClient, err := etcdkube.New(clientv3.Config{Endpoints: []string{etcdServer.Endpoint}, DialTimeout: 10 * time.Second})
	if err != nil {
		b.Fatal(err)
	}
	codec := labtest.Codec()
	versioner := storage.APIObjectVersioner{}
	newFunc := func() kruntime.Object { return &v1.Pod{} }
	newListFunc := func() kruntime.Object { return &v1.PodList{} }
	store, err := upstreametcd3.New(kubeClient, noCompactor{}, codec, newFunc, newListFunc, "/registry", prefix,
		schema.GroupResource{Resource: "pods"}, identity.NewEncryptCheckTransformer(),
		upstreametcd3.NewDefaultLeaseManagerConfig(), upstreametcd3.NewDefaultDecoder(codec, versioner), versioner)
	if err != nil {
		b.Fatal(err)
	}
	return store, func() {
		// The store's size estimator has a goroutine; Close ends it.
		store.Close()
		kubeClient.Close()
	}
}
