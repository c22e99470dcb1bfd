// The lab's cluster tests: testscript exercises (testdata/script) that run
// each scenario against the real embedded kube-apiserver and against our
// watchserver with the same golden transcripts, and a Go test that compares
// the Status of every bad request between the two.
//
// labkit's commands (kwatch, listrv, ...) always talk to the cluster. This
// lab needs the same steps against two servers, so it adds commands that
// follow a "target" (see cmdTarget):
//
//	target real|lab [-history N]   point $APISERVER $TOKEN $CACERT $KUBECONFIG at a server
//	kubectl ARGS...                 the built-in kubectl (labcluster kubectl) against the target
//	kubectl -bg NAME ARGS...        ... in the background, output to $WORK/NAME.out
//	kubectl -stop NAME              stop a background kubectl and wait for its output
//	twatch NAME QUERY               a raw watch of configmaps in $NS on the target, to $WORK/NAME.json
//	twatch -stop NAME               stop it
//
// and two in-process programs for `exec`: watchserver (cmd/watchserver) and
// informer (a client-go SharedInformer that prints its handler calls).
package lab_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/listwatch-labs/listwatch-labs/labkit"
	"github.com/listwatch-labs/listwatch-labs/labs/03-watchserver/apiserver"
	"github.com/listwatch-labs/listwatch-labs/labs/03-watchserver/internal/watchservercmd"
)

func TestMain(m *testing.M) {
	labkit.Main(m, map[string]func(){
		"watchserver": func() { os.Exit(watchservercmd.Main(os.Args[1:], os.Stdout, os.Stderr)) },
		"informer":    func() { os.Exit(informerMain(os.Args[1:])) },
	})
}

func TestScripts(t *testing.T) {
	labkit.RunScripts(t, "testdata/script", map[string]func(*testscript.TestScript, bool, []string){
		"target":  cmdTarget,
		"kubectl": cmdKubectl,
		"twatch":  cmdTwatch,
	})
}

// scriptState is what this lab's commands keep per script: the lab server
// (started by the first `target lab`), background kubectls and watches.
type scriptState struct {
	lab     *apiserver.Instance
	bg      map[string]*background
	watches map[string]*labkit.RawWatch
}

type background struct {
	cancel context.CancelFunc
	done   chan struct{}
	err    error
}

func (b *background) stop() error {
	b.cancel()
	<-b.done
	return b.err
}

var (
	statesMu sync.Mutex
	states   = map[*testscript.TestScript]*scriptState{}
)

func stateOf(ts *testscript.TestScript) *scriptState {
	statesMu.Lock()
	defer statesMu.Unlock()
	s, ok := states[ts]
	if !ok {
		s = &scriptState{bg: map[string]*background{}, watches: map[string]*labkit.RawWatch{}}
		states[ts] = s
		ts.Defer(func() {
			for _, b := range s.bg {
				b.stop()
			}
			for _, w := range s.watches {
				w.Stop()
			}
			if s.lab != nil {
				s.lab.Close()
			}
			statesMu.Lock()
			delete(states, ts)
			statesMu.Unlock()
		})
	}
	return s
}

