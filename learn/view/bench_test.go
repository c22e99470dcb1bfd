package main

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
)

// BenchmarkViewBehindAt1000WritesPerSecond measures how far the page's
// state lags the stack while writes arrive at 1,000 a second, and whether
// the view's memory stays bounded. Each iteration is one second of writes:
// merge patches of 1,000 ConfigMaps made beforehand, round robin, from 8
// writers paced to 1,000 a second in all. So `-benchtime 10x` is a 10 s
// burst and `-benchtime 60x` a one-minute one:
//
//	go test -run '^$' -bench ViewBehind -benchtime 60x ./view/
//
// "Behind" is read as the page reads it: from the state stream
// (/api/events, at most ten snapshots a second). A snapshot shows the
// Indexer at some resourceVersion R; the oldest write answered before the
// snapshot arrived whose RV is above R is the oldest the page does not
// show yet, and behind is the snapshot's arrival minus that answer's time
// (0 when there is none). Resource versions, not counts: a watcher cut off
// and resumed, or a relist, may merge events, never skip an RV. Memory
// is the Go heap of the whole process (etcd, the API server, the informer
// and the view are one process), sampled once a second after a GC.
//
// Reported: achieved writes/s, behind p50/p99/max, heap at the end of the
// first iteration and peak, and log entries kept.
func BenchmarkViewBehindAt1000WritesPerSecond(b *testing.B) {
	const objects, rate, writers = 1000, 1000, 8
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	log := &eventLog{}
	s, err := startStack(ctx, log, "", "")
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	if n, err := s.Burst(ctx, objects); err != nil || n != objects {
		b.Fatalf("burst: %d of %d: %v", n, objects, err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return s.inf.Status().Objects == objects, nil
	}); err != nil {
		b.Fatal("the informer never held the ConfigMaps made beforehand")
	}
	names := s.inf.GetIndexer().ListKeys()
	slices.Sort(names)
	for i, k := range names {
		names[i] = k[strings.IndexByte(k, '/')+1:]
	}

	ln, err := listen("127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := &http.Server{Handler: newHandler(ctx, s, ln.Addr().String())}
	go srv.Serve(ln)
	defer srv.Close()

	// The page's side: every snapshot of the stream, when it arrived and
	// how many updates its handler panel shows.
	type seen struct {
		at time.Time
		rv uint64
	}
	var seenMu sync.Mutex
	var snapshots []seen
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+ln.Addr().String()+"/api/events", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	go func() {
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok {
				continue
			}
			var v ViewState
			if json.Unmarshal([]byte(data), &v) != nil {
				continue
			}
			seenMu.Lock()
			rv, _ := strconv.ParseUint(v.Informer.StoreRV, 10, 64)
			snapshots = append(snapshots, seen{time.Now(), rv})
			seenMu.Unlock()
		}
	}()

	// The writers' side: each answer's RV and when it came.
	type answer struct {
		rv uint64
		at time.Time
	}
	var answersMu sync.Mutex
	var answers []answer
	var heapPeak, heapFirst uint64
	var heaps []uint64 // after each second
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	cms := s.client.CoreV1().ConfigMaps(namespace)
	tokens := make(chan int, rate)
	var wg sync.WaitGroup
	for range writers {
		wg.Go(func() {
			for i := range tokens {
				patch := fmt.Appendf(nil, `{"data":{"v":"%d"}}`, i)
				cm, err := cms.Patch(ctx, names[i%objects], types.MergePatchType, patch, metav1.PatchOptions{})
				if err != nil {
					b.Error(err)
					continue
				}
				rv, _ := strconv.ParseUint(cm.ResourceVersion, 10, 64)
				answersMu.Lock()
				answers = append(answers, answer{rv, time.Now()})
				answersMu.Unlock()
			}
		})
	}
	pace := time.NewTicker(time.Millisecond)
	defer pace.Stop()
	start := time.Now()
	sent := 0
	for it := 0; b.Loop(); it++ {
		// One second: hand out tokens as the clock goes, 1,000 in all.
		second := start.Add(time.Duration(it) * time.Second)
		for sent < (it+1)*rate {
			due := (it * rate) + int(time.Since(second)*rate/time.Second)
			for sent < min(due, (it+1)*rate) {
				tokens <- sent
				sent++
			}
			<-pace.C
		}
		h := heap()
		heaps = append(heaps, h)
		if it == 0 {
			heapFirst = h
		} else {
			heapPeak = max(heapPeak, h)
		}
	}
	close(tokens)
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	// Let the page catch up with the last write, then compute.
	var last uint64
	for _, a := range answers {
		last = max(last, a.rv)
	}
	wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		seenMu.Lock()
		defer seenMu.Unlock()
		return len(snapshots) > 0 && snapshots[len(snapshots)-1].rv >= last, nil
	})
	seenMu.Lock()
	defer seenMu.Unlock()
	// In RV order, with the earliest answer time among the RVs above each.
	slices.SortFunc(answers, func(x, y answer) int { return cmp.Compare(x.rv, y.rv) })
	var behind []time.Duration
	for _, sn := range snapshots {
		if sn.at.Before(start) {
			continue
		}
		// The oldest write above the snapshot's RV answered before it came.
		i, _ := slices.BinarySearchFunc(answers, sn.rv+1, func(a answer, rv uint64) int { return cmp.Compare(a.rv, rv) })
		oldest := time.Time{}
		for _, a := range answers[i:] {
			if !a.at.After(sn.at) && (oldest.IsZero() || a.at.Before(oldest)) {
				oldest = a.at
			}
		}
		if oldest.IsZero() {
			behind = append(behind, 0)
			continue
		}
		behind = append(behind, sn.at.Sub(oldest))
	}
	if len(behind) == 0 {
		b.Fatal("no snapshot of the page arrived during the burst")
	}
	slices.Sort(behind)
	pick := func(q float64) float64 { return float64(behind[int(q*float64(len(behind)-1))].Microseconds()) / 1000 }
	b.ReportMetric(float64(len(answers))/elapsed.Seconds(), "writes/s")
	b.ReportMetric(pick(0.5), "behind-p50-ms")
	b.ReportMetric(pick(0.99), "behind-p99-ms")
	b.ReportMetric(pick(1), "behind-max-ms")
	b.ReportMetric(float64(heapFirst)/(1<<20), "heap-first-s-MB")
	b.ReportMetric(float64(max(heapPeak, heapFirst))/(1<<20), "heap-peak-MB")
	// The heap's course: after the first and second half of the run.
	if n := len(heaps); n >= 4 {
		b.ReportMetric(float64(heaps[n/2-1])/(1<<20), "heap-half-MB")
		b.ReportMetric(float64(heaps[n-1])/(1<<20), "heap-end-MB")
	}
	// What holds most of it: lab 04's watch cache ring, which grows to keep
	// the last 75 s of events (within its cap), each with its object.
	if st, ok := s.mini.State("configmaps"); ok {
		b.ReportMetric(float64(st.Ring.Len), "ring-events")
		b.ReportMetric(float64(st.Ring.Capacity), "ring-capacity")
	}
	notes, events := log.recent(logKept + 1)
	b.ReportMetric(float64(len(notes)+len(events)), "log-entries")
	b.ReportMetric(0, "ns/op") // one op is one second by construction
}
