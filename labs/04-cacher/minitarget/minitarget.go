// Package minitarget is lab 04's miniapiserver as a labkit target, "mini",
// and the `mini` testscript command that goes with it: what any lab's tests
// need to run their scripts against lab 03's API server over lab 04's
// Cacher over an embedded etcd. Lab 04 runs its own scenarios, and lab 03's
// and lab 01's again, on it; lab 05 runs its informer's scenarios on it and
// on the real cluster with one golden file per script. It lives outside
// lab 04's test package so that other labs can import it.
//
// It is test support, not a lesson, and has no upstream counterpart: it
// starts miniapiserver.Start for one script and gives it to labkit as
// labkit.NewTarget does for any kubeconfig (labkit/target.go). The `mini`
// command stands in for what a kube-apiserver does not let a client do:
// compact etcd now (kube-apiserver's compactor is gentler: every 5
// minutes it calls `Compact` with the revision of its previous tick,
// k8s.io/apiserver@v0.37.0/pkg/storage/etcd3/compact.go:205-250), restart the
// server on the same etcd, read /metrics, and play a watcher that never
// reads.
package minitarget

import (
	"context"
	"flag"
	"path/filepath"
	"sync"

	"github.com/rogpeppe/go-internal/testscript"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/listwatch-labs/listwatch-labs/labkit"
	"github.com/listwatch-labs/listwatch-labs/labs/03-watchserver/apiserver"
	"github.com/listwatch-labs/listwatch-labs/labs/04-cacher/miniapiserver"
)

// Name is the target's name: register Start under it
// (labkit.Options{Targets: map[string]labkit.StartTarget{minitarget.Name:
// minitarget.Start}}) and Cmd as the command "mini".
const Name = "mini"

// instances maps each started target to its server, for Cmd.
var instances sync.Map // *labkit.Cluster -> *miniapiserver.Instance

// Start is the labkit.StartTarget of "mini": a miniapiserver in this test
// process for one script, stopped when the script ends. `target mini
// -etcd-dir DIR` starts one on DIR (to restart on it later with `mini
// restart`); with no arguments etcd gets a temporary directory.
func Start(work string, args []string) (*labkit.Cluster, error) {
	fs := flag.NewFlagSet("target mini", flag.ContinueOnError)
	etcdDir := fs.String("etcd-dir", "", "etcd's data directory (default: a temporary one)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	kubeconfig := filepath.Join(work, "mini.kubeconfig")
	in, err := miniapiserver.Start(miniapiserver.Config{
		Listen:        "127.0.0.1:0",
		KubeconfigOut: kubeconfig,
		EtcdDir:       *etcdDir,
	})
	if err != nil {
		return nil, err
	}
	var c *labkit.Cluster
	c, err = labkit.NewTarget(kubeconfig, func() error {
		instances.Delete(c)
		return in.Close()
	})
	if err != nil {
		in.Close()
		return nil, err
	}
	instances.Store(c, in)
	// As lab 03's startLab: a real namespace holds kube-root-ca.crt (the
	// controller-manager's root-ca-cert-publisher puts it there); the
	// miniapiserver has no controllers, so the harness writes it, through
	// the Cacher, and both kinds of server hold the same objects.
	c.PrepareNamespace = func(ns string) error {
		return in.Storage(apiserver.ConfigMaps).Create(context.Background(), apiserver.ConfigMaps.Key(ns, "kube-root-ca.crt"), &corev1.ConfigMap{
			TypeMeta:   metav1.TypeMeta{Kind: "ConfigMap", APIVersion: "v1"},
			ObjectMeta: metav1.ObjectMeta{Name: "kube-root-ca.crt", Namespace: ns, UID: "00000000-0000-4000-8000-000000000001", CreationTimestamp: metav1.Now()},
			Data:       map[string]string{"ca.crt": string(in.CAPEM)},
		}, nil, 0)
	}
	return c, nil
}

// Of returns the miniapiserver that the script's current target is, and
// fails the script if the target is not one (another lab's command
// reaching for it on the real cluster, say).
func Of(ts *testscript.TestScript) *miniapiserver.Instance {
	c := labkit.Target(ts)
	in, ok := instances.Load(c)
	if !ok {
		ts.Fatalf("mini: target %s is not a miniapiserver (use `target mini`)", c.Name)
	}
	return in.(*miniapiserver.Instance)
}
