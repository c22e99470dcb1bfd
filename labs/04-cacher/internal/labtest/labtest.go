// Package labtest holds what this lab's tests share: the JSON codec for
// core/v1 objects, the etcd3 storage configuration for ConfigMaps and Pods,
// and a storage wrapper that counts open watches. It is test support, not a
// lesson; the lesson packages are etcd3 and cacher.
package labtest

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/listwatch-labs/listwatch-labs/labs/04-cacher/etcd3"
	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Codec writes core/v1 objects as JSON with apiVersion and kind, and reads
// them back into typed objects: what the lab stores in etcd.
func Codec() runtime.Codec {
	s := json.NewSerializerWithOptions(json.DefaultMetaFactory, scheme.Scheme, scheme.Scheme, json.SerializerOptions{})
	enc := scheme.Codecs.EncoderForVersion(s, v1.SchemeGroupVersion)
	dec := scheme.Codecs.UniversalDeserializer()
	return runtime.NewCodec(enc, dec)
}

// ConfigMapStorage is the etcd3 configuration for ConfigMaps.
func ConfigMapStorage(c *clientv3.Client) etcd3.Config {
	return etcd3.Config{
		Client:         c,
		Codec:          Codec(),
		NewFunc:        func() runtime.Object { return &v1.ConfigMap{} },
		NewListFunc:    func() runtime.Object { return &v1.ConfigMapList{} },
		ResourcePrefix: "/configmaps",
		GroupResource:  schema.GroupResource{Resource: "configmaps"},
	}
}

// PodStorage is the etcd3 configuration for Pods.
func PodStorage(c *clientv3.Client) etcd3.Config {
	return etcd3.Config{
		Client:         c,
		Codec:          Codec(),
		NewFunc:        func() runtime.Object { return &v1.Pod{} },
		NewListFunc:    func() runtime.Object { return &v1.PodList{} },
		ResourcePrefix: "/pods",
		GroupResource:  schema.GroupResource{Resource: "pods"},
	}
}

// ObjectAttrs returns labels and the metadata fields of any object, the
// GetAttrs every resource supports (metadata.name, metadata.namespace).
func ObjectAttrs(obj runtime.Object) (labels.Set, fields.Set, error) {
	switch o := obj.(type) {
	case *v1.Pod:
		return labels.Set(o.Labels), PodFields(o), nil
	case *v1.ConfigMap:
		return labels.Set(o.Labels), fields.Set{"metadata.name": o.Name, "metadata.namespace": o.Namespace}, nil
	}
	return nil, nil, nil
}

// PodFields are the pod fields this lab selects on: metadata and
// spec.nodeName (the field a kubelet watches its pods by).
func PodFields(p *v1.Pod) fields.Set {
	return fields.Set{"metadata.name": p.Name, "metadata.namespace": p.Namespace, "spec.nodeName": p.Spec.NodeName}
}

// Predicate returns a SelectionPredicate for the given selectors.
func Predicate(label labels.Selector, field fields.Selector) storage.SelectionPredicate {
	if label == nil {
		label = labels.Everything()
	}
	if field == nil {
		field = fields.Everything()
	}
	return storage.SelectionPredicate{Label: label, Field: field, GetAttrs: ObjectAttrs}
}

// CountingStorage wraps a storage.Interface and counts its watches: how
// many were ever opened and how many are open now. Tests use it to show
// that the Cacher keeps exactly one etcd watch per resource.
type CountingStorage struct {
	storage.Interface
	Opened atomic.Int64
	// Gets counts Get calls: the reads the Cacher sent to storage.
	Gets atomic.Int64
	// MaxOpen is the most watches ever open at once.
	MaxOpen atomic.Int64
	open    atomic.Int64

	mu     sync.Mutex
	before func(opts storage.ListOptions) // see SetBeforeWatch
	active []watch.Interface
}

// Open returns the number of watches open now.
func (c *CountingStorage) Open() int64 { return c.open.Load() }

// SetBeforeWatch makes every later Watch call f first: a test hook to
// write and compact while the cache is between two etcd watches.
func (c *CountingStorage) SetBeforeWatch(f func(opts storage.ListOptions)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.before = f
}

