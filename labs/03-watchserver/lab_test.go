// The lab's cluster tests: testscript scenarios (testdata/script) that run
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
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/listwatch-labs/listwatch-labs/labkit"
	"github.com/listwatch-labs/listwatch-labs/labs/03-watchserver/apiserver"
	"github.com/listwatch-labs/listwatch-labs/labs/03-watchserver/internal/watchservercmd"
)

func TestMain(m *testing.M) {
	labkit.Main(m, map[string]labkit.Program{
		"watchserver": watchservercmd.Main,
		"informer":    labkit.ClientGoInformer,
	})
}

func TestScripts(t *testing.T) {
	// Parallel with the package's other tests, which each use a namespace
	// and a lab server of their own: most of every test is waiting for a
	// watch's timeoutSeconds or a bookmark's timer. For the same reason the
	// two targets' runs, TestScripts/real and TestScripts/lab, are parallel
	// too (each script has its own namespace on its own target), rather
	// than one after the other as RunScripts runs the targets of RunOn.
	t.Parallel()
	// In exercise mode the script too-old fails on our server until
	// too-old-rv is written: exercises.json lists TestScripts/lab/too-old,
	// and RunScripts names the exercise when it fails, and none for the others.
	for _, target := range []string{labkit.TargetReal, "lab"} {
		t.Run(target, func(t *testing.T) {
			t.Parallel()
			labkit.RunScripts(t, "testdata/script", labkit.Options{
				Targets: map[string]labkit.StartTarget{"lab": startLab},
				RunOn:   []string{target},
			})
		})
	}
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
