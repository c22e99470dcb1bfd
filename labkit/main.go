package labkit

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// update rewrites the golden output of scripts instead of failing on a
// difference: go test -run TestScripts -update. Never on by default.
var update = flag.Bool("update", false, "rewrite golden output in testscript files")

// current is the cluster of this test binary, set by Main before any test runs.
var current *Cluster

// Current returns the cluster Main found or started. It is nil outside Main.
func Current() *Cluster { return current }

// Main is a lab's TestMain: it finds a cluster (or starts an embedded one for
// this test binary), runs the tests, and stops what it started. programs are
// commands a script can run in-process (a lab's cmd/ tools), by name.
func Main(m *testing.M, programs map[string]func()) {
	testscript.Main(clusterM{m}, programs)
}

// clusterM wraps testing.M so the cluster starts only in the test process
// itself, not when testscript re-executes the binary as one of the programs.
type clusterM struct{ m *testing.M }

func (c clusterM) Run() int {
	flag.Parse()
	// `go test -list`, and -run '^$' (benchmarks or fuzzing only), need no
	// cluster: starting one would cost seconds for nothing.
	if f := flag.Lookup("test.list"); f != nil && f.Value.String() != "" {
		return c.m.Run()
	}
	if f := flag.Lookup("test.run"); f != nil && f.Value.String() == "^$" {
		return c.m.Run()
	}
	cl, err := Discover()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if cl == nil {
		dir, err := os.MkdirTemp("", "labcluster-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		start := time.Now()
		if cl, err = StartEmbedded(dir); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer cl.Stop()
		if testing.Verbose() {
			fmt.Fprintf(os.Stderr, "labkit: started an embedded cluster in %.1fs (%s)\n", time.Since(start).Seconds(), cl.Server)
		}
	}
	current = cl
	return c.m.Run()
}

// RunScripts runs every .txtar in dir against the current cluster, with
// labkit's commands and extra (which may override them).
func RunScripts(t *testing.T, dir string, extra map[string]func(ts *testscript.TestScript, neg bool, args []string)) {
	t.Helper()
	if current == nil {
		t.Fatal("labkit.RunScripts needs a cluster: call labkit.Main from TestMain")
	}
	cmds := Commands()
	for name, f := range extra {
		cmds[name] = f
	}
	testscript.Run(t, testscript.Params{
		Dir:                 dir,
		Setup:               Setup,
		Cmds:                cmds,
		Condition:           Condition,
		UpdateScripts:       *update,
		RequireExplicitExec: true,
		RequireUniqueNames:  true,
	})
}

// Condition answers the labkit conditions: [labcluster] is true when the
// script's cluster is a labcluster (restart and compaction work there).
func Condition(cond string) (bool, error) {
	switch cond {
	case "labcluster":
		return current != nil && current.Dir != "", nil
	}
	return false, fmt.Errorf("unknown condition %q", cond)
}

// scriptKey finds the per-script state in testscript's Values.
type scriptKey struct{}

// script is what labkit's commands share within one script.
type script struct {
	cluster *Cluster
	ns      string
	watches map[string]*RawWatch
	private *Cluster // the cluster of `privatecluster`, stopped at the end
}

func stateOf(ts *testscript.TestScript) *script {
	s, _ := ts.Value(scriptKey{}).(*script)
	if s == nil {
		ts.Fatalf("labkit: no script state (is labkit.Setup the Params.Setup?)")
	}
	return s
}

var unsafeName = regexp.MustCompile(`[^a-z0-9-]+`)

// Setup is the testscript Setup of every lab: a fresh namespace named after the
// script, and the variables of labkit/README.md.
func Setup(env *testscript.Env) error {
	if current == nil {
		return fmt.Errorf("labkit.Setup needs a cluster: call labkit.Main from TestMain")
	}
	name := strings.TrimPrefix(filepath.Base(env.WorkDir), "script-")
	name = strings.Trim(unsafeName.ReplaceAllString(strings.ToLower(name), "-"), "-")
	if len(name) > 50 {
		name = name[:50]
	}
	suffix := make([]byte, 3)
	rand.Read(suffix)
	ns := name + "-" + hex.EncodeToString(suffix)

	s := &script{cluster: current, ns: ns, watches: map[string]*RawWatch{}}
	if err := createNamespace(current, ns); err != nil {
		return err
	}
	env.Defer(func() {
		for _, w := range s.watches {
			w.Stop()
		}
		// A private cluster is thrown away whole. Deleting the namespace is
		// asynchronous: the namespace controller empties it later.
		if s.private != nil {
			s.private.Stop()
		}
		deleteNamespace(current, ns)
	})
	env.Values[scriptKey{}] = s
	// kubectl keeps a discovery cache under $HOME; give it one per script.
	env.Setenv("HOME", filepath.Join(env.WorkDir, ".home"))
	// The labcluster binary, for `exec $LABCLUSTER kubectl ...` in the
	// background (the labcluster command cannot run with &).
	if root, err := Root(); err == nil {
		env.Setenv("LABCLUSTER", filepath.Join(root, ".cluster", "bin", "labcluster"))
	}
	return setClusterEnv(env.WorkDir, env.Setenv, s)
}

// setClusterEnv writes the token and CA files and sets the variables that
// point a script at its cluster.
func setClusterEnv(work string, setenv func(k, v string), s *script) error {
	c := s.cluster
	token := filepath.Join(work, "token")
	if err := os.WriteFile(token, []byte(c.Token), 0o600); err != nil {
		return err
	}
	ca := filepath.Join(work, "ca.crt")
	if err := os.WriteFile(ca, c.CAData, 0o600); err != nil {
		return err
	}
	setenv("NS", s.ns)
	setenv("KUBECONFIG", c.Kubeconfig)
	setenv("APISERVER", c.Server)
	setenv("TOKEN", c.Token)
	setenv("CACERT", ca)
	setenv("LABCLUSTER_DIR", c.Dir)
	return nil
}

// createNamespace creates ns and, where a controller-manager runs, waits for
// the ConfigMap kube-root-ca.crt that its root-ca-cert-publisher adds to every
// namespace a moment later. Without the wait, whether a script's first LIST
// or watch shows that ConfigMap would be a race.
func createNamespace(c *Cluster, ns string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("labkit: create namespace %s: %w", ns, err)
	}
	if !c.HasControllerManager() {
		return nil
	}
	var last error
	err = wait.PollUntilContextCancel(ctx, 20*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		_, last = c.Client.CoreV1().ConfigMaps(ns).Get(ctx, "kube-root-ca.crt", metav1.GetOptions{})
		return last == nil, nil
	})
	if err != nil {
		return fmt.Errorf("labkit: namespace %s: no kube-root-ca.crt after 30s (is the controller-manager running?): %v", ns, last)
	}
	return nil
}

func deleteNamespace(c *Cluster, ns string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c.Client.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})
}
