package labkit

// The client-go informer as a script program: what a controller really runs,
// for scenarios that end the data path at a handler.

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
)

// ClientGoInformer is a Program for scripts: the real client-go
// SharedInformer (Reflector, FIFO, Indexer, handlers) for ConfigMaps in one
// namespace, as the end of the data path. It writes SYNCED to -synced once its
// cache has synced, then prints one line per handler call (OnAdd, OnUpdate
// old -> new, OnDelete) and exits after -events calls, or fails after
// -timeout. Lab 03 runs it against the real apiserver and its own server, lab
// 04 against the miniapiserver; lab 05 compares its own informer with it.
//
//	informer [-kubeconfig FILE] [-n NS] [-l SELECTOR] [-synced FILE] [-events N] [-timeout D]
func ClientGoInformer(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("informer", flag.ContinueOnError)
	fs.SetOutput(stderr)
	kubeconfig := fs.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig of the server")
	ns := fs.String("n", "default", "namespace")
	selector := fs.String("l", "", "label selector")
	synced := fs.String("synced", "", "file to create once synced")
	events := fs.Int("events", 1, "handler calls to wait for")
	timeout := fs.Duration("timeout", 60*time.Second, "give up after")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	client := kubernetes.NewForConfigOrDie(cfg)
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(*ns),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = *selector }))
	informer := factory.Core().V1().ConfigMaps().Informer()
	lines := make(chan string, 100)
	informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { lines <- "OnAdd " + describeConfigMap(obj) },
		UpdateFunc: func(old, cur any) { lines <- "OnUpdate " + describeConfigMap(old) + " -> " + describeConfigMap(cur) },
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			lines <- "OnDelete " + describeConfigMap(obj)
		},
	})
	stop := make(chan struct{})
	factory.Start(stop)
	defer factory.Shutdown()
	defer close(stop)
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		fmt.Fprintln(stderr, "informer: cache never synced")
		return 1
	}
	if *synced != "" {
		os.WriteFile(*synced, []byte("SYNCED\n"), 0o644)
	}
	for n := 0; n < *events; n++ {
		select {
		case l := <-lines:
			fmt.Fprintln(stdout, l)
		case <-ctx.Done():
			fmt.Fprintf(stderr, "informer: only %d of %d handler calls after %s\n", n, *events, *timeout)
			return 1
		}
	}
	return 0
}

func describeConfigMap(obj any) string {
	cm, ok := obj.(*corev1.ConfigMap)
	if !ok {
		return fmt.Sprintf("%T", obj)
	}
	return fmt.Sprintf("%s color=%s", cm.Name, cm.Data["color"])
}
