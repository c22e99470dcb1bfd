// Package informercmd is cmd/informer: our SharedIndexInformer over lab 02's
// ListWatch (plain HTTP to the apiserver), printing every handler call as a
// transcript line, in the format of lab 03's informer scenario:
//
//	OnAdd before color=gray
//	synced
//	OnUpdate colors color=blue -> colors color=green
//	OnDelete colors color=green
//	OnDelete gone color=red (final state unknown)
//
// A ConfigMap is shown as its name and its data (key=value, sorted); a Pod
// as its name and node=spec.nodeName, and "deleting" once it has a
// deletionTimestamp. "synced" is printed once, when the
// handler's HasSynced turns true: after the OnAdd of every object of the
// first list. The upstream counterpart of the whole program is a controller's
// main with informers.NewSharedInformerFactory.
package informercmd

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/listwatch-labs/listwatch-labs/clusterstate"
	"github.com/listwatch-labs/listwatch-labs/labs/02-listwatcher/listwatcher"
	"github.com/listwatch-labs/listwatch-labs/labs/05-informer/informer"
)

// Main runs the informer; it returns the process's exit code.
func Main(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("informer", flag.ContinueOnError)
	fs.SetOutput(stderr)
	kubeconfig := fs.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig of the cluster (default $KUBECONFIG, else this checkout's .cluster/kubeconfig)")
	namespace := fs.String("n", "default", "namespace to list and watch")
	resource := fs.String("resource", "configmaps", "what to inform on: configmaps or pods")
	selector := fs.String("l", "", "label selector")
	events := fs.Int("events", 0, "exit after this many handler calls (0: run until interrupted)")
	timeout := fs.Duration("timeout", 0, "with -events: fail if they have not come after this long")
	resync := fs.Duration("resync", 0, "resync period (0: none)")
	outFile := fs.String("out", "", "also write the transcript to this file, line by line (for a script to wait on)")
	cacheOut := fs.String("cache-out", "", "on exit, write the cache to this file: one \"name resourceVersion\" line per object, sorted")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "informer: unexpected arguments %q\n", fs.Args())
		return 2
	}
	if *resource != "configmaps" && *resource != "pods" {
		fmt.Fprintf(stderr, "informer: --resource must be configmaps or pods, not %q\n", *resource)
		return 2
	}
	// A selector that does not parse would be refused by the apiserver on
	// every retry, for ever: check it here, once (our choice), with the
	// parser the apiserver uses.
	if _, err := labels.Parse(*selector); err != nil {
		fmt.Fprintf(stderr, "informer: -l %q: %v\n", *selector, err)
		return 2
	}
	kc, note, err := clusterstate.ProgramKubeconfig(".", *kubeconfig)
	if err != nil {
		fmt.Fprintf(stderr, "informer: %v\n", err)
		return 2
	}
	if note != "" {
		fmt.Fprintf(stderr, "informer: %s\n", note)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kc)
	if err != nil {
		fmt.Fprintf(stderr, "informer: %v\n", err)
		return 1
	}
	lw, err := listwatcher.New(cfg, *resource, *namespace)
	if err != nil {
		fmt.Fprintf(stderr, "informer: %v\n", err)
		return 1
	}
	lw.LabelSelector = *selector

	indexers := informer.Indexers{informer.NamespaceIndex: informer.NamespaceIndexFunc}
	if *resource == "pods" {
		indexers[informer.NodeNameIndex] = informer.NodeNameIndexFunc
	}
	inf := informer.NewSharedIndexInformer(lw, informer.Options{
		ResyncPeriod: *resync,
		Indexers:     indexers,
		Transform:    informer.StripManagedFields,
		Reflector: informer.ReflectorOptions{WatchErrorHandler: func(err error) {
			fmt.Fprintf(stderr, "informer: %v\n", err)
		}},
	})

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)

	w := stdout
	if *outFile != "" {
		f, err := os.Create(*outFile)
		if err != nil {
			fmt.Fprintf(stderr, "informer: %v\n", err)
			return 1
		}
		defer f.Close()
		w = io.MultiWriter(stdout, f)
	}
	out := &transcript{w: w, limit: *events, done: func() { cancel(errEnough) }}
	reg, err := inf.AddEventHandler(out)
	if err != nil {
		fmt.Fprintf(stderr, "informer: %v\n", err)
		return 1
	}
	out.hasSynced = reg.HasSynced

	var timer <-chan time.Time
	if *timeout > 0 {
		t := time.NewTimer(*timeout)
		defer t.Stop()
		timer = t.C
	}
	runDone := make(chan struct{})
	go func() { defer close(runDone); inf.Run(ctx) }()

	// "synced" for a first list after which nothing happens: no handler
	// call would print it. Checked every 10ms until it is printed.
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			out.maybeSynced()
		case <-timer:
			cancel(errTimeout)
		case <-ctx.Done():
			<-runDone
			if *cacheOut != "" {
				if err := writeCache(*cacheOut, inf.GetIndexer()); err != nil {
					fmt.Fprintf(stderr, "informer: %v\n", err)
					return 1
				}
			}
			switch {
			case errors.Is(context.Cause(ctx), errTimeout):
				fmt.Fprintf(stderr, "informer: only %d of %d handler calls after %s\n", out.calls(), *events, *timeout)
				return 1
			}
			return 0
		}
	}
}

