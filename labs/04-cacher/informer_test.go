package lab_test

import (
	"context"
	"fmt"
	"maps"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/listwatch-labs/listwatch-labs/labkit"
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
	t.Parallel() // its own miniapiserver and etcd
	labkit.ChecksExercise(t, "cache-watcher-convert")
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
