package listwatcher

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/listwatch-labs/listwatch-labs/labkit"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	clocktesting "k8s.io/utils/clock/testing"
)

// runLoop runs ListAndWatch against f until it has reported a step
// matching stopAt, then returns every step as a line.
func runLoop(t *testing.T, f *fakeAPIServer, opts Options, stopAt string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	opts.InitialBackoff = time.Millisecond // keep the test short; the waits are not what we test
	var steps []string
	err := ListAndWatch(ctx, f.listWatch("ns"), opts, func(s Step) {
		line := describe(s)
		steps = append(steps, line)
		if strings.HasPrefix(line, stopAt) {
			cancel()
		}
	})
	if err != context.Canceled {
		t.Fatalf("ListAndWatch = %v after steps:\n%s", err, strings.Join(steps, "\n"))
	}
	f.srv.Client().CloseIdleConnections()
	return steps
}

func describe(s Step) string {
	switch s.Op {
	case StepList:
		items, _ := meta.ExtractList(s.List)
		return fmt.Sprintf("LIST rv=%s items=%d", s.ResourceVersion, len(items))
	case StepEvent:
		if s.Event.Type == watch.Error {
			return fmt.Sprintf("ERROR %v", StatusError(s.Event.Object))
		}
		m, _ := meta.Accessor(s.Event.Object)
		return fmt.Sprintf("%s %s rv=%s -> resume at %s", s.Event.Type, m.GetName(), m.GetResourceVersion(), s.ResourceVersion)
	case StepBackoff:
		if code := apierrors.ReasonForError(s.Err); code != "" {
			if code == metav1.StatusReasonBadRequest {
				// The fake's own complaint (a WATCH where the test
				// queued a LIST): say it in full.
				return fmt.Sprintf("BACKOFF %s: %v", code, s.Err)
			}
			return fmt.Sprintf("BACKOFF %s", code)
		}
		return "BACKOFF " + s.Err.Error()
	case StepRelist:
		return fmt.Sprintf("RELIST %s", apierrors.ReasonForError(s.Err))
	case StepWatchEnd:
		if s.Err != nil {
			return fmt.Sprintf("WATCH-END rv=%s %s", s.ResourceVersion, apierrors.ReasonForError(s.Err))
		}
		return fmt.Sprintf("WATCH-END rv=%s", s.ResourceVersion)
	}
	return fmt.Sprintf("%s rv=%s", s.Op, s.ResourceVersion)
}

// TestListAndWatch walks the loop through every seam: a clean end of a
// watch, a bookmark moving the RV, 410, a server answering 503, a
// connection cut mid-frame (which ends the watch as silently as a timeout),
// a frame that is not a watch event.
func TestListAndWatch(t *testing.T) {
	labkit.ChecksExercise(t, "relist-on-410")
	f := newFakeAPIServer(t,
		answer(200, list("10", "", "a")),
		stream(cm("ADDED", "b", "11"), bookmark("15", false)), // then the server ends the watch
		stream(expired), // the watch from 15: too old
		answer(200, list("20", "", "a", "b")),
		answer(503, "apiserver shutting down"),
		cut(cm("MODIFIED", "b", "21")),         // the connection drops mid-frame
		stream("<html>502 Bad Gateway</html>"), // a proxy's answer, not a watch event
	)
	f.handlers = append(f.handlers, f.hold(cm("DELETED", "a", "22")))
	got := runLoop(t, f, Options{AllowWatchBookmarks: true}, "DELETED")
	want := []string{
		"LIST rv=10 items=1",
		"WATCH rv=10",
		"ADDED b rv=11 -> resume at 11",
		"BOOKMARK  rv=15 -> resume at 15",
		"WATCH-END rv=15",
		"WATCH rv=15",
		`ERROR too old resource version: 15 (18)`,
		"WATCH-END rv=15 Expired",
		"RELIST Expired",
		"LIST rv=20 items=2",
		"BACKOFF ServiceUnavailable",
		"WATCH rv=20",
		"MODIFIED b rv=21 -> resume at 21",
		"WATCH-END rv=21", // cut mid-frame: silent, as upstream; rewatch at once
		"WATCH rv=21",
		`ERROR an error on the server ("unable to decode an event from the watch stream: frame is not a watch event (invalid character '<' looking for beginning of value): \"<html>502 Bad Gateway</html>\"") has prevented the request from succeeding`,
		"WATCH-END rv=21 InternalError",
		"BACKOFF InternalError",
		"WATCH rv=21",
		"DELETED a rv=22 -> resume at 22",
	}
	if d := labkit.Diff(strings.Join(want, "\n"), strings.Join(got, "\n")); d != "" {
		t.Fatalf("the loop's steps are not the expected ones; %s", d)
	}
	reqs := f.Requests()
	for i, wantRV := range map[int]string{1: "resourceVersion=10&", 2: "resourceVersion=15&", 5: "resourceVersion=20&", 6: "resourceVersion=21&"} {
		if !strings.Contains(reqs[i], wantRV) {
			t.Errorf("request %d = %s, want %s", i, reqs[i], wantRV)
		}
	}
}

