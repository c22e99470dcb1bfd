package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"runtime"
	"slices"
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
// (/api/events, at most ten snapshots a second). When a snapshot shows the
// handler with u updates and the writers have had m > u answered, the
// (u+1)th answer is the oldest write the page does not show yet; behind is
// the snapshot's arrival minus that answer's time (0 when u >= m). Memory
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
	s, err := startStack(ctx, log, "")
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
		at      time.Time
		updates int64
	}
	var seenMu sync.Mutex
	var snapshots []seen
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+ln.Addr().String()+"/api/events", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	startUpdates := s.handlerUpdates()
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
			snapshots = append(snapshots, seen{time.Now(), v.Informer.Handler.Updates - startUpdates})
			seenMu.Unlock()
		}
	}()

	// The writers' side: when each answer came.
	var answersMu sync.Mutex
	var answers []time.Time
	var heapPeak, heapFirst uint64
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
				if _, err := cms.Patch(ctx, names[i%objects], types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
					b.Error(err)
					continue
				}
				answersMu.Lock()
				answers = append(answers, time.Now())
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
		if h := heap(); it == 0 {
			heapFirst = h
		} else {
			heapPeak = max(heapPeak, h)
		}
	}
	close(tokens)
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	// Let the page catch up with the last writes, then compute.
	want := int64(len(answers))
	wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		seenMu.Lock()
		defer seenMu.Unlock()
		return len(snapshots) > 0 && snapshots[len(snapshots)-1].updates >= want, nil
	})
	seenMu.Lock()
	defer seenMu.Unlock()
	slices.SortFunc(answers, func(x, y time.Time) int { return x.Compare(y) })
	var behind []time.Duration
	for _, sn := range snapshots {
		if sn.at.Before(start) {
			continue
		}
		// Answers before this snapshot arrived that it does not show yet.
		m := int64(countUpTo(answers, sn.at))
		if sn.updates >= m {
			behind = append(behind, 0)
			continue
		}
		behind = append(behind, sn.at.Sub(answers[sn.updates]))
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
	notes, events := log.recent(logKept + 1)
	b.ReportMetric(float64(len(notes)+len(events)), "log-entries")
	b.ReportMetric(0, "ns/op") // one op is one second by construction
}

// countUpTo returns how many of the sorted times are not after t.
func countUpTo(times []time.Time, t time.Time) int {
	i, _ := slices.BinarySearchFunc(times, t, func(x, y time.Time) int {
		if x.After(y) {
			return 1
		}
		return -1
	})
	return i
}

// handlerUpdates is the handler's OnUpdate count so far.
func (s *Stack) handlerUpdates() int64 {
	s.handler.mu.Lock()
	defer s.handler.mu.Unlock()
	return s.handler.updates
}