// target real|lab [-history N]: make the following commands talk to the
// real apiserver (labkit's cluster) or to our watchserver, which the first
// `target lab` starts in this test process (stopped at the end of the script).
func cmdTarget(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! target")
	}
	fs := flag.NewFlagSet("target", flag.ContinueOnError)
	history := fs.Int("history", 1000, "events the lab server keeps for replay")
	if len(args) == 0 {
		ts.Fatalf("usage: target real|lab [-history N]")
	}
	if err := fs.Parse(args[1:]); err != nil {
		ts.Fatalf("target: %v", err)
	}
	// Remember labkit's values the first time, so `target real` can return.
	for _, v := range []string{"APISERVER", "TOKEN", "CACERT", "KUBECONFIG"} {
		if ts.Getenv("REAL_"+v) == "" {
			ts.Setenv("REAL_"+v, ts.Getenv(v))
		}
	}
	switch args[0] {
	case "real":
		for _, v := range []string{"APISERVER", "TOKEN", "CACERT", "KUBECONFIG"} {
			ts.Setenv(v, ts.Getenv("REAL_"+v))
		}
	case "lab":
		s := stateOf(ts)
		if s.lab == nil {
			in, err := apiserver.Start(apiserver.Config{
				Listen:        "127.0.0.1:0",
				KubeconfigOut: ts.MkAbs("lab.kubeconfig"),
				HistorySize:   *history,
			})
			ts.Check(err)
			s.lab = in
			ts.Check(os.WriteFile(ts.MkAbs("lab-ca.crt"), in.CAPEM, 0o600))
			// On a real cluster the controller-manager's root-ca-cert-publisher
			// puts kube-root-ca.crt in every namespace; we have no controllers,
			// so the harness does it, through the storage, and both servers
			// hold the same objects.
			ns := ts.Getenv("NS")
			err = in.Storage(apiserver.ConfigMaps).Create(context.Background(), apiserver.ConfigMaps.Key(ns, "kube-root-ca.crt"), &corev1.ConfigMap{
				TypeMeta:   metav1.TypeMeta{Kind: "ConfigMap", APIVersion: "v1"},
				ObjectMeta: metav1.ObjectMeta{Name: "kube-root-ca.crt", Namespace: ns, UID: "00000000-0000-4000-8000-000000000001", CreationTimestamp: metav1.Now()},
				Data:       map[string]string{"ca.crt": string(in.CAPEM)},
			}, nil, 0)
			ts.Check(err)
		}
		ts.Setenv("APISERVER", s.lab.URL)
		ts.Setenv("TOKEN", s.lab.Token)
		ts.Setenv("CACERT", ts.MkAbs("lab-ca.crt"))
		ts.Setenv("KUBECONFIG", ts.MkAbs("lab.kubeconfig"))
	default:
		ts.Fatalf("target: %q is neither real nor lab", args[0])
	}
}

// kubectl ARGS... | kubectl -bg NAME ARGS... | kubectl -stop NAME
func cmdKubectl(ts *testscript.TestScript, neg bool, args []string) {
	s := stateOf(ts)
	if len(args) == 2 && args[0] == "-stop" {
		b, ok := s.bg[args[1]]
		if !ok {
			ts.Fatalf("kubectl -stop: no background kubectl %q", args[1])
		}
		delete(s.bg, args[1])
		b.stop() // killed on purpose: its exit status says nothing
		return
	}
	bin, err := labkit.LabclusterBinary()
	ts.Check(err)
	var name string
	if len(args) >= 2 && args[0] == "-bg" {
		name, args = args[1], args[2:]
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, append([]string{"kubectl", "--kubeconfig", ts.Getenv("KUBECONFIG")}, args...)...)
	cmd.Env = append(os.Environ(), "HOME="+ts.Getenv("HOME"), "KUBECONFIG="+ts.Getenv("KUBECONFIG"))
	cmd.Dir = ts.Getenv("WORK")
	if name == "" {
		defer cancel()
		cmd.Stdout, cmd.Stderr = ts.Stdout(), ts.Stderr()
		err := cmd.Run()
		if err != nil && !neg {
			ts.Fatalf("kubectl %s: %v", strings.Join(args, " "), err)
		}
		if err == nil && neg {
			ts.Fatalf("kubectl %s: unexpected success", strings.Join(args, " "))
		}
		return
	}
	out, err := os.Create(ts.MkAbs(name + ".out"))
	ts.Check(err)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		cancel()
		ts.Fatalf("kubectl: %v", err)
	}
	b := &background{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(b.done)
		b.err = cmd.Wait()
		out.Close()
	}()
	s.bg[name] = b
}

// twatch NAME QUERY | twatch -stop NAME: a raw watch of configmaps in $NS on
// the target (HTTP/2, as client-go would), its body written to NAME.json.
func cmdTwatch(ts *testscript.TestScript, neg bool, args []string) {
	s := stateOf(ts)
	if len(args) == 2 && args[0] == "-stop" {
		w, ok := s.watches[args[1]]
		if !ok {
			ts.Fatalf("twatch -stop: no watch %q", args[1])
		}
		delete(s.watches, args[1])
		if err := w.Stop(); err != nil {
			ts.Fatalf("twatch %s: %v", args[1], err)
		}
		return
	}
	if len(args) != 2 || neg {
		ts.Fatalf("usage: twatch NAME QUERY | twatch -stop NAME")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", ts.Getenv("KUBECONFIG"))
	ts.Check(err)
	client, err := rest.HTTPClientFor(cfg)
	ts.Check(err)
	url := fmt.Sprintf("%s/api/v1/namespaces/%s/configmaps?watch=1&%s", ts.Getenv("APISERVER"), ts.Getenv("NS"), args[1])
	w, err := labkit.StartRawWatch(client, url, ts.MkAbs(args[0]+".json"))
	if err != nil {
		ts.Fatalf("twatch %s: %v", args[0], err)
	}
	s.watches[args[0]] = w
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
