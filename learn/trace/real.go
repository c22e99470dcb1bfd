package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// runRealStack: the same write on the real kube-apiserver (etcd, its Cacher
// and WatchServer are inside it, not observable from here) and client-go's
// own informer, observed at the same seams as the course stack.
func runRealStack(ctx context.Context, cfg *rest.Config) (*Tracer, error) {
	suffix := make([]byte, 3)
	rand.Read(suffix)
	ns := "labs-trace-" + hex.EncodeToString(suffix)
	admin, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("real stack: %w", err)
	}
	defer admin.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})

	tr := newTracer("kube-apiserver + client-go", tracedName, "Indexer -> handler")
	writeCfg := rest.CopyConfig(cfg)
	readCfg := rest.CopyConfig(cfg)
	clientHops(tr, readCfg, "client-go", "apiserver")
	client, err := kubernetes.NewForConfig(readCfg)
	if err != nil {
		return nil, err
	}
	lw := cache.NewListWatchFromClient(client.CoreV1().RESTClient(), "configmaps", ns, fields.Everything())
	traced := traceLW{ListerWatcherWithContext: cache.ToListerWatcherWithContext(lw), onEvent: func(ev watch.Event) {
		if ok, d := tr.eventDetail(ev); ok {
			tr.mark("ListWatch -> Reflector", "ListWatch", "Reflector", "client-go ListWatch: decoded watch.Event", d)
		}
	}}
	inf := cache.NewSharedIndexInformer(traced, &corev1.ConfigMap{}, 0, cache.Indexers{"trace": func(obj any) ([]string, error) {
		if ok, d := tr.isTraced(obj); ok {
			tr.mark("FIFO -> Indexer", "RealFIFO", "Indexer", "client-go Indexer: the index functions", d)
		}
		return nil, nil
	}})
	inf.SetTransform(func(obj any) (any, error) {
		if ok, d := tr.isTraced(obj); ok {
			tr.mark("Reflector -> FIFO", "Reflector", "RealFIFO", "client-go RealFIFO (the informer's transform)", d)
		}
		return obj, nil
	})
	if _, err := inf.AddEventHandler(handlerFor(tr, "client-go processorListener -> OnAdd")); err != nil {
		return nil, err
	}
	writeNS := *writeCfg
	return tr, runAndWriteIn(ctx, tr, &writeNS, ns, inf.RunWithContext, inf.HasSynced)
}
