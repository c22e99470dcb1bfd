package informer

// The page size of a relist after a first list that came back in pages:
// ours and client-go's Reflector (k8s.io/client-go@v0.37.0/tools/cache,
// imported side by side) over the same fake server, on a synctest clock.

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
)

// pagingLW is a fakeServer that cannot stream a list (both Reflectors then
// LIST) and, with pages set, answers any LIST that has a limit two objects
// at a time, as a server without a watch cache for the resource does. It
// records the LIST options each Reflector asked for.
type pagingLW struct {
	*fakeServer
	pages bool
	mu    sync.Mutex
	asked []metav1.ListOptions
}

func (l *pagingLW) IsWatchListSemanticsUnSupported() bool { return true }

func (l *pagingLW) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	l.mu.Lock()
	l.asked = append(l.asked, opts)
	l.mu.Unlock()
	if l.pages && opts.Limit > 0 {
		opts.Limit = 2
	}
	return l.fakeServer.ListWithContext(ctx, opts)
}

func (l *pagingLW) List(opts metav1.ListOptions) (runtime.Object, error) {
	return l.ListWithContext(context.Background(), opts)
}

// lists is what was asked, one "rv=… limit=… continue=…" string per LIST.
func (l *pagingLW) lists() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, o := range l.asked {
		out = append(out, fmt.Sprintf("rv=%q limit=%d continue=%t", o.ResourceVersion, o.Limit, o.Continue != ""))
	}
	return out
}

// pagingScenario runs run (one Reflector over lw) in a bubble: three
// ConfigMaps, the first sync, then a 410 that sends the Reflector back to a
// LIST at its resourceVersion, 3. It returns the first LISTs asked for.
func pagingScenario(t *testing.T, pages bool, run func(ctx context.Context, lw *pagingLW)) []string {
	var got []string
	synctest.Test(t, func(t *testing.T) {
		srv := newFakeServer(nil)
		for _, n := range []string{"a", "b", "c"} {
			srv.create(n, "1")
		}
		lw := &pagingLW{fakeServer: srv, pages: pages}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { defer close(done); run(ctx, lw) }()
		synctest.Wait()
		srv.expire()
		elapse(2 * time.Second) // fake time (synctest): past one backoff step, jitter included; no wall-clock wait
		synctest.Wait()
		cancel()
		<-done
		got = lw.lists()
	})
	return got
}

func ourPagingReflector(ctx context.Context, lw *pagingLW) {
	NewReflector(lw, NewRealFIFO(nil), ReflectorOptions{}).Run(ctx)
}

func clientGoPagingReflector(ctx context.Context, lw *pagingLW) {
	r := cache.NewReflectorWithOptions(lw, &corev1.ConfigMap{}, cache.NewStore(cache.MetaNamespaceKeyFunc), cache.ReflectorOptions{})
	r.RunWithContext(ctx)
}

// pagingWant: the first list at "0" in pages of 500 (the server gives 2);
// the relist at 3 keeps the limit if the first list was paginated, and
// drops it (to be served from the watch cache) if it was not.
var pagingWant = map[bool][]string{
	true:  {`rv="0" limit=500 continue=false`, `rv="" limit=500 continue=true`, `rv="3" limit=500 continue=false`},
	false: {`rv="0" limit=500 continue=false`, `rv="3" limit=0 continue=false`},
}

func checkPaging(t *testing.T, who string, pages bool, got []string) {
	t.Helper()
	want := pagingWant[pages]
	if len(got) < len(want) || !equalStrings(got[:len(want)], want) {
		t.Errorf("%s, first list paginated=%t: LISTs %q, want them to begin %q", who, pages, got, want)
	}
}

// TestReflectorKeepsPagingAfterPaginatedFirstList: our Reflector remembers
// that its first list (at "0") came back in pages and keeps the limit when
// it relists at a resourceVersion; without pages it drops the limit there.
func TestReflectorKeepsPagingAfterPaginatedFirstList(t *testing.T) {
	for _, pages := range []bool{true, false} {
		checkPaging(t, "ours", pages, pagingScenario(t, pages, ourPagingReflector))
	}
}

// TestClientGoReflectorKeepsPagingAfterPaginatedFirstList: client-go's
// Reflector asks for the same LISTs as ours in the same two cases
// (its paginatedResult).
func TestClientGoReflectorKeepsPagingAfterPaginatedFirstList(t *testing.T) {
	for _, pages := range []bool{true, false} {
		checkPaging(t, "client-go", pages, pagingScenario(t, pages, clientGoPagingReflector))
	}
}
