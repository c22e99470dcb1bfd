package cacher

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/grpc/grpclog"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/utils/clock"

	"github.com/listwatch-labs/listwatch-labs/labs/04-cacher/embeddedetcd"
	"github.com/listwatch-labs/listwatch-labs/labs/04-cacher/etcd3"
	"github.com/listwatch-labs/listwatch-labs/labs/04-cacher/internal/labtest"
)

// One real etcd for the package's tests.
var etcdServer *embeddedetcd.Server

func TestMain(m *testing.M) {
	// gRPC logs every closed connection as a warning; quiet it (as
	// cluster/etcd.go does), before gRPC runs anything.
	grpclog.SetLoggerV2(grpclog.NewLoggerV2(io.Discard, io.Discard, io.Discard))
	s, err := embeddedetcd.Start(embeddedetcd.Config{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	etcdServer = s
	// Warm the client's connection up before any goleak baseline.
	if _, err := s.Client.Get(context.Background(), "/warmup"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	s.Close()
	os.Exit(code)
}

// Every test gets its own resource prefix ("/pods-<n>"), so tests sharing
// the etcd see only their own objects.
var prefixSeq atomic.Int64

type podEnv struct {
	store    *labtest.CountingStorage
	cacher   *Cacher
	prefix   string // "/pods-3"
	etcdPods *etcd3.Store
}

func newPodEnv(t *testing.T, clk clock.WithTicker) *podEnv {
	t.Helper()
	prefix := fmt.Sprintf("/pods-%d", prefixSeq.Add(1))
	cfg := labtest.PodStorage(etcdServer.Client)
	cfg.ResourcePrefix = prefix
	s, err := etcd3.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	counting := &labtest.CountingStorage{Interface: s}
	c, err := NewCacherFromConfig(PodConfig(counting, prefix, clk))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	waitFor(t, "cacher ready", c.Ready)
	return &podEnv{store: counting, cacher: c, prefix: prefix, etcdPods: s}
}

// PodConfig is the Cacher configuration for pods stored under prefix,
// with spec.nodeName as the trigger, as kube-apiserver configures pods
// (`TriggerFunc`, k8s.io/kubernetes@v1.37.0/pkg/registry/core/pod/storage/storage.go:96).
func PodConfig(s storage.Interface, prefix string, clk clock.WithTicker) Config {
	return Config{
		Storage:        s,
		ResourcePrefix: prefix,
		KeyFunc: func(obj runtime.Object) (string, error) {
			p := obj.(*v1.Pod)
			return prefix + "/" + p.Namespace + "/" + p.Name, nil
		},
		GetAttrsFunc: labtest.ObjectAttrs,
		IndexerFuncs: storage.IndexerFuncs{"spec.nodeName": func(obj runtime.Object) string {
			return obj.(*v1.Pod).Spec.NodeName
		}},
		NewFunc:     func() runtime.Object { return &v1.Pod{} },
		NewListFunc: func() runtime.Object { return &v1.PodList{} },
		Clock:       clk,
	}
}

func (e *podEnv) key(ns, name string) string { return e.prefix + "/" + ns + "/" + name }

func (e *podEnv) create(t *testing.T, ns, name, node string, lbls map[string]string) *v1.Pod {
	t.Helper()
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: lbls}, Spec: v1.PodSpec{NodeName: node}}
	out := &v1.Pod{}
	if err := e.cacher.Create(context.Background(), e.key(ns, name), p, out, 0); err != nil {
		t.Fatal(err)
	}
	return out
}

func (e *podEnv) update(t *testing.T, ns, name string, f func(*v1.Pod)) *v1.Pod {
	t.Helper()
	out := &v1.Pod{}
	err := e.cacher.GuaranteedUpdate(context.Background(), e.key(ns, name), out, false, nil,
		func(in runtime.Object, _ storage.ResponseMeta) (runtime.Object, *uint64, error) {
			p := in.(*v1.Pod)
			f(p)
			return p, nil, nil
		}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func (e *podEnv) delete(t *testing.T, ns, name string) *v1.Pod {
	t.Helper()
	out := &v1.Pod{}
	if err := e.cacher.Delete(context.Background(), e.key(ns, name), out, nil, nil, nil, storage.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	return out
}

// waitFor polls cond until it holds or 20 s pass: a deadline, not a sleep.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), time.Millisecond, 20*time.Second, true,
		func(context.Context) (bool, error) { return cond(), nil })
	if err != nil {
		t.Fatalf("timed out waiting for %s", what)
	}
}

// next reads one event, failing after 10 s.
func next(t *testing.T, w watch.Interface) watch.Event {
	t.Helper()
	select {
	case ev, ok := <-w.ResultChan():
		if !ok {
			t.Fatal("watch closed")
		}
		return ev
	case <-time.After(10 * time.Second):
		t.Fatal("no event after 10s")
	}
	return watch.Event{}
}

// podOf is the event's pod, unwrapped from a cachingObject (live events
// carry one, see caching_object.go); nil if the object is not a pod. It is
// the object every watcher of the event shares, not GetObject's private
// copy (the fan-out test describes 200,000 events): read it, never change it.
func podOf(ev watch.Event) *v1.Pod {
	obj := ev.Object
	if co, ok := obj.(*cachingObject); ok {
		obj = co.object
	}
	p, _ := obj.(*v1.Pod)
	return p
}

// describe is "TYPE name rv" for a pod event.
func describe(ev watch.Event) string {
	if p := podOf(ev); p != nil {
		return string(ev.Type) + " " + p.Name + " " + p.ResourceVersion
	}
	if s, ok := ev.Object.(*metav1.Status); ok {
		return fmt.Sprintf("%s %d %s", ev.Type, s.Code, s.Reason)
	}
	return fmt.Sprintf("%s %T", ev.Type, ev.Object)
}

func rvOf(p *v1.Pod) uint64 {
	n, _ := strconv.ParseUint(p.ResourceVersion, 10, 64)
	return n
}

// checkLeaks fails the test if it leaves goroutines behind. It runs as the
// test's last cleanup (cleanups run last-registered first), after the
// Cacher's Stop.
func checkLeaks(t *testing.T, more ...goleak.Option) {
	t.Helper()
	opts := append([]goleak.Option{
		goleak.IgnoreCurrent(),
		// The etcd server runs in this process: the server side of a gRPC
		// connection or watch stream the test's client just closed may
		// still be winding down. Those goroutines are etcd's, not the
		// Cacher's, and etcd's own tests own them.
		goleak.IgnoreAnyFunction("google.golang.org/grpc.(*Server).serveStreams"),
		goleak.IgnoreAnyFunction("google.golang.org/grpc.(*Server).handleRawConn"),
		goleak.IgnoreAnyFunction("go.etcd.io/etcd/server/v3/etcdserver/api/v3rpc.(*watchServer).Watch"),
		goleak.IgnoreAnyFunction("go.etcd.io/etcd/server/v3/etcdserver/api/v3rpc.(*serverWatchStream).sendLoop"),
		goleak.IgnoreAnyFunction("go.etcd.io/etcd/server/v3/etcdserver/api/v3rpc.(*serverWatchStream).recvLoop"),
	}, more...)
	t.Cleanup(func() {
		labtest.FlushIdleWatchStreams(etcdServer.Client)
		labtest.VerifyNoLeaks(t, append(opts, labtest.GRPCTransports...)...)
	})
}
