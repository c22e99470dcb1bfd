package etcd3_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/storage"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/listwatch-labs/listwatch-labs/labs/04-cacher/etcd3"
	"github.com/listwatch-labs/listwatch-labs/labs/04-cacher/internal/labtest"
)

// rpcCounter counts the etcd RPCs a client sends, by gRPC method, and
// keeps the Range requests. It sits on the client side, as gRPC
// interceptors, so it sees every call the store makes, whatever the server.
type rpcCounter struct {
	mu     sync.Mutex
	calls  map[string]int
	ranges []*pb.RangeRequest
}

const (
	methodRange       = "/etcdserverpb.KV/Range"
	methodRangeStream = "/etcdserverpb.KV/RangeStream"
)

func (c *rpcCounter) dialOptions() []grpc.DialOption {
	return []grpc.DialOption{
		grpc.WithChainUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
			c.mu.Lock()
			c.calls[method]++
			if r, ok := req.(*pb.RangeRequest); ok {
				c.ranges = append(c.ranges, r)
			}
			c.mu.Unlock()
			return invoker(ctx, method, req, reply, cc, opts...)
		}),
		grpc.WithChainStreamInterceptor(func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
			c.mu.Lock()
			c.calls[method]++
			c.mu.Unlock()
			return streamer(ctx, desc, cc, method, opts...)
		}),
	}
}

// count returns how many calls of method were made.
func (c *rpcCounter) count(method string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls[method]
}

func (c *rpcCounter) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls = map[string]int{}
	c.ranges = nil
}