var (
	errEnough  = errors.New("got the handler calls asked for")
	errTimeout = errors.New("timed out")
)

// transcript is the handler: one line per call.
type transcript struct {
	w         io.Writer
	limit     int
	done      func()
	hasSynced func() bool

	// lock serialises the output and guards the fields below.
	lock    sync.Mutex
	synced  bool
	n       int
	stopped bool
}

func (t *transcript) calls() int {
	t.lock.Lock()
	defer t.lock.Unlock()
	return t.n
}

// maybeSynced prints "synced" once HasSynced is true.
func (t *transcript) maybeSynced() {
	if t.hasSynced == nil || !t.hasSynced() {
		return
	}
	t.lock.Lock()
	defer t.lock.Unlock()
	t.printSyncedLocked()
}

func (t *transcript) printSyncedLocked() {
	if !t.synced {
		t.synced = true
		fmt.Fprintln(t.w, "synced")
	}
}

// line prints one call. A call that is not part of the first list means the
// first list is done: "synced" goes before it if the ticker was not first.
func (t *transcript) line(initial bool, s string) {
	t.lock.Lock()
	defer t.lock.Unlock()
	if t.stopped {
		return
	}
	if !initial {
		t.printSyncedLocked()
	}
	fmt.Fprintln(t.w, s)
	t.n++
	if t.limit > 0 && t.n >= t.limit {
		t.stopped = true
		t.done()
	}
}

func (t *transcript) OnAdd(obj any, isInInitialList bool) {
	t.line(isInInitialList, "OnAdd "+Describe(obj))
}

func (t *transcript) OnUpdate(old, new any) {
	t.line(false, "OnUpdate "+Describe(old)+" -> "+Describe(new))
}

func (t *transcript) OnDelete(obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		t.line(false, "OnDelete "+Describe(d.Obj)+" (final state unknown)")
		return
	}
	t.line(false, "OnDelete "+Describe(obj))
}

// Describe is an object as the transcript shows it: a ConfigMap's name and
// data, a Pod's name and node.
func Describe(obj any) string {
	switch o := obj.(type) {
	case *corev1.ConfigMap:
		keys := make([]string, 0, len(o.Data))
		for k := range o.Data {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := []string{o.Name}
		for _, k := range keys {
			parts = append(parts, k+"="+o.Data[k])
		}
		return strings.Join(parts, " ")
	case *corev1.Pod:
		node := o.Spec.NodeName
		if node == "" {
			node = "<none>"
		}
		s := o.Name + " node=" + node
		if o.DeletionTimestamp != nil {
			s += " deleting" // graceful deletion: waiting for the kubelet
		}
		return s
	case nil:
		return "<unknown>"
	}
	return fmt.Sprintf("%T", obj)
}

// writeCache writes "name resourceVersion" per cached object, sorted by
// key: the format a fresh LIST is compared with (lab_test.go's freshlist).
func writeCache(file string, indexer *informer.Indexer) error {
	var b strings.Builder
	for _, obj := range indexer.List() {
		m, err := meta.Accessor(obj)
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s %s\n", m.GetName(), m.GetResourceVersion())
	}
	return os.WriteFile(file, []byte(b.String()), 0o644)
}
