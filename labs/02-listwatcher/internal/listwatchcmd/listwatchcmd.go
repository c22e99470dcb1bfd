// Package listwatchcmd is the listwatch command: cmd/listwatch/main.go runs
// it, and the lab's tests run it in-process (lab_test.go). listwatch lists a
// core/v1 resource in a namespace, prints the items, then watches from the
// list's resourceVersion and prints every event, every rewatch and every
// relist, one per line, until interrupted.
//
//	listwatch --kubeconfig .cluster/kubeconfig -n default
//	listwatch -n kube-system --resource pods -l component=kube-apiserver
//	listwatch --watch-list            # one stream: the list as ADDED events, then live
//	listwatch -o json                 # machine-readable: the JSON of each step
//
// It is the list-then-watch ConfigMap demo, with what the short versions
// leave out: the watch resumes from the last resourceVersion when it ends,
// relists on 410 Gone, and backs off when the apiserver is unreachable.
//
// Nearest upstream twin: `kubectl get --watch`
// (`GetOptions.watch`, k8s.io/kubectl@v0.37.0/pkg/cmd/get/get.go:614), which
// lists, then watches from the list's resourceVersion, but prints table rows
// and gives up when the watch ends instead of resuming.
package listwatchcmd

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/listwatch-labs/listwatch-labs/clusterstate"
	"github.com/listwatch-labs/listwatch-labs/labs/02-listwatcher/listwatcher"
)