// TestListAndWatchUnreachable: with nothing listening, the loop backs off
// with the Reflector's delays (800ms doubling up to 30s, plus up to 100%
// jitter) and keeps trying. The waits are timed by a fake clock
// (k8s.io/utils/clock/testing): the test proves that the loop does not try
// again before its delay has passed, and does once it has, without waiting
// 2 minutes of wall-clock time.
func TestListAndWatchUnreachable(t *testing.T) {
	labkit.ChecksExercise(t, "backoff-delay")
	f := newFakeAPIServer(t)
	f.srv.Close() // nothing listens on its port any more
	fakeClock := clocktesting.NewFakeClock(time.Now())
	ctx, cancel := context.WithCancel(context.Background())
	steps := make(chan Step)
	done := make(chan error)
	go func() {
		done <- ListAndWatch(ctx, f.listWatch("ns"), Options{Clock: fakeClock}, func(s Step) {
			select {
			case steps <- s:
			case <-ctx.Done():
			}
		})
	}()
	defer func() {
		cancel()
		if err := <-done; err != context.Canceled {
			t.Errorf("ListAndWatch = %v, want context.Canceled", err)
		}
	}()

	next := func() Step {
		t.Helper()
		select {
		case s := <-steps:
			return s
		case <-time.After(30 * time.Second): // a deadline for a hung loop, not a wait
			t.Fatal("no step in 30s")
		}
		return Step{}
	}
	// waitingOnClock polls (with a deadline) until the loop has set its
	// backoff timer on the fake clock.
	waitingOnClock := func() {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for !fakeClock.HasWaiters() {
			if time.Now().After(deadline) {
				t.Fatal("the loop never waited on the clock")
			}
			runtime.Gosched()
		}
	}

	bases := []time.Duration{800 * time.Millisecond, 1600 * time.Millisecond, 3200 * time.Millisecond,
		6400 * time.Millisecond, 12800 * time.Millisecond, 25600 * time.Millisecond, 30 * time.Second, 30 * time.Second}
	var onBase []string // the delays that were exactly their base: no random part
	for i, base := range bases {
		s := next()
		if s.Op != StepBackoff || !strings.Contains(s.Err.Error(), "connection refused") {
			t.Fatalf("step %d: %s %v, want BACKOFF connection refused", i, s.Op, s.Err)
		}
		if s.Delay < base || s.Delay > 2*base {
			t.Errorf("delay %d = %v, want in [%v, %v]", i, s.Delay, base, 2*base)
		}
		if s.Delay == base {
			onBase = append(onBase, s.Delay.String())
		}
		waitingOnClock()
		// One nanosecond short of the delay, the loop still waits...
		fakeClock.Step(s.Delay - time.Nanosecond)
		if !fakeClock.HasWaiters() {
			t.Fatalf("attempt %d: the loop stopped waiting %v early", i+1, time.Nanosecond)
		}
		// ...and at the delay it tries again (the next step is its failure).
		fakeClock.Step(time.Nanosecond)
	}
	// A random part on top of each base spreads out clients that failed
	// at the same moment. Drawn at random, it would have to be exactly
	// zero every time for every delay to sit on its base.
	if len(onBase) == len(bases) {
		t.Errorf("every delay was exactly its base (%s): want each one some random amount above it (jitter), so that clients that failed together do not all retry together", strings.Join(onBase, ", "))
	}
}

// TestListAndWatchStreamingList: objects of the initial list arrive in key
// order with unordered RVs; the RV to resume from is the bookmark's.
func TestListAndWatchStreamingList(t *testing.T) {
	labkit.ChecksExercise(t, "resume-rv")
	f := newFakeAPIServer(t,
		stream(cm("ADDED", "a", "7"), cm("ADDED", "b", "3"), bookmark("9", true), cm("MODIFIED", "a", "10")),
	)
	f.handlers = append(f.handlers, f.hold(cm("DELETED", "b", "11")))
	got := runLoop(t, f, Options{WatchList: true}, "DELETED")
	want := []string{
		"WATCH rv=",
		"ADDED a rv=7 -> resume at ",
		"ADDED b rv=3 -> resume at ",
		"BOOKMARK  rv=9 -> resume at 9",
		"MODIFIED a rv=10 -> resume at 10",
		"WATCH-END rv=10",
		"WATCH rv=10",
		"DELETED b rv=11 -> resume at 11",
	}
	if d := labkit.Diff(strings.Join(want, "\n"), strings.Join(got, "\n")); d != "" {
		t.Fatalf("the loop's steps are not the expected ones; %s", d)
	}
	if r := f.Requests()[0]; !strings.Contains(r, "resourceVersionMatch=NotOlderThan&sendInitialEvents=true") || strings.Contains(r, "resourceVersion=&") {
		t.Errorf("streaming list request %s", r)
	}
}
