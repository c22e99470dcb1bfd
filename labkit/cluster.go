// Package labkit is the test harness every lab shares: it finds or starts a
// Kubernetes cluster, gives each testscript scenario a namespace of its own,
// and renders watch streams as the transcripts golden files compare.
//
// There is no upstream counterpart; the closest relatives are
// sigs.k8s.io/controller-runtime/pkg/envtest (a control plane per test binary)
// and cmd/go's script tests (testscript).
package labkit

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	"github.com/listwatch-labs/listwatch-labs/clusterstate"
)

// Cluster is a running Kubernetes cluster the tests talk to.
type Cluster struct {
	// Kubeconfig is the path of its kubeconfig.
	Kubeconfig string
	// Dir is the labcluster state directory, or "" when the cluster is not a
	// labcluster (kind, or any other): then it cannot be restarted or compacted.
	Dir string
	// Server is the apiserver URL, Token the bearer token, CAData the CA (PEM).
	Server string
	Token  string
	CAData []byte

	Config  *rest.Config
	Client  kubernetes.Interface
	Dynamic dynamic.Interface
	Mapper  meta.ResettableRESTMapper

	// Name is the target name scripts know it by ("real", "private", or a
	// lab's own server's).
	Name string
	// PrepareNamespace makes a script's namespace ready on this server. nil:
	// create it (and wait for what the controller-manager adds). A lab's
	// server that serves no Namespaces sets its own, seeding what a real
	// namespace would hold, so both servers show the same objects.
	PrepareNamespace func(ns string) error

	// process is the `labcluster run` supervisor when we started it.
	process *exec.Cmd
	// stop ends a lab's server (NewTarget).
	stop func() error
}

// NewTarget connects to a lab's own server through its kubeconfig, for a
// StartTarget to return; stop ends the server when the script is done.
func NewTarget(kubeconfig string, stop func() error) (*Cluster, error) {
	c, err := Connect(kubeconfig)
	if err != nil {
		if stop != nil {
			stop()
		}
		return nil, err
	}
	c.stop = stop
	return c, nil
}

// Root returns the workspace root: the nearest directory holding go.work at or
// above the working directory (a test runs in its package directory).
func Root() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	root, err := clusterstate.Root(wd)
	if err != nil {
		return "", fmt.Errorf("labkit: %w", err)
	}
	return root, nil
}

// Connect returns the cluster of a kubeconfig, checking that it answers /readyz.
func Connect(kubeconfig string) (*Cluster, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("labkit: kubeconfig %s: %w", kubeconfig, err)
	}
	// Tests create and watch in bursts; the default 5 QPS would make them crawl.
	cfg.QPS, cfg.Burst = 200, 400
	c := &Cluster{Kubeconfig: kubeconfig, Server: cfg.Host, Token: cfg.BearerToken, CAData: cfg.CAData, Config: cfg}
	if _, err := clusterstate.Read(filepath.Dir(kubeconfig)); err == nil {
		c.Dir = filepath.Dir(kubeconfig)
	}
	if c.Client, err = kubernetes.NewForConfig(cfg); err != nil {
		return nil, err
	}
	if c.Dynamic, err = dynamic.NewForConfig(cfg); err != nil {
		return nil, err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	c.Mapper = restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = c.Client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
	if apierrors.IsNotFound(err) {
		// A lab's server may have no health endpoints: answering /version
		// is ready enough for it.
		_, err = c.Client.Discovery().ServerVersion()
	}
	if err != nil {
		return nil, fmt.Errorf("labkit: the cluster of %s is not ready: %w", kubeconfig, err)
	}
	return c, nil
}

// scriptToken returns the bearer token a script's curl uses on a real
// cluster: a token of the ServiceAccount labkit-script in the script's own
// namespace, allowed everything in that namespace and nothing else. It is
// minted per script (TokenRequest API) and dies with the namespace, so the
// token testscript prints with the environment under go test -v can read
// nothing else and nothing after the script; the cluster's own credential
// (the kubeconfig's token, or kind's client certificate) never enters a
// script's environment.
func scriptToken(ctx context.Context, client kubernetes.Interface, ns string) (string, error) {
	const name = "labkit-script"
	_, err := client.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return "", err
	}
	// A Role of our own, not the ClusterRole admin: admin is aggregated by
	// the controller-manager, which a private cluster does not run.
	_, err = client.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"*"}}},
	}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return "", err
	}
	_, err = client.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: name},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: name, Namespace: ns}},
	}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return "", err
	}
	tr, err := client.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To(int64(3600))},
	}, metav1.CreateOptions{})
	if err != nil {
		return "", err
	}
	return tr.Status.Token, nil
}

// Discover returns the cluster the tests should use, or nil when none runs,
// by the rule clusterstate.Discover owns (the one `labcluster status` and
// scripts/test.sh follow too): $KUBECONFIG if set (it must answer), else
// <root>/.cluster/kubeconfig if it answers.
func Discover() (*Cluster, error) {
	wd, err := os.Getwd()
	if err != nil {
		return nil, err
	}
	var c *Cluster
	f, err := clusterstate.Discover(wd, func(kubeconfig string) error {
		var err error
		c, err = Connect(kubeconfig)
		return err
	})
	if err != nil || f == nil {
		return nil, err
	}
	return c, nil
}

// EnvRelease chooses the Kubernetes release of the labcluster binary labkit
// runs: unset (or "current") the course's, .cluster/bin/labcluster;
// "previous" the release before (versions.env PREVIOUS_KUBERNETES_VERSION),
// .cluster/bin/labcluster-1.N, which scripts/previous-release.sh runs every
// lab against. It decides the clusters a test binary starts for itself, and
// the kubectl and labcluster commands of its scripts; a cluster already up
// (clusterstate.Discover) is used whatever its release.
const EnvRelease = "LAB_RELEASE"

