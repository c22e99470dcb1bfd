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

const tracedName = "traced"

// The hops every stack shares, from the HTTP body to the handler.
func clientHops(tr *Tracer, cfg *rest.Config, stack, from string) {
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return traceTransport{next: rt, needle: []byte(`"name":"` + tracedName + `"`), onRead: func() {
			tr.mark("HTTP -> client", from, "ListWatch", "the watch response body, read by the client ("+stack+")", "frame bytes")
		}}
	}
}

// runLabStack: one ConfigMap create through the course's own layers.
func runLabStack(ctx context.Context) (*Tracer, string, error) {
	tr := newTracer("course stack", tracedName, "Indexer -> handler")
	storageFn, stopEtcd, storageDesc, err := labStorage(tr)
	if err != nil {
		return nil, "", err
	}
	defer stopEtcd()
	in, err := apiserver.Start(apiserver.Config{Listen: "127.0.0.1:0", Storage: storageFn})
	if err != nil {
		return nil, "", err
	}
	defer in.Close()
	cfg, err := clientcmd.RESTConfigFromKubeConfig(in.Kubeconfig)
	if err != nil {
		return nil, "", err
	}
	writeCfg := rest.CopyConfig(cfg)
	clientHops(tr, cfg, "lab 02's ListWatch", "WatchServer")
	lw, err := listwatcher.New(cfg, "configmaps", "trace")
	if err != nil {
		return nil, "", err
	}
	traced := traceLW{ListerWatcherWithContext: lw, onEvent: func(ev watch.Event) {
		if ok, d := tr.eventDetail(ev); ok {
			tr.mark("ListWatch -> Reflector", "ListWatch", "Reflector", "lab 02 ListWatch.WatchWithContext: decoded watch.Event", d)
		}
	}}
	inf := informer.NewSharedIndexInformer(traced, informer.Options{
		Transform: func(obj any) (any, error) {
			if ok, d := tr.isTraced(obj); ok {
				tr.mark("Reflector -> FIFO", "Reflector", "RealFIFO", "lab 05 RealFIFO.Add (the informer's transform)", d)
			}
			return informer.StripManagedFields(obj)
		},
		Indexers: informer.Indexers{"trace": func(obj any) ([]string, error) {
			if ok, d := tr.isTraced(obj); ok {
				tr.mark("FIFO -> Indexer", "RealFIFO", "Indexer", "lab 05 Indexer: PopBatch, then the index functions", d)
			}
			return nil, nil
		}},
	})
	if _, err := inf.AddEventHandler(handlerFor(tr, "lab 05 processorListener -> OnAdd")); err != nil {
		return nil, "", err
	}
	return tr, storageDesc, runAndWrite(ctx, tr, writeCfg, inf.Run, inf.HasSynced)
}

func handlerFor(tr *Tracer, where string) cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{AddFunc: func(obj any) {
		if ok, d := tr.isTraced(obj); ok {
			tr.mark("Indexer -> handler", "Indexer", "handler", where, d)
		}
	}}
}

// runAndWrite starts the informer, waits for its sync, creates the traced
// ConfigMap (time zero), and waits for the handler to see it.
func runAndWrite(ctx context.Context, tr *Tracer, writeCfg *rest.Config, run func(context.Context), synced func() bool) error {
	return runAndWriteIn(ctx, tr, writeCfg, "trace", run, synced)
}

func runAndWriteIn(ctx context.Context, tr *Tracer, writeCfg *rest.Config, ns string, run func(context.Context), synced func() bool) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	informerCtx, stopInformer := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); run(informerCtx) }()
	defer func() { stopInformer(); <-done }()
	if !cache.WaitForCacheSync(ctx.Done(), synced) {
		return fmt.Errorf("%s: the informer did not sync", tr.Stack)
	}
	client, err := kubernetes.NewForConfig(writeCfg)
	if err != nil {
		return err
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: tracedName, Namespace: ns}, Data: map[string]string{"color": "blue"}}
	tr.begin()
	tr.mark("client -> apiserver", "writer", "apiserver", "client-go Create (POST)", "ConfigMap "+ns+"/"+tracedName)
	if _, err := client.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("%s: create: %w", tr.Stack, err)
	}
	select {
	case <-tr.wait:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%s: the handler never saw the write; hops seen: %v", tr.Stack, tr.Hops())
	}
}
