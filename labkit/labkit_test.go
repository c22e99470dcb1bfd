package labkit

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

func TestMain(m *testing.M) { Main(m, nil) }

// foreignTarget is this test binary's cluster presented as a foreign one,
// the way a kind cluster looks to labkit: its kubeconfig in a directory with
// no labcluster state (so labkit cannot restart or compact it), and a
// credential that is no bearer token (kind's is a client certificate; here an
// exec credential plugin, named fake-credential): scripts get a token minted
// for their namespace, as on every real cluster.
// It is the same server, so namespaces and objects are shared with "real".
func foreignTarget(work string, args []string) (*Cluster, error) {
	cfg, err := clientcmd.LoadFromFile(Current().Kubeconfig)
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(work, "foreign")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	plugin := filepath.Join(dir, "fake-credential")
	script := fmt.Sprintf("#!/bin/sh\nprintf '{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\",\"status\":{\"token\":\"%%s\"}}' '%s'\n", Current().Token)
	if err := os.WriteFile(plugin, []byte(script), 0o700); err != nil {
		return nil, err
	}
	for _, auth := range cfg.AuthInfos {
		*auth = clientcmdapi.AuthInfo{Exec: &clientcmdapi.ExecConfig{
			APIVersion:      "client.authentication.k8s.io/v1",
			Command:         plugin,
			InteractiveMode: clientcmdapi.NeverExecInteractiveMode,
		}}
	}
	kc := filepath.Join(dir, "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, kc); err != nil {
		return nil, err
	}
	return NewTarget(kc, nil)
}

// TestScripts runs the harness's own scenarios: each labkit command against
// the real cluster, and switching targets mid-script.
func TestScripts(t *testing.T) {
	t.Parallel() // each script has a namespace of its own (targets.txtar a private cluster too)
	RunScripts(t, "testdata/script", Options{Targets: map[string]StartTarget{"foreign": foreignTarget}})
}

// TestScriptsOnTwoTargets runs one body on two targets, as lab 03 runs its
// scenarios on the real apiserver and its own: TestScriptsOnTwoTargets/real/...
// and .../foreign/..., one golden file.
//
// Each script's namespace is deleted at its end on every target, the
// foreign one (another *Cluster for the same server) included.
func TestScriptsOnTwoTargets(t *testing.T) {
	ctx := context.Background()
	before, err := Current().Client.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	RunScripts(t, "testdata/twotargets", Options{
		Targets: map[string]StartTarget{"foreign": foreignTarget},
		RunOn:   []string{TargetReal, "foreign"},
	})
	existed := map[string]bool{}
	for _, ns := range before.Items {
		existed[ns.Name] = true
	}
	after, err := Current().Client.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, ns := range after.Items {
		if strings.HasPrefix(ns.Name, "one-body-") && !existed[ns.Name] && ns.DeletionTimestamp == nil {
			t.Errorf("namespace %s of a script is still there, not being deleted", ns.Name)
		}
	}
}

// TestScriptToken: the token a script's curl gets on a real cluster may do
// anything in the script's namespace and nothing outside it (so the copy
// go test -v prints with the environment is worth little), and it dies with
// the namespace.
func TestScriptToken(t *testing.T) {
	c := Current()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ns := "labkit-token-" + strings.ToLower(rand.Text()[:6])
	if err := createNamespace(c, ns); err != nil {
		t.Fatal(err)
	}
	defer deleteNamespace(c, ns)
	token, err := scriptToken(ctx, c.Client, ns)
	if err != nil {
		t.Fatal(err)
	}
	cfg := rest.AnonymousClientConfig(c.Config)
	cfg.BearerToken = token
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatalf("the script's token cannot list its own namespace: %v", err)
	}
	if _, err := client.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("listing another namespace: got %v, want 403 Forbidden", err)
	}
	if _, err := client.CoreV1().Namespaces().List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("listing namespaces: got %v, want 403 Forbidden", err)
	}
}
