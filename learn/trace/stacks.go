package main

import (
	"context"
	"fmt"
	"net/http"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/listwatch-labs/listwatch-labs/labs/02-listwatcher/listwatcher"
	"github.com/listwatch-labs/listwatch-labs/labs/03-watchserver/apiserver"
	"github.com/listwatch-labs/listwatch-labs/labs/05-informer/informer"
)

type watchEvent = watch.Event

// stackRun is what one stack's writes recorded: one map of marks per write.
type stackRun struct {
	Stack, Storage string
	Samples        []map[string]Mark
	Notes          []string // what the numbers need to be read right
}

// The hops every stack shares, from the HTTP body to the handler.
func clientHops(tr *Tracer, cfg *rest.Config) {
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return traceTransport{next: rt, onRead: func(window []byte) { tr.markBytes("WatchServer -> ListWatch", window) }}
	}
}

func informerHooks(tr *Tracer) (onEvent func(watch.Event), transform func(obj any), index func(obj any)) {
	return func(ev watch.Event) { tr.markEvent("ListWatch -> Reflector", ev) },
		func(obj any) { tr.markObject("Reflector -> FIFO", obj) },
		func(obj any) { tr.markObject("FIFO -> Indexer", obj) }
}

// runLabStack: writes ConfigMap creates through the course's own layers.
func runLabStack(ctx context.Context, writes int) (*stackRun, error) {
	tr := newTracer("course stack", "Indexer -> handler")
	storageFn, stopEtcd, storageDesc, err := labStorage(tr)
	if err != nil {
		return nil, err
	}
	defer stopEtcd()
	in, err := apiserver.Start(apiserver.Config{Listen: "127.0.0.1:0", Storage: storageFn})
	if err != nil {
		return nil, err
	}
	defer in.Close()
	cfg, err := clientcmd.RESTConfigFromKubeConfig(in.Kubeconfig)
	if err != nil {
		return nil, err
	}
	writeCfg := rest.CopyConfig(cfg)
	clientHops(tr, cfg)
	lw, err := listwatcher.New(cfg, "configmaps", "trace")
	if err != nil {
		return nil, err
	}
	onEvent, transform, index := informerHooks(tr)
	inf := informer.NewSharedIndexInformer(traceLW{ListerWatcherWithContext: lw, onEvent: onEvent}, informer.Options{
		Transform: func(obj any) (any, error) {
			transform(obj)
			return informer.StripManagedFields(obj)
		},
		Indexers: informer.Indexers{"trace": func(obj any) ([]string, error) {
			index(obj)
			return nil, nil
		}},
	})
	if _, err := inf.AddEventHandler(handlerFor(tr)); err != nil {
		return nil, err
	}
	samples, err := runWrites(ctx, tr, writeCfg, "trace", writes, inf.Run, inf.HasSynced)
	if err != nil {
		return nil, err
	}
	run := &stackRun{Stack: tr.Stack, Storage: storageDesc, Samples: samples}
	splitEtcd(run)
	return run, nil
}

// etcdReplyMark: etcd's reply to the create's transaction reached lab 04's
// etcd3 store.
const etcdReplyMark = "etcd's reply reached the etcd3 store"

// splitEtcd marks where the etcd write ends and the watch delivery begins.
// etcd sends its reply to the transaction and the watch event for it when
// the write commits, on two gRPC streams, and either can reach the course's
// code first: the commit itself happens inside etcd, where no seam of ours
// is. So the write ends at the first sign of the commit (the reply or the
// event, whichever came first), and the delivery is how much later the
// event reached the Cacher (0 when it came first). The note says how often
// each came first.
func splitEtcd(run *stackRun) {
	eventFirst := 0
	for _, s := range run.Samples {
		reply, event := s[etcdReplyMark], s["etcd -> Cacher"]
		first := Mark{At: reply.At, Detail: "etcd's reply"}
		if event.At < reply.At {
			first = Mark{At: event.At, Detail: "the watch event"}
			eventFirst++
		}
		s["apiserver -> etcd"] = first
	}
	run.Notes = append(run.Notes, fmt.Sprintf("Steps 2 and 3: etcd sends its reply to the write and the watch event for it at about the same moment, when the write is applied (after it commits). "+
		"In %d of %d writes the event reached the Cacher first, before the reply reached the etcd3 store. "+
		"Step 2 ends at whichever came first, and step 3 is how much later the event came (0 when it came first).", eventFirst, len(run.Samples)))
}

func handlerFor(tr *Tracer) cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{AddFunc: func(obj any) { tr.markObject("Indexer -> handler", obj) }}
}

// writeTimeout bounds one write's way to the handler.
const writeTimeout = 30 * time.Second

// runWrites starts the informer, waits for its sync, then creates ConfigMaps
// one at a time: the first one warms the path (connections, caches) and is
// not recorded, then writes more, each traced from the moment it is sent
// (time zero) until the handler sees it.
func runWrites(ctx context.Context, tr *Tracer, writeCfg *rest.Config, ns string, writes int, run func(context.Context), synced func() bool) ([]map[string]Mark, error) {
	informerCtx, stopInformer := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); run(informerCtx) }()
	defer func() { stopInformer(); <-done }()
	syncCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if !cache.WaitForCacheSync(syncCtx.Done(), synced) {
		return nil, fmt.Errorf("%s: the informer did not sync", tr.Stack)
	}
	// client-go's rate limiter would hold the writer back after a burst of
	// 10 writes at its default QPS of 5 (rest/config.go): off.
	writeCfg = rest.CopyConfig(writeCfg)
	writeCfg.QPS = -1
	client, err := kubernetes.NewForConfig(writeCfg)
	if err != nil {
		return nil, err
	}
	var samples []map[string]Mark
	for i := -1; i < writes; i++ {
		name := fmt.Sprintf("traced-%03d", i)
		if i < 0 {
			name = "traced-warmup"
		}
		marks, err := writeOne(ctx, tr, client, ns, name)
		if err != nil {
			return nil, err
		}
		if i >= 0 {
			samples = append(samples, marks)
		}
	}
	return samples, nil
}

func writeOne(ctx context.Context, tr *Tracer, client kubernetes.Interface, ns, name string) (map[string]Mark, error) {
	ctx, cancel := context.WithTimeout(ctx, writeTimeout)
	defer cancel()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Data: map[string]string{"color": "blue"}}
	seen := tr.begin(name)
	_, err := client.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{})
	tr.mark(replyMark, name, "")
	if err != nil {
		tr.end()
		return nil, fmt.Errorf("%s: create %s: %w", tr.Stack, name, err)
	}
	select {
	case <-seen:
		return tr.end(), nil
	case <-ctx.Done():
		marks := tr.end()
		var hops []string
		for _, h := range steps {
			if _, ok := marks[h.Name]; ok {
				hops = append(hops, h.Name)
			}
		}
		return nil, fmt.Errorf("%s: the handler never saw %s within %v; hops seen: %v", tr.Stack, name, writeTimeout, hops)
	}
}
