package robustness

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// RealStack is the real kube-apiserver v1.37.0 of an HACluster as a
// Target, reached through a proxy that can cut or stall every connection,
// with client-go's informer and lab 05's side by side. Faults: compact
// etcd (`labcluster etcd compact`), restart the apiserver (`labcluster
// restart apiserver`), cut and stall connections, and the etcd faults.
type RealStack struct {
	Target
	proxy *Proxy
}

// StartRealStack creates namespace ns and returns the stack. The real
// apiserver refuses objects in a namespace that does not exist: its
// NamespaceLifecycle admission plugin answers such a create with the
// namespace's NotFound (`IsNotFound`,
// k8s.io/apiserver@v0.37.0/pkg/admission/plugin/namespace/lifecycle/admission.go:159-165).
func StartRealStack(ctx context.Context, c *HACluster, ns string) (*RealStack, error) {
	client, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		return nil, err
	}
	_, err = client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("namespace %s: %w", ns, err)
	}
	// A Pod runs as a ServiceAccount, "default" unless it names one, and
	// the ServiceAccount admission plugin, on by default
	// (`DefaultOffAdmissionPlugins` lists it among the default-on ones,
	// k8s.io/kubernetes@v1.37.0/pkg/kubeapiserver/options/plugins.go:164-168),
	// refuses a Pod
	// whose ServiceAccount it cannot find (`Admit`,
	// k8s.io/kubernetes@v1.37.0/plugin/pkg/admission/serviceaccount/admission.go:138-165).
	// The controller-manager's serviceaccount controller would create
	// "default" in every namespace
	// (`DefaultServiceAccountsControllerOptions`,
	// k8s.io/kubernetes@v1.37.0/pkg/controller/serviceaccount/serviceaccounts_controller.go:56-62);
	// this cluster runs none, so it is created here. The plugin looks it up in the apiserver when its
	// cache does not have it yet (`getServiceAccount`,
	// k8s.io/kubernetes@v1.37.0/plugin/pkg/admission/serviceaccount/admission.go:284-314).
	_, err = client.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("serviceaccount %s/default: %w", ns, err)
	}
	// The release the apiserver says it is (/version): v1.37.0, or the
	// previous release's under LAB_RELEASE=previous (scripts/previous-release.sh).
	info, err := client.Discovery().ServerVersion()
	if err != nil {
		return nil, fmt.Errorf("/version: %w", err)
	}
	cfg := rest.CopyConfig(c.Config)
	proxy, err := NewProxy(cfg.Host[len("https://"):])
	if err != nil {
		return nil, err
	}
	// The serving certificate names 127.0.0.1, which the proxy is too.
	cfg.Host = "https://" + proxy.Addr()
	cfg.QPS = -1
	cfg.Timeout = 0
	informers, err := informersOn(cfg, ns)
	if err != nil {
		proxy.Close()
		return nil, err
	}
	s := &RealStack{proxy: proxy}
	s.Target = Target{
		Name:   "the real kube-apiserver " + info.GitVersion + " on a three-member etcd (client-go and lab 05 informers on ConfigMaps and Pods)",
		Config: cfg,
		Faults: map[string]func(ctx context.Context) (string, []Write, error){
			"compact": func(ctx context.Context) (string, []Write, error) {
				out, err := c.labcluster(ctx, "etcd", "compact")
				return out, nil, err
			},
			"restart": func(ctx context.Context) (string, []Write, error) {
				out, err := c.labcluster(ctx, "restart", "apiserver")
				return out, nil, err
			},
			"cut-connections":   proxyCut(proxy),
			"stall-connections": proxyStall(proxy),
		},
		Informers: informers,
	}
	for k, f := range c.EtcdFaults() {
		s.Faults[k] = f
	}
	return s, nil
}

// Close stops the proxy; the cluster stays up for the next run.
func (s *RealStack) Close() { s.proxy.Close() }