// Main runs the command with args (without the program name), writing its
// output to stdout (or --out) and its errors to stderr, and returns the exit
// code: 0 after an interrupt, 1 on an error, 2 on bad usage.
func Main(args []string, stdout, stderr io.Writer) int {
	flags := flag.NewFlagSet("listwatch", flag.ContinueOnError)
	flags.SetOutput(stderr)
	kubeconfig := flags.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig `file` (default $KUBECONFIG, else this checkout's .cluster/kubeconfig)")
	namespace := flags.String("namespace", "default", "`namespace` to list and watch (\"\" for all)")
	flags.StringVar(namespace, "n", "default", "short for --namespace")
	resource := flags.String("resource", "configmaps", "core/v1 `resource` (plural): configmaps, pods, secrets ...")
	selector := flags.String("selector", "", "label `selector`, e.g. app=demo")
	flags.StringVar(selector, "l", "", "short for --selector")
	fieldSelector := flags.String("field-selector", "", "field `selector`, e.g. metadata.name=a")
	watchList := flags.Bool("watch-list", false, "streaming list: sendInitialEvents=true on one watch instead of LIST + WATCH")
	bookmarks := flags.Bool("bookmarks", true, "ask for BOOKMARK events (allowWatchBookmarks)")
	timeout := flags.Int64("timeout", 0, "timeoutSeconds of each watch (0: the server's default)")
	pageSize := flags.Int64("page-size", 0, "LIST limit per page (0: one page)")
	output := flags.String("o", "text", "output: text, or json (one JSON value per line, for `transcript`)")
	outFile := flags.String("out", "", "write to `file` instead of stdout (each line flushed as it happens)")
	pause := flags.String("pause-after-list", "", "after each LIST, wait until `file` exists before watching: a gap to make changes in")
	if err := flags.Parse(args); err != nil {
		return 2
	}
	if flags.NArg() != 0 {
		fmt.Fprintf(stderr, "listwatch: unexpected argument %q (the resource is --resource)\n", flags.Arg(0))
		return 2
	}
	var print func(io.Writer, listwatcher.Step)
	switch *output {
	case "text":
		print = printText
	case "json":
		print = printJSON
	default:
		fmt.Fprintf(stderr, "listwatch: -o %q: want text or json\n", *output)
		return 2
	}

	kc, note, err := clusterstate.ProgramKubeconfig(".", *kubeconfig)
	if err != nil {
		fmt.Fprintf(stderr, "listwatch: %v\n", err)
		return 2
	}
	if note != "" {
		fmt.Fprintf(stderr, "listwatch: %s\n", note)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kc)
	if err != nil {
		fmt.Fprintln(stderr, "listwatch:", err)
		return 1
	}
	lw, err := listwatcher.New(cfg, *resource, *namespace)
	if err != nil {
		fmt.Fprintln(stderr, "listwatch:", err)
		return 1
	}
	lw.LabelSelector, lw.FieldSelector = *selector, *fieldSelector

	out := stdout
	if *outFile != "" {
		f, err := os.Create(*outFile)
		if err != nil {
			fmt.Fprintln(stderr, "listwatch:", err)
			return 1
		}
		defer f.Close()
		out = f // an *os.File is unbuffered: every line is written as printed
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	listwatcher.ListAndWatch(ctx, lw, listwatcher.Options{
		PageSize:            *pageSize,
		TimeoutSeconds:      *timeout,
		AllowWatchBookmarks: *bookmarks,
		WatchList:           *watchList,
	}, func(s listwatcher.Step) {
		print(out, s)
		// report runs on the loop's goroutine: until it returns, the loop
		// does not open the watch, so changes made now fall in the gap.
		if s.Op == listwatcher.StepList && *pause != "" {
			waitForFile(ctx, *pause)
		}
	})
	return 0
}

// waitForFile polls for file until it exists or ctx ends.
func waitForFile(ctx context.Context, file string) {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if _, err := os.Stat(file); err == nil {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// printText writes one readable line per step (and one per listed item).
func printText(out io.Writer, s listwatcher.Step) {
	switch s.Op {
	case listwatcher.StepList:
		items, _ := meta.ExtractList(s.List)
		fmt.Fprintf(out, "LIST %s rv=%s items=%d\n", s.List.GetObjectKind().GroupVersionKind().Kind, s.ResourceVersion, len(items))
		for _, item := range items {
			m, _ := meta.Accessor(item)
			fmt.Fprintf(out, "  ITEM %s rv=%s\n", name(m), m.GetResourceVersion())
		}
	case listwatcher.StepWatch:
		from := s.ResourceVersion
		if from == "" {
			from = `"" (streaming list: every object first, then live events)`
		}
		fmt.Fprintf(out, "WATCH from rv=%s\n", from)
	case listwatcher.StepEvent:
		if s.Event.Type == watch.Error {
			fmt.Fprintf(out, "ERROR %v\n", listwatcher.StatusError(s.Event.Object))
			return
		}
		m, _ := meta.Accessor(s.Event.Object)
		if s.Event.Type == watch.Bookmark {
			fmt.Fprintf(out, "BOOKMARK rv=%s%s\n", m.GetResourceVersion(), annotations(m.GetAnnotations()))
			return
		}
		fmt.Fprintf(out, "%s %s %s rv=%s\n", s.Event.Type, s.Event.Object.GetObjectKind().GroupVersionKind().Kind, name(m), m.GetResourceVersion())
	case listwatcher.StepWatchEnd:
		if s.Err == nil {
			fmt.Fprintf(out, "WATCH-END the stream ended (timeout, or a broken connection); resume from rv=%s\n", s.ResourceVersion)
		} else {
			fmt.Fprintf(out, "WATCH-END %v\n", s.Err)
		}
	case listwatcher.StepRelist:
		fmt.Fprintf(out, "RELIST %v\n", s.Err)
	case listwatcher.StepBackoff:
		fmt.Fprintf(out, "BACKOFF %s: %v\n", s.Delay.Round(1e6), s.Err)
	}
}

// name is NAMESPACE/NAME, or NAME for a cluster-scoped object.
func name(m metav1.Object) string {
	if m.GetNamespace() == "" {
		return m.GetName()
	}
	return m.GetNamespace() + "/" + m.GetName()
}

func annotations(a map[string]string) string {
	if v, ok := a["k8s.io/initial-events-end"]; ok {
		return " k8s.io/initial-events-end=" + v
	}
	return ""
}

// printJSON writes a step as one JSON line: a LIST as the list itself, an
// event as {"type":..,"object":..} exactly as on the wire, and the loop's own
// steps as {"step":..,"resourceVersion":..,"error":..}. labkit's transcript
// reads the first two; the lab's `steps` script command reads all three.
func printJSON(out io.Writer, s listwatcher.Step) {
	var v any
	switch s.Op {
	case listwatcher.StepList:
		v = s.List
	case listwatcher.StepEvent:
		v = map[string]any{"type": s.Event.Type, "object": s.Event.Object}
	default:
		rec := map[string]any{"step": s.Op, "resourceVersion": s.ResourceVersion}
		if s.Err != nil {
			rec["error"] = s.Err.Error()
			var status apierrors.APIStatus
			if errors.As(s.Err, &status) {
				rec["code"], rec["reason"] = status.Status().Code, status.Status().Reason
			}
		}
		v = rec
	}
	line, err := json.Marshal(v)
	if err != nil {
		line, _ = json.Marshal(map[string]any{"step": "OUTPUT-ERROR", "error": err.Error()})
	}
	out.Write(append(line, '\n'))
}