// labclusterPath returns the release LAB_RELEASE asks for, as
// scripts/build-labcluster.sh --release takes it, and its binary's path.
func labclusterPath(root string) (release, bin string, err error) {
	switch r := os.Getenv(EnvRelease); r {
	case "", "current":
		return "current", filepath.Join(root, ".cluster", "bin", "labcluster"), nil
	case "previous":
		v, err := versionsEnv(root, "PREVIOUS_KUBERNETES_VERSION")
		if err != nil {
			return "", "", err
		}
		minor := strings.TrimPrefix(v, "v")
		if i := strings.LastIndexByte(minor, '.'); i > 0 {
			minor = minor[:i]
		}
		return "previous", filepath.Join(root, ".cluster", "bin", "labcluster-"+minor), nil
	default:
		return "", "", fmt.Errorf("labkit: %s=%q: want current or previous", EnvRelease, r)
	}
}

// versionsEnv returns the value of KEY in root's versions.env (KEY=VALUE
// lines, as the scripts source it).
func versionsEnv(root, key string) (string, error) {
	b, err := os.ReadFile(filepath.Join(root, "versions.env"))
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), key+"="); ok {
			return v, nil
		}
	}
	return "", fmt.Errorf("labkit: versions.env sets no %s", key)
}

// LabclusterBinary builds .cluster/bin/labcluster (or, with
// LAB_RELEASE=previous, the previous release's labcluster-1.N: EnvRelease)
// if its sources changed and returns its path. The first build takes
// minutes; its progress goes to stderr.
func LabclusterBinary() (string, error) {
	root, err := Root()
	if err != nil {
		return "", err
	}
	release, bin, err := labclusterPath(root)
	if err != nil {
		return "", err
	}
	build := exec.Command(filepath.Join(root, "scripts", "build-labcluster.sh"), "--release", release)
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return "", fmt.Errorf("labkit: building %s: %w", filepath.Base(bin), err)
	}
	return bin, nil
}

// StartEmbedded starts a labcluster in dir as a child of this process (it dies
// with us, even on SIGKILL) and waits until it is ready. components defaults to
// the whole cluster; "etcd", "apiserver" is enough for most watch lessons.
func StartEmbedded(dir string, components ...string) (*Cluster, error) {
	return startEmbedded(dir, nil, components)
}

// StartEmbeddedEtcdMembers is StartEmbedded on an etcd of several members
// (3 or 5, `labcluster up --etcd-members`), each its own process, which
// `labcluster etcd kill|start MEMBER --dir DIR` kills and starts again.
func StartEmbeddedEtcdMembers(dir string, members int, components ...string) (*Cluster, error) {
	return startEmbedded(dir, []string{"--etcd-members", strconv.Itoa(members)}, components)
}

func startEmbedded(dir string, extra []string, components []string) (*Cluster, error) {
	bin, err := LabclusterBinary()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	args := []string{"run", "--dir", dir, "--ready-fd", "3"}
	if len(components) > 0 {
		args = append(args, "--components", strings.Join(components, ","))
	}
	args = append(args, extra...)
	log, err := os.OpenFile(filepath.Join(dir, "labcluster.log"), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, err
	}
	defer log.Close()
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.ExtraFiles = []*os.File{w}
	dieWithParent(cmd)
	if err := cmd.Start(); err != nil {
		w.Close()
		return nil, err
	}
	w.Close()
	// The supervisor writes one line: "ready URL" or "error MESSAGE"; EOF
	// means it died first. (It writes progress lines before it only when
	// asked with --steps, as `labcluster up` does.)
	line, _ := bufio.NewReader(r).ReadString('\n')
	line = strings.TrimSpace(line)
	if !strings.HasPrefix(line, "ready ") {
		cmd.Process.Kill()
		cmd.Wait()
		msg, _ := strings.CutPrefix(line, "error ")
		if msg == "" {
			msg = "the supervisor exited; see " + log.Name()
		}
		return nil, errors.New("labkit: starting the embedded cluster: " + msg)
	}
	c, err := Connect(filepath.Join(dir, "kubeconfig"))
	if err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		return nil, err
	}
	c.process = cmd
	return c, nil
}

// Stop stops a cluster StartEmbedded started (SIGTERM: the supervisor stops
// the apiserver before etcd) or a lab's server (NewTarget); other clusters
// are left alone.
func (c *Cluster) Stop() error {
	if c.stop != nil {
		stop := c.stop
		c.stop = nil
		// Our clients let go of the server first, as a client that is done
		// does. An idle HTTP/2 connection left open would make the server's
		// graceful shutdown wait a second for the client to close it after
		// its GOAWAY (net/http's http2goAwayTimeout), on every stop.
		if c.Config != nil {
			if rt, err := rest.TransportFor(c.Config); err == nil {
				utilnet.CloseIdleConnectionsFor(rt)
			}
		}
		return stop()
	}
	if c.process == nil {
		return nil
	}
	c.process.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- c.process.Wait() }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		c.process.Process.Kill()
		<-done
	}
	c.process = nil
	return nil
}

// HasControllerManager tells whether controllers run in this cluster: always
// on kind, on a labcluster only when started with the controller-manager.
func (c *Cluster) HasControllerManager() bool {
	if c.Dir == "" {
		return true
	}
	st, err := clusterstate.Read(c.Dir)
	if err != nil {
		return true
	}
	return st.Has("controller-manager")
}
