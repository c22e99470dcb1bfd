package lab_test

import (
	"context"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/listwatch-labs/listwatch-labs/labs/04-cacher/miniapiserver"
)

// TestInformerThroughCompactionAndRestart: a client-go SharedInformer
// against the miniapiserver, through creates, updates and deletes, an etcd
// compaction and a restart of the miniapiserver on the same etcd directory,
// ends each phase with a cache equal to a fresh LIST (names, resourceVersions
// and data). The restart ends the informer's watch; its Reflector watches
// again from the last resourceVersion it saw, which the restarted Cacher
// (listed from the same etcd) can serve.
func TestInformerThroughCompactionAndRestart(t *testing.T) {
	in, err := miniapiserver.Start(miniapiserver.Config{Listen: "127.0.0.1:0", KubeconfigOut: t.TempDir() + "/mini.kubeconfig", EtcdDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	cfg, err := clientcmd.BuildConfigFromFlags("", in.KubeconfigPath)
	if err != nil {
		t.Fatal(err)
	}
	cfg.QPS, cfg.Burst = 200, 400
	client := kubernetes.NewForConfigOrDie(cfg)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace("lab"))
	informer := factory.Core().V1().ConfigMaps().Informer()
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	defer cancel()
	if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		t.Fatal("never synced")
	}

	cms := client.CoreV1().ConfigMaps("lab")
	// write retries while the server restarts (connection refused).
	write := func(what string, f func() error) {
		t.Helper()
		err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
			return f() == nil, nil
		})
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	churn := func(phase string) {
		for i := range 10 {
			name := fmt.Sprintf("%s-%d", phase, i)
			write("create "+name, func() error {
				_, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"v": "1"}}, metav1.CreateOptions{})
				return err
			})
		}
		for i := range 5 {
			name := fmt.Sprintf("%s-%d", phase, i)
			write("update "+name, func() error {
				cm, err := cms.Get(ctx, name, metav1.GetOptions{})
				if err != nil {
					return err
				}
				cm.Data["v"] = "2"
				_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
				return err
			})
		}
		for i := 5; i < 8; i++ {
			name := fmt.Sprintf("%s-%d", phase, i)
			write("delete "+name, func() error { return cms.Delete(ctx, name, metav1.DeleteOptions{}) })
		}
	}
	// equalToList waits until the informer's store holds exactly what a
	// fresh consistent LIST returns.
	equalToList := func(phase string) {
		t.Helper()
		var want, got map[string]string
		err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
			list, err := cms.List(ctx, metav1.ListOptions{})
			if err != nil {
				return false, nil
			}
			want, got = map[string]string{}, map[string]string{}
			for _, cm := range list.Items {
				want[cm.Name] = cm.ResourceVersion + " v=" + cm.Data["v"]
			}
			for _, obj := range informer.GetStore().List() {
				cm := obj.(*corev1.ConfigMap)
				got[cm.Name] = cm.ResourceVersion + " v=" + cm.Data["v"]
			}
			return maps.Equal(want, got), nil
		})
		if err != nil {
			t.Fatalf("%s: informer cache %v, fresh LIST %v", phase, got, want)
		}
		if len(want) == 0 {
			t.Fatalf("%s: empty LIST: the test wrote nothing?", phase)
		}
	}

	churn("a")
	equalToList("after writes")

	if _, err := in.Compact(ctx); err != nil {
		t.Fatal(err)
	}
	churn("b")
	equalToList("after a compaction")

	if err := in.Restart(); err != nil {
		t.Fatal(err)
	}
	churn("c")
	equalToList("after a restart")
	if m, _ := in.Metrics("configmaps"); m.Relists != 1 || m.StorageWatchesOpen != 1 {
		t.Errorf("restarted Cacher: %d relists, %d etcd watches open; want 1 and 1", m.Relists, m.StorageWatchesOpen)
	}
}

// informerMain is the `informer` program of lab 03's exercises
// (labs/03-watchserver/lab_test.go), the same code, so that lab 03's
// informer exercise runs against the miniapiserver: a client-go
// SharedInformer for ConfigMaps in one namespace, writing SYNCED to -synced
// once synced, then one line per handler call, exiting after -events calls.
func informerMain(args []string, stdout, stderr io.Writer) int {
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
		AddFunc:    func(obj any) { lines <- "OnAdd " + describe(obj) },
		UpdateFunc: func(old, cur any) { lines <- "OnUpdate " + describe(old) + " -> " + describe(cur) },
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			lines <- "OnDelete " + describe(obj)
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

func describe(obj any) string {
	cm, ok := obj.(*corev1.ConfigMap)
	if !ok {
		return fmt.Sprintf("%T", obj)
	}
	return fmt.Sprintf("%s color=%s", cm.Name, cm.Data["color"])
}
