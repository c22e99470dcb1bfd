package informer

// TestDifferentialRecorded: the event sequences recorded from a real
// apiserver (../testdata/recorded, written by TestRecordFixtures) replayed
// to our SharedIndexInformer and to client-go's, which must make the same
// calls the recording has, and give every handler the same calls and the
// cache the same content. Unlike TestDifferentialRandomScenarios (the fake
// server's idea of an apiserver) and TestDifferentialAgainstCluster in
// ../differential_cluster_test.go (a live cluster, no 410s), these are the
// apiserver's own answers, 410 and relist included, with no cluster needed.
//
// Upstream's nearest twin of replayListerWatcher is FakeControllerSource
// (k8s.io/client-go@v0.37.0/tools/cache/testing/fake_controller_source.go),
// which serves what a test writes into it; this one serves only what a
// real apiserver once answered, and refuses any call the recording lacks.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/listwatch-labs/listwatch-labs/labkit"
)

// replayListerWatcher is a fake ListerWatcher that answers the n-th LIST or
// WATCH call with the n-th call of a recording: a LIST its items and
// resourceVersion, a WATCH its events, then the end it had (closed after
// as long as it lasted, on the bubble's fake clock; or left open until
// the caller stops it). A call whose verb or options differ from the
// recorded one is a divergence: the replay stops answering and says where,
// rather than guess what the server would have said.
type replayListerWatcher struct {
	withoutContext // List and Watch, for client-go's NewSharedIndexInformer

	fx *fixture
	// onCall, if set, runs in the caller's goroutine before call n
	// (0-based) is answered.
	onCall func(n int)

	// mu guards next and failure.
	mu       sync.Mutex
	next     int
	failure  string
	done     chan struct{} // closed when the last call is answered in full, or on a divergence
	doneOnce sync.Once
}

var errReplayDiverged = errors.New("replayListerWatcher: the caller left the recording")

func newReplayListerWatcher(fx *fixture) *replayListerWatcher {
	r := &replayListerWatcher{fx: fx, done: make(chan struct{})}
	r.withoutContext.lw = r
	return r
}

// IsWatchListSemanticsUnSupported: a recording made without the streaming
// list is replayed to Reflectors that do not stream either (client-go:
// watchlist.DoesClientNotSupportWatchListSemantics; ours: the same check).
func (r *replayListerWatcher) IsWatchListSemanticsUnSupported() bool {
	return r.fx.header.StreamingList == nil || !*r.fx.header.StreamingList
}

func (r *replayListerWatcher) finish() { r.doneOnce.Do(func() { close(r.done) }) }

// diverged is the divergence, or "".
func (r *replayListerWatcher) diverged() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.failure
}

// take returns the recorded call that answers this one.
func (r *replayListerWatcher) take(verb string, opts metav1.ListOptions) (*recordedCall, error) {
	r.mu.Lock()
	n := r.next
	r.next++
	if r.failure != "" {
		r.mu.Unlock()
		return nil, errReplayDiverged
	}
	got := callKey(verb, opts)
	switch {
	case n >= len(r.fx.calls):
		r.failure = fmt.Sprintf("call %d is %s, but the recording has only %d calls", n+1, got, len(r.fx.calls))
	case got != r.fx.calls[n].String():
		r.failure = fmt.Sprintf("call %d is %s, but the recording (line %d) has %s", n+1, got, r.fx.calls[n].line, r.fx.calls[n])
	}
	failed := r.failure != ""
	r.mu.Unlock()
	if failed {
		r.finish()
		return nil, errReplayDiverged
	}
	if r.onCall != nil {
		r.onCall(n)
	}
	return r.fx.calls[n], nil
}

func (r *replayListerWatcher) calls() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.next
}

func (r *replayListerWatcher) isLast(c *recordedCall) bool { return c == r.fx.calls[len(r.fx.calls)-1] }

func (r *replayListerWatcher) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	c, err := r.take("LIST", opts)
	if err != nil {
		return nil, err
	}
	if r.isLast(c) {
		defer r.finish()
	}
	if c.err != nil {
		return nil, c.err
	}
	list := &corev1.ConfigMapList{ListMeta: metav1.ListMeta{ResourceVersion: c.end.ResourceVersion, Continue: c.end.Continue}}
	for _, item := range c.items {
		list.Items = append(list.Items, *item.DeepCopy())
	}
	return list, nil
}

func (r *replayListerWatcher) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	start := time.Now() // the bubble's clock
	c, err := r.take("WATCH", opts)
	if err != nil {
		return nil, err
	}
	if c.err != nil {
		if r.isLast(c) {
			r.finish()
		}
		return nil, c.err
	}
	w := &replayWatch{result: make(chan watch.Event), stopped: make(chan struct{})}
	go func() {
		defer close(w.result)
		for _, ev := range c.events {
			select {
			case w.result <- watch.Event{Type: ev.Type, Object: ev.Object.DeepCopyObject()}:
			case <-w.stopped:
				return
			case <-ctx.Done():
				return
			}
		}
		if r.isLast(c) {
			r.finish()
		}
		var closeAt <-chan time.Time // nil: stay open until stopped
		if c.end.End == endClosedByServer || c.end.End == endCut {
			closeAt = time.After(c.after - time.Since(start))
		}
		select {
		case <-closeAt:
		case <-w.stopped:
		case <-ctx.Done():
		}
	}()
	return w, nil
}

