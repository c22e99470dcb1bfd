package labkit

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

func TestMain(m *testing.M) { Main(m, nil) }

// TestScripts runs the harness's own exercises: each labkit command against
// the real cluster.
func TestScripts(t *testing.T) { RunScripts(t, "testdata/script", nil) }

// TestServiceAccountTokenForCurl: on kind (client-certificate kubeconfig)
// labkit mints a ServiceAccount token for the exercises' curl. The same code
// runs here against the current cluster, and the token must authenticate.
func TestServiceAccountTokenForCurl(t *testing.T) {
	c := Current()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	token, err := serviceAccountToken(ctx, c.Client)
	if err != nil {
		t.Fatal(err)
	}
	cfg := rest.AnonymousClientConfig(c.Config)
	cfg.BearerToken = token
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// cluster-admin may list namespaces; an anonymous or unknown token may not.
	if _, err := client.CoreV1().Namespaces().List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
		t.Fatalf("the minted token does not authenticate as cluster-admin: %v", err)
	}
}