// Get counts and delegates.
func (c *CountingStorage) Get(ctx context.Context, key string, opts storage.GetOptions, out runtime.Object) error {
	c.Gets.Add(1)
	return c.Interface.Get(ctx, key, opts, out)
}

// BreakWatches stops every open watch cleanly, as a storage that dropped its
// connection could end it (etcd's own client would resume a broken stream).
func (c *CountingStorage) BreakWatches() {
	c.mu.Lock()
	active := c.active
	c.active = nil
	c.mu.Unlock()
	for _, w := range active {
		w.Stop()
	}
}

// Watch counts and delegates.
func (c *CountingStorage) Watch(ctx context.Context, key string, opts storage.ListOptions) (watch.Interface, error) {
	c.mu.Lock()
	before := c.before
	c.mu.Unlock()
	if before != nil {
		before(opts)
	}
	w, err := c.Interface.Watch(ctx, key, opts)
	if err != nil {
		return nil, err
	}
	c.Opened.Add(1)
	if n := c.open.Add(1); n > c.MaxOpen.Load() {
		c.MaxOpen.Store(n)
	}
	cw := &countedWatch{Interface: w, parent: c}
	c.mu.Lock()
	c.active = append(c.active, w)
	c.mu.Unlock()
	return cw, nil
}

type countedWatch struct {
	watch.Interface
	parent *CountingStorage
	once   sync.Once
}

func (w *countedWatch) Stop() {
	w.Interface.Stop()
	w.once.Do(func() { w.parent.open.Add(-1) })
}

// FlushIdleWatchStreams closes the etcd client's idle watch stream, so that
// goleak sees only goroutines a test really left behind.
//
// Why: etcd's client (`watchGRPCStream.run`,
// go.etcd.io/etcd/client/v3@v3.7.0/watch.go:512) shuts a gRPC watch stream down when its last watch
// closes, but a watch cancelled before etcd confirmed its creation leaves a
// placeholder in the stream's resume queue, so the stream stays open, idle,
// until the next watch on it closes. This opens one watch with the same
// metadata as the store's (WithRequireLeader), waits until etcd confirms it,
// and closes it: the stream then has no watch left and ends.
func FlushIdleWatchStreams(c *clientv3.Client) {
	ctx, cancel := context.WithCancel(clientv3.WithRequireLeader(context.Background()))
	ch := c.Watch(ctx, "/lab04-flush", clientv3.WithCreatedNotify())
	<-ch
	cancel()
	for range ch {
	}
}

// GRPCTransports are the goroutines of a gRPC connection between this
// process's etcd client and its in-process etcd server (the transports'
// writer, reader and keepalive). The shared client may open a connection
// during a test and keep it for the next one: it is the client's, not the
// test's. A leaked client or watch still shows (clientv3's own goroutines,
// the server's watch streams).
var GRPCTransports = []goleak.Option{
	goleak.IgnoreAnyFunction("google.golang.org/grpc/internal/transport.(*loopyWriter).run"),
	goleak.IgnoreAnyFunction("google.golang.org/grpc/internal/transport.(*http2Server).keepalive"),
	goleak.IgnoreAnyFunction("google.golang.org/grpc/internal/transport.(*http2Client).keepalive"),
	goleak.IgnoreAnyFunction("google.golang.org/grpc/internal/transport.(*http2Client).reader"),
	goleak.IgnoreAnyFunction("google.golang.org/grpc/internal/transport.(*http2Server).HandleStreams"),
}

// VerifyNoLeaks fails t if goroutines other than those opts allow are still
// running, after waiting up to 10 s for them to end. goleak.VerifyNone
// alone retries for about 2 s: the in-process etcd server and the test's
// client tear a gRPC connection down asynchronously (the transport's writer,
// reader and keepalive goroutines), and on a loaded 2-core machine that can
// take longer. A goroutine still there after 10 s is a leak.
func VerifyNoLeaks(t testing.TB, opts ...goleak.Option) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := goleak.Find(opts...)
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Error(err)
			return
		}
		time.Sleep(100 * time.Millisecond) // poll again; the deadline bounds it
	}
}
