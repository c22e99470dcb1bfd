package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// runRealStack: the same writes on the real kube-apiserver (etcd, its Cacher
// and WatchServer are inside it, not observable from here) and client-go's
// own informer, observed at the same seams as the course stack.
func runRealStack(ctx context.Context, cfg *rest.Config, writes int) (*stackRun, error) {
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

	tr := newTracer("kube-apiserver + client-go", "Indexer -> handler")
	writeCfg := rest.CopyConfig(cfg)
	readCfg := rest.CopyConfig(cfg)
	clientHops(tr, readCfg)
	client, err := kubernetes.NewForConfig(readCfg)
	if err != nil {
		return nil, err
	}
	lw := cache.NewListWatchFromClient(client.CoreV1().RESTClient(), "configmaps", ns, fields.Everything())
	onEvent, transform, index := informerHooks(tr)
	traced := traceLW{ListerWatcherWithContext: cache.ToListerWatcherWithContext(lw), onEvent: onEvent}
	inf := cache.NewSharedIndexInformer(traced, &corev1.ConfigMap{}, 0, cache.Indexers{"trace": func(obj any) ([]string, error) {
		index(obj)
		return nil, nil
	}})
	inf.SetTransform(func(obj any) (any, error) {
		transform(obj)
		return obj, nil
	})
	if _, err := inf.AddEventHandler(handlerFor(tr)); err != nil {
		return nil, err
	}
	samples, err := runWrites(ctx, tr, writeCfg, ns, writes, inf.RunWithContext, inf.HasSynced)
	return &stackRun{Stack: tr.Stack, Storage: "etcd, the watch cache and the WatchServer inside kube-apiserver (not observable from outside)", Samples: samples}, err
}
