// The lab's cluster tests: testscript exercises (testdata/script) that run
// each scenario twice, as TestScripts/real/NAME against the real embedded
// kube-apiserver and as TestScripts/lab/NAME against our watchserver (the
// labkit target "lab"), with one golden transcript; and a Go test that
// compares the Status of every bad request between the two.
//
// Two in-process programs for `exec`: watchserver (cmd/watchserver) and
// informer (a client-go SharedInformer that prints its handler calls).
package lab_test

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/listwatch-labs/listwatch-labs/labkit"
	"github.com/listwatch-labs/listwatch-labs/labs/03-watchserver/apiserver"
	"github.com/listwatch-labs/listwatch-labs/labs/03-watchserver/internal/watchservercmd"
)

func TestMain(m *testing.M) {
	labkit.Main(m, map[string]labkit.Program{
		"watchserver": watchservercmd.Main,
		"informer":    func(args []string, stdout, stderr io.Writer) int { return informerMain(args) },
	})
}

func TestScripts(t *testing.T) {
	// In exercise mode the script too-old fails until too-old-rv is written.
	checksExercise(t, "too-old-rv")
	labkit.RunScripts(t, "testdata/script", labkit.Options{
		Targets: map[string]labkit.StartTarget{"lab": startLab},
		RunOn:   []string{labkit.TargetReal, "lab"},
	})
}

// startLab is the "lab" target: our watchserver, started in this test
// process for one script and stopped when it ends. `target lab -history N`
// starts it again with a history of N events.
func startLab(work string, args []string) (*labkit.Cluster, error) {
	fs := flag.NewFlagSet("target lab", flag.ContinueOnError)
	history := fs.Int("history", 1000, "events the lab server keeps for replay")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	kubeconfig := filepath.Join(work, "lab.kubeconfig")
	in, err := apiserver.Start(apiserver.Config{
		Listen:        "127.0.0.1:0",
		KubeconfigOut: kubeconfig,
		HistorySize:   *history,
	})
	if err != nil {
		return nil, err
	}
	c, err := labkit.NewTarget(kubeconfig, in.Close)
	if err != nil {
		return nil, err
	}
	// On a real cluster the controller-manager's root-ca-cert-publisher puts
	// kube-root-ca.crt in every namespace; we have no controllers (and no
	// Namespaces), so the harness does it, through the storage, and both
	// servers hold the same objects.
	c.PrepareNamespace = func(ns string) error {
		return in.Storage(apiserver.ConfigMaps).Create(context.Background(), apiserver.ConfigMaps.Key(ns, "kube-root-ca.crt"), &corev1.ConfigMap{
			TypeMeta:   metav1.TypeMeta{Kind: "ConfigMap", APIVersion: "v1"},
			ObjectMeta: metav1.ObjectMeta{Name: "kube-root-ca.crt", Namespace: ns, UID: "00000000-0000-4000-8000-000000000001", CreationTimestamp: metav1.Now()},
			Data:       map[string]string{"ca.crt": string(in.CAPEM)},
		}, nil, 0)
	}
	return c, nil
}

// informerMain is the `informer` program: a client-go SharedInformer for
// ConfigMaps in one namespace. It writes SYNCED to -synced once its cache
// has synced, then prints one line per handler call and exits after -events
// calls (or fails after -timeout).
func informerMain(args []string) int {
	fs := flag.NewFlagSet("informer", flag.ContinueOnError)
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
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	client := kubernetes.NewForConfigOrDie(cfg)
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(*ns),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = *selector }))
	informer := factory.Core().V1().ConfigMaps().Informer()
	lines := make(chan string, 100)
	informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { lines <- "OnAdd " + describe(obj) },
		UpdateFunc: func(old, cur any) {
			lines <- "OnUpdate " + describe(old) + " -> " + describe(cur)
		},
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
	deadline := time.After(*timeout)
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		fmt.Fprintln(os.Stderr, "informer: cache never synced")
		return 1
	}
	if *synced != "" {
		os.WriteFile(*synced, []byte("SYNCED\n"), 0o644)
	}
	for n := 0; n < *events; n++ {
		select {
		case l := <-lines:
			fmt.Println(l)
		case <-deadline:
			fmt.Fprintf(os.Stderr, "informer: only %d of %d handler calls after %s\n", n, *events, *timeout)
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