// withoutContext gives a ListerWatcherWithContext the List and Watch of a
// cache.ListerWatcher, which client-go's NewSharedIndexInformer takes (it
// then calls the WithContext methods: cache.ToListerWatcherWithContext).
// Embedded, it keeps the embedding type's own methods visible, such as
// IsWatchListSemanticsUnSupported.
type withoutContext struct {
	lw cache.ListerWatcherWithContext
}

func (w withoutContext) List(opts metav1.ListOptions) (runtime.Object, error) {
	return w.lw.ListWithContext(context.Background(), opts)
}

func (w withoutContext) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return w.lw.WatchWithContext(context.Background(), opts)
}

type replayWatch struct {
	result   chan watch.Event
	stopped  chan struct{}
	stopOnce sync.Once
}

func (w *replayWatch) Stop()                          { w.stopOnce.Do(func() { close(w.stopped) }) }
func (w *replayWatch) ResultChan() <-chan watch.Event { return w.result }

// runReplay replays fx to one informer in a synctest bubble, so that the
// backoff after a 410 and the time a watch stayed open pass on the fake
// clock. Before each call is answered, everything the previous calls
// caused has reached the handlers (synctest.Wait), and the handlers'
// segments are cut there: segment k is what call k caused. A second
// handler is added before the second call is answered.
func runReplay(t *testing.T, fx *fixture, newInformer func(listerWatcher) informerUnderTest) (res diffResult, divergence string) {
	synctest.Test(t, func(t *testing.T) {
		lw := newReplayListerWatcher(fx)
		inf := newInformer(lw)
		handlers := &handlerSet{inf: inf}
		handlers.add()
		lw.onCall = func(n int) {
			synctest.Wait()
			handlers.cut()
			if n == 1 {
				handlers.add()
			}
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); inf.run(ctx) }()
		select {
		case <-lw.done:
		case <-time.After(time.Hour): // the bubble's clock: passes at once when all else waits
			divergence = fmt.Sprintf("stalled: after an hour (fake time) the caller had made %d of the %d recorded calls", lw.calls(), len(fx.calls))
		}
		synctest.Wait()
		handlers.cut()
		res = handlers.result()
		if divergence == "" {
			divergence = lw.diverged()
		}
		cancel()
		<-done
	})
	return res, divergence
}

// recordedClaims are the fixtures and what each must show; a fixture
// missing from here, or claiming something else in its header, fails.
var recordedClaims = map[string][]string{
	"churn":        {"streaming list", "bookmark", "watch closed by the server", "rewatch from a resourceVersion", "DELETED", "no final state unknown"},
	"compaction":   {"streaming list", "watch cut", "rewatch from a resourceVersion", "DELETED", "no final state unknown"},
	"restart":      {"streaming list", "watch cut", "410 Expired", "relist", "final state unknown"},
	"restart-list": {"LIST", "watch cut", "410 Expired", "relist", "final state unknown"},
	"restart-live": {"streaming list", "call error", "410 Expired", "relist"},
}

func TestDifferentialRecorded(t *testing.T) {
	labkit.ChecksExercise(t, "relist-final-state-unknown")
	paths, err := filepath.Glob(filepath.Join(recordedDir, "*.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]bool{}
	for _, path := range paths {
		name := strings.TrimSuffix(filepath.Base(path), ".jsonl")
		found[name] = true
		t.Run(name, func(t *testing.T) {
			fx, err := readFixture(path)
			if err != nil {
				t.Fatal(err)
			}
			want, ok := recordedClaims[name]
			if !ok {
				t.Fatalf("%s: no claims for it in recordedClaims: say what it shows", path)
			}
			if got := strings.Join(fx.header.Contains, ", "); got != strings.Join(want, ", ") {
				t.Fatalf("%s claims %q; the test expects %q", path, got, strings.Join(want, ", "))
			}
			if missing := checkClaims(fx); len(missing) > 0 {
				t.Fatalf("%s does not show %s: record it again (see its header)", path, strings.Join(missing, ", "))
			}
			ours, oursDiverged := runReplay(t, fx, ourInformer)
			theirs, theirsDiverged := runReplay(t, fx, clientGoInformer)
			if theirsDiverged != "" {
				t.Fatalf("client-go's informer left the recording (the recorder, or client-go, changed?): %s", theirsDiverged)
			}
			if oursDiverged != "" {
				t.Fatalf("our informer left the recording that client-go's follows: %s", oursDiverged)
			}
			for _, d := range ours.diff(theirs) {
				t.Error(d)
			}
			unknown := strings.Contains(strings.Join(theirs.handlers, ""), "(final state unknown)")
			for _, c := range want {
				if (c == "final state unknown" && !unknown) || (c == "no final state unknown" && unknown) {
					t.Errorf("%s claims %q, but the handlers got:\n%s", path, c, theirs.handlers[0])
				}
			}
			if testing.Verbose() {
				t.Logf("%s: %d calls replayed; the first handler got:\n%s", name, len(fx.calls), theirs.handlers[0])
			}
		})
	}
	for name := range recordedClaims {
		if !found[name] {
			t.Errorf("%s/%s.jsonl is missing (record it: see TestRecordFixtures)", recordedDir, name)
		}
	}
	if _, err := os.Stat(recordedDir); err != nil {
		t.Error(err)
	}
}
