package labkit

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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

// Program is the shape of every lab's cmd/ tool: its code is a Main with
// the arguments (without the program name) and where to write, returning the
// exit code. cmd/TOOL/main.go calls it with os.Args[1:], os.Stdout,
// os.Stderr; tests run it in-process.
type Program func(args []string, stdout, stderr io.Writer) int

// Main is a lab's TestMain: it finds a cluster (or starts an embedded one for
// this test binary), runs the tests, and stops what it started. programs are
// the lab's tools, which a script runs by name (`exec watchserver ...`):
// testscript re-runs this test binary as the program, so it behaves as the
// real command would, with its own stdout, stderr and exit code.
func Main(m *testing.M, programs map[string]Program) {
	cmds := make(map[string]func(), len(programs))
	for name, p := range programs {
		cmds[name] = func() { os.Exit(p(os.Args[1:], os.Stdout, os.Stderr)) }
	}
	testscript.Main(clusterM{m}, cmds)
}

// envPrivateCluster, when set, makes Main start a cluster of its own even
// when one is up (labkit's own tests use it to test that start).
const envPrivateCluster = "LABKIT_PRIVATE_CLUSTER"

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
	var cl *Cluster
	if os.Getenv(envPrivateCluster) == "" {
		var err error
		if cl, err = Discover(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	if cl == nil {
		dir, err := os.MkdirTemp("", "labcluster-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		// Ctrl-C (SIGINT) or SIGTERM would end this process without running
		// the defers, leaving dir behind: an etcd of ~100 MB and the CA's
		// key. Stop the cluster and remove dir first.
		var startMu sync.Mutex // held while the cluster starts
		var started *Cluster
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
		go func() {
			s := <-sig
			startMu.Lock() // a start under way ends first (on Ctrl-C its supervisor got the SIGINT too)
			if started != nil {
				started.Stop()
			}
			os.RemoveAll(dir)
			fmt.Fprintf(os.Stderr, "labkit: %v: stopped this test binary's cluster and removed %s\n", s, dir)
			os.Exit(1)
		}()
		start := time.Now()
		startMu.Lock()
		cl, err = StartEmbedded(dir)
		started = cl
		startMu.Unlock()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer func() {
			signal.Stop(sig)
			startMu.Lock() // not while the handler stops it
			defer startMu.Unlock()
			cl.Stop()
		}()
		if testing.Verbose() {
			fmt.Fprintf(os.Stderr, "labkit: started an embedded cluster in %.1fs (%s)\n", time.Since(start).Seconds(), cl.Server)
		}
	}
	cl.Name = TargetReal
	current = cl
	return c.m.Run()
}

// Options says how RunScripts runs a directory of scripts.
type Options struct {
	// Cmds are the lab's own commands, besides (or replacing) labkit's.
	Cmds map[string]func(ts *testscript.TestScript, neg bool, args []string)
	// Targets are the lab's own servers, by name, besides labkit's "real"
	// (this test binary's cluster) and "private" (see privatecluster).
	Targets map[string]StartTarget
	// RunOn lists the targets every script runs on, once each, as subtests
	// TestScripts/<target>/<script>: one body and one golden file, several
	// servers. Default: just "real", as TestScripts/<script>. A script
	// skips a target with a condition: [target:lab] skip.
	RunOn []string
}

// RunScripts runs every .txtar in dir on each target of opts.RunOn, with
// labkit's commands and opts.Cmds.
func RunScripts(t *testing.T, dir string, opts Options) {
	t.Helper()
	if current == nil {
		t.Fatal("labkit.RunScripts needs a cluster: call labkit.Main from TestMain")
	}
	cmds := Commands()
	maps.Copy(cmds, opts.Cmds)
	runOn := opts.RunOn
	if len(runOn) == 0 {
		runOn = []string{TargetReal}
	}
	for _, name := range runOn {
		if _, ok := opts.Targets[name]; !ok && name != TargetReal && name != TargetPrivate {
			t.Fatalf("labkit.RunScripts: RunOn names %q, which is not a target", name)
		}
	}
	runDir := func(t *testing.T, first string) {
		r := &run{first: first, targets: opts.Targets}
		// RunT, not Run, so that the log goes through redactingT (no
		// bearer token in it); Run would set the deadline, so we do.
		deadline, _ := t.Deadline()
		testscript.RunT(redactingT{t}, testscript.Params{
			Deadline:            deadline,
			Dir:                 dir,
			Setup:               r.setup,
			Cmds:                cmds,
			Condition:           r.condition,
			UpdateScripts:       *update,
			RequireExplicitExec: true,
			RequireUniqueNames:  true,
		})
	}
	if len(runOn) == 1 {
		runDir(t, runOn[0])
		return
	}
	for _, name := range runOn {
		t.Run(name, func(t *testing.T) { runDir(t, name) })
	}
}

// condition answers the labkit conditions, about the target a script runs on:
// [labcluster] when it is a labcluster (restart and compaction work), and
// [target:NAME] when it is NAME.
func (r *run) condition(cond string) (bool, error) {
	switch {
	case cond == "labcluster":
		return (r.first == TargetReal && current.Dir != "") || r.first == TargetPrivate, nil
	case strings.HasPrefix(cond, "target:"):
		return strings.TrimPrefix(cond, "target:") == r.first, nil
	}
	return false, fmt.Errorf("unknown condition %q", cond)
}

var unsafeName = regexp.MustCompile(`[^a-z0-9-]+`)

// setup is the testscript Setup of every script: a fresh namespace named
// after the script, the run's first target, and the variables of
// labkit/README.md.
func (r *run) setup(env *testscript.Env) error {
	name := strings.TrimPrefix(filepath.Base(env.WorkDir), "script-")
	name = strings.Trim(unsafeName.ReplaceAllString(strings.ToLower(name), "-"), "-")
	if len(name) > 50 {
		name = name[:50]
	}
	suffix := make([]byte, 3)
	rand.Read(suffix)
	s := &script{
		run:     r,
		work:    env.WorkDir,
		ns:      name + "-" + hex.EncodeToString(suffix),
		started: map[string]*Cluster{},
		tokens:  map[*Cluster]string{},
		watches: map[string]*RawWatch{},
		bg:      map[string]*background{},
		proxies: map[string]*tcpProxy{},
		values:  map[any]any{},
	}
	env.Values[scriptKey{}] = s
	env.Defer(s.stop)
	// kubectl keeps a discovery cache under $HOME; give it one per script.
	env.Setenv("HOME", filepath.Join(env.WorkDir, ".home"))
	// The labcluster binary, for `exec $LABCLUSTER kubectl ...` in the
	// background (the labcluster command cannot run with &).
	if root, err := Root(); err == nil {
		if _, bin, err := labclusterPath(root); err == nil { // of the release LAB_RELEASE names
			env.Setenv("LABCLUSTER", bin)
		}
	}
	c, err := s.start(r.first, nil)
	if err != nil {
		return err
	}
	return s.use(c, env.Setenv)
}

// createNamespace creates ns and, where a controller-manager runs, waits for
// the ConfigMap kube-root-ca.crt that its root-ca-cert-publisher adds to every
// namespace a moment later. Without the wait, whether a script's first LIST
// or watch shows that ConfigMap would be a race.
func createNamespace(c *Cluster, ns string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	// The name is unique to the script: if it exists, this script made it,
	// through another target that is the same server.
	if err != nil && !apierrors.IsAlreadyExists(err) {
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