// countingClient is a new client to endpoint whose RPCs are counted; the
// test closes it.
func countingClient(t *testing.T, endpoint string) (*clientv3.Client, *rpcCounter) {
	t.Helper()
	counter := &rpcCounter{calls: map[string]int{}}
	c, err := clientv3.New(clientv3.Config{
		Endpoints:   []string{endpoint},
		DialTimeout: 10 * time.Second,
		DialOptions: counter.dialOptions(),
		Logger:      zap.NewNop(),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, counter
}

// emptyNamespace deletes what an earlier run (-count) left in ns.
func emptyNamespace(t *testing.T, ns string) {
	t.Helper()
	if _, err := etcdServer.Client.Delete(context.Background(), "/registry/configmaps/"+ns+"/", clientv3.WithPrefix()); err != nil {
		t.Fatal(err)
	}
}

// createN creates ConfigMaps n0..n<count-1> in namespace ns.
func createN(t *testing.T, s *etcd3.Store, ns string, count int) {
	t.Helper()
	emptyNamespace(t, ns)
	for i := range count {
		c := cm(ns, fmt.Sprintf("n%d", i), "1")
		if i%2 == 0 {
			c.Labels = map[string]string{"even": "true"}
		}
		if err := s.Create(context.Background(), key(ns, c.Name), c, nil, 0); err != nil {
			t.Fatal(err)
		}
	}
}

func names(list *v1.ConfigMapList) string {
	var out []string
	for _, it := range list.Items {
		out = append(out, it.Name)
	}
	return fmt.Sprint(out)
}

// On etcd 3.7 (the embedded one) a recursive list is one RangeStream, and
// so is a page of an unfiltered list with a limit; a filtered list with a
// limit is paged with Range, because etcd cannot count selector matches.
// The watch's initial sync streams too.
func TestGetListStreamsOnEtcd37(t *testing.T) {
	checkLeaks(t)
	ctx := context.Background()
	client, counter := countingClient(t, etcdServer.Endpoint)
	s := storeWith(t, labtest.ConfigMapStorage(client))
	createN(t, s, "stream37", 5)

	counter.reset()
	all := &v1.ConfigMapList{}
	opts := storage.ListOptions{Recursive: true, Predicate: labtest.Predicate(nil, nil)}
	if err := s.GetList(ctx, "/configmaps/stream37", opts, all); err != nil {
		t.Fatal(err)
	}
	if names(all) != "[n0 n1 n2 n3 n4]" {
		t.Errorf("list %s", names(all))
	}
	if got := counter.count(methodRangeStream); got != 1 {
		t.Errorf("RangeStream calls: %d, want 1", got)
	}
	if got := counter.count(methodRange); got != 0 {
		t.Errorf("Range calls: %d, want 0", got)
	}

	// An unfiltered page streams, capped at the limit by etcd.
	counter.reset()
	opts.Predicate.Limit = 2
	page := &v1.ConfigMapList{}
	if err := s.GetList(ctx, "/configmaps/stream37", opts, page); err != nil {
		t.Fatal(err)
	}
	if names(page) != "[n0 n1]" || page.Continue == "" || page.RemainingItemCount == nil || *page.RemainingItemCount != 3 {
		t.Errorf("page %s, continue %q, remaining %v", names(page), page.Continue, page.RemainingItemCount)
	}
	opts.Predicate.Continue = page.Continue
	next := &v1.ConfigMapList{}
	if err := s.GetList(ctx, "/configmaps/stream37", opts, next); err != nil {
		t.Fatal(err)
	}
	if names(next) != "[n2 n3]" || next.ResourceVersion != page.ResourceVersion {
		t.Errorf("next page %s at RV %s (first at %s)", names(next), next.ResourceVersion, page.ResourceVersion)
	}
	if got, ranges := counter.count(methodRangeStream), counter.count(methodRange); got != 2 || ranges != 0 {
		t.Errorf("two pages: %d RangeStream, %d Range calls; want 2 and 0", got, ranges)
	}

	// A filtered page is read with Range.
	counter.reset()
	sel := labtest.Predicate(labels.SelectorFromSet(labels.Set{"even": "true"}), nil)
	sel.Limit = 2
	even := &v1.ConfigMapList{}
	if err := s.GetList(ctx, "/configmaps/stream37", storage.ListOptions{Recursive: true, Predicate: sel}, even); err != nil {
		t.Fatal(err)
	}
	if names(even) != "[n0 n2]" || even.Continue == "" {
		t.Errorf("even page %s, continue %q", names(even), even.Continue)
	}
	if got, ranges := counter.count(methodRangeStream), counter.count(methodRange); got != 0 || ranges == 0 {
		t.Errorf("filtered page: %d RangeStream, %d Range calls; want 0 and some", got, ranges)
	}

	// The watch's initial sync.
	watchSync(t, s, counter, "stream37", 5, 1, 0).Stop()
}

// watchSync starts a watch of namespace ns on s, expects its initial sync
// (ADDED n0..n<count-1>), and checks how many RangeStream and Range calls
// the sync made; the test stops the watch it returns.
func watchSync(t *testing.T, s *etcd3.Store, counter *rpcCounter, ns string, count, wantStreams, wantRanges int) watch.Interface {
	t.Helper()
	counter.reset()
	w, err := s.Watch(context.Background(), "/configmaps/"+ns, storage.ListOptions{Recursive: true, Predicate: labtest.Predicate(nil, nil)})
	if err != nil {
		t.Fatal(err)
	}
	for i := range count {
		expectEvent(t, w, watch.Added, fmt.Sprintf("n%d", i))
	}
	if streams, ranges := counter.count(methodRangeStream), counter.count(methodRange); streams != wantStreams || ranges != wantRanges {
		t.Errorf("watch sync: %d RangeStream, %d Range calls; want %d and %d", streams, ranges, wantStreams, wantRanges)
	}
	return w
}

// GetCurrentResourceVersion is one Range of the bare resource key, limit 1
// (upstream since 1.37; before, a GetList), and answers etcd's revision.
func TestGetCurrentResourceVersionIsOneGet(t *testing.T) {
	checkLeaks(t)
	ctx := context.Background()
	client, counter := countingClient(t, etcdServer.Endpoint)
	s := storeWith(t, labtest.ConfigMapStorage(client))
	put, err := client.Put(ctx, "/registry/configmaps/rv/x", "not an object")
	if err != nil {
		t.Fatal(err)
	}
	counter.reset()
	rv, err := s.GetCurrentResourceVersion(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rv < uint64(put.Header.Revision) {
		t.Errorf("current RV %d, older than the put at %d", rv, put.Header.Revision)
	}
	if counter.count(methodRange) != 1 || counter.count(methodRangeStream) != 0 || len(counter.ranges) != 1 {
		t.Fatalf("calls %v, want one Range", counter.calls)
	}
	r := counter.ranges[0]
	if string(r.Key) != "/registry/configmaps" || len(r.RangeEnd) != 0 || r.Limit != 1 || r.Serializable {
		t.Errorf("request key %q range_end %q limit %d serializable %v; want one linearizable Get of /registry/configmaps",
			r.Key, r.RangeEnd, r.Limit, r.Serializable)
	}
	if _, err := client.Delete(ctx, "/registry/configmaps/rv/x"); err != nil {
		t.Fatal(err)
	}
}

// With RecordTimestamps, every event after the initial ones, bookmarks
// included, carries its object in a storage.WatchEventWithRecordTime
// stamped with the time the etcd event arrived (here a fake clock's);
// initial events do not.
func TestWatchRecordTimestamps(t *testing.T) {
	checkLeaks(t)
	ctx := context.Background()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := testingclock.NewFakeClock(t0)
	cfg := labtest.ConfigMapStorage(etcdServer.Client)
	cfg.Clock = clk
	s := storeWith(t, cfg)
	emptyNamespace(t, "stamped")
	if err := s.Create(ctx, key("stamped", "before"), cm("stamped", "before", "1"), nil, 0); err != nil {
		t.Fatal(err)
	}
	stamped, err := s.Watch(ctx, "/configmaps/stamped", storage.ListOptions{Recursive: true, RecordTimestamps: true, ProgressNotify: true, Predicate: labtest.Predicate(nil, nil)})
	if err != nil {
		t.Fatal(err)
	}
	defer stamped.Stop()
	plain, err := s.Watch(ctx, "/configmaps/stamped", storage.ListOptions{Recursive: true, Predicate: labtest.Predicate(nil, nil)})
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Stop()

	// The initial event is not wrapped.
	if obj := nextObject(t, stamped, watch.Added); obj.(*v1.ConfigMap).Name != "before" {
		t.Fatalf("initial event %#v", obj)
	}
	nextObject(t, plain, watch.Added)

	t1 := t0.Add(time.Hour)
	clk.SetTime(t1)
	if err := s.Create(ctx, key("stamped", "after"), cm("stamped", "after", "1"), nil, 0); err != nil {
		t.Fatal(err)
	}
	obj := nextObject(t, stamped, watch.Added)
	timed, ok := obj.(storage.WatchEventWithRecordTime)
	if !ok {
		t.Fatalf("event object %T, want a storage.WatchEventWithRecordTime", obj)
	}
	if !timed.RecordTime().Equal(t1) {
		t.Errorf("RecordTime %v, want %v", timed.RecordTime(), t1)
	}
	if c, ok := timed.Unwrap().(*v1.ConfigMap); !ok || c.Name != "after" {
		t.Errorf("Unwrap() = %#v", timed.Unwrap())
	}
	if obj := nextObject(t, plain, watch.Added); obj.(*v1.ConfigMap).Name != "after" {
		t.Errorf("plain watch: %T", obj)
	}

	// A bookmark is stamped too.
	t2 := t1.Add(time.Hour)
	clk.SetTime(t2)
	if err := s.RequestWatchProgress(ctx); err != nil {
		t.Fatal(err)
	}
	bookmark, ok := nextObject(t, stamped, watch.Bookmark).(storage.WatchEventWithRecordTime)
	if !ok || !bookmark.RecordTime().Equal(t2) {
		t.Errorf("bookmark %#v, want one stamped %v", bookmark, t2)
	}
}

// nextObject waits for the next event, checks its type and returns its object.
func nextObject(t *testing.T, w watch.Interface, typ watch.EventType) any {
	t.Helper()
	select {
	case ev, ok := <-w.ResultChan():
		if !ok {
			t.Fatal("watch closed")
		}
		if ev.Type != typ {
			t.Fatalf("event %s %#v, want %s", ev.Type, ev.Object, typ)
		}
		return ev.Object
	case <-time.After(10 * time.Second):
		t.Fatalf("no %s event in 10s", typ)
	}
	return nil
}
