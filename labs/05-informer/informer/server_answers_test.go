package informer

// Two answers of a 1.37 apiserver that change what a Reflector does, on our
// Reflector and client-go's (k8s.io/client-go@v0.37.0/tools/cache, imported
// side by side) over the same fake server, on a synctest clock:
//
//   - 422 to a streaming list, from a server whose WatchList gate is off
//     (`NewInvalid`: k8s.io/apiserver@v0.37.0/pkg/endpoints/handlers/get.go:217-220);
//   - 429 to a watch, from a restarted server whose watch cache is not
//     ready yet (`NewTooManyRequests`: k8s.io/apiserver@v0.37.0/pkg/storage/cacher/cacher.go:532-533).

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// answeringLW is a fakeServer that records every request, as
// "LIST rv=…" or "WATCH rv=… initial=…", and can refuse some:
// noWatchList answers every streaming list with the apiserver's 422, and
// throttled answers the next plain watches with 429 and Retry-After 1.
type answeringLW struct {
	*fakeServer
	noWatchList bool
	mu          sync.Mutex
	throttled   int
	log         []string
}

func (l *answeringLW) note(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.log = append(l.log, s)
}

func (l *answeringLW) requests() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.log...)
}

func (l *answeringLW) throttle(n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.throttled = n
}

func (l *answeringLW) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	l.note(fmt.Sprintf("LIST rv=%q", opts.ResourceVersion))
	return l.fakeServer.ListWithContext(ctx, opts)
}

func (l *answeringLW) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	initial := opts.SendInitialEvents != nil && *opts.SendInitialEvents
	l.note(fmt.Sprintf("WATCH rv=%q initial=%t", opts.ResourceVersion, initial))
	if initial && l.noWatchList {
		// What kube-apiserver answers when its WatchList gate is off.
		return nil, apierrors.NewInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: "ListOptions"}, "", field.ErrorList{
			field.Forbidden(field.NewPath("sendInitialEvents"), "sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled"),
		})
	}
	l.mu.Lock()
	refuse := !initial && l.throttled > 0
	if refuse {
		l.throttled--
	}
	l.mu.Unlock()
	if refuse {
		// What a restarted kube-apiserver answers while its watch cache
		// is not ready (a gate, ResilientWatchCacheInitialization, until 1.37;
		// always since).
		return nil, apierrors.NewTooManyRequests("storage is (re)initializing", 1)
	}
	return l.fakeServer.WatchWithContext(ctx, opts)
}

func (l *answeringLW) List(opts metav1.ListOptions) (runtime.Object, error) {
	return l.ListWithContext(context.Background(), opts)
}

func (l *answeringLW) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return l.WatchWithContext(context.Background(), opts)
}

var bothReflectors = []struct {
	name string
	run  func(ctx context.Context, lw *answeringLW)
}{
	{"ours", func(ctx context.Context, lw *answeringLW) {
		NewReflector(lw, NewRealFIFO(nil), ReflectorOptions{}).Run(ctx)
	}},
	{"client-go", func(ctx context.Context, lw *answeringLW) {
		cache.NewReflectorWithOptions(lw, &corev1.ConfigMap{}, cache.NewStore(cache.MetaNamespaceKeyFunc), cache.ReflectorOptions{}).RunWithContext(ctx)
	}},
}

func runInBubble(t *testing.T, lw *answeringLW, run func(ctx context.Context, lw *answeringLW)) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); run(ctx, lw) }()
	t.Cleanup(func() { cancel(); <-done })
}

// TestReflectorsFallBackToListOn422: a server with WatchList off answers the
// streaming list with 422 Invalid; both Reflectors LIST instead (at "0",
// the first time), then watch from the list's resourceVersion. Each round
// tries the streaming list again first.
func TestReflectorsFallBackToListOn422(t *testing.T) {
	for _, impl := range bothReflectors {
		t.Run(impl.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := newFakeServer(nil)
				srv.create("a", "1")
				lw := &answeringLW{fakeServer: srv, noWatchList: true}
				runInBubble(t, lw, impl.run)
				synctest.Wait()
				want := []string{`WATCH rv="" initial=true`, `LIST rv="0"`, `WATCH rv="1" initial=false`}
				if got := lw.requests(); !equalStrings(got, want) {
					t.Errorf("requests %q, want %q", got, want)
				}
			})
		})
	}
}

// TestReflectorsRewatchAfter429: the watch ends (the apiserver went away)
// and the restarted apiserver answers the next two watches with 429, as
// its watch cache is not ready. Both Reflectors back off and watch again
// from the same resourceVersion: no LIST, no streaming list, nothing lost.
// (Over a real connection client-go's REST client first retries a 429 with
// a Retry-After itself; this fake ListerWatcher hands the Reflector the 429
// at once, as it gets it when those retries run out.)
func TestReflectorsRewatchAfter429(t *testing.T) {
	for _, impl := range bothReflectors {
		t.Run(impl.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := newFakeServer(nil)
				srv.create("a", "1")
				lw := &answeringLW{fakeServer: srv}
				runInBubble(t, lw, impl.run)
				synctest.Wait()
				elapse(time.Minute) // a watch that lived (a very short one would relist)
				lw.throttle(2)
				srv.endWatches()
				elapse(10 * time.Second) // two backoff steps, jitter included
				synctest.Wait()
				want := []string{
					`WATCH rv="" initial=true`,
					`WATCH rv="1" initial=false`, // 429
					`WATCH rv="1" initial=false`, // 429
					`WATCH rv="1" initial=false`,
				}
				if got := lw.requests(); !equalStrings(got, want) {
					t.Errorf("requests %q, want %q", got, want)
				}
			})
		})
	}
}
