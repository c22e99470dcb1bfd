// Command trace sends one ConfigMap write through the course's whole stack
// and timestamps every hop (scripts/labs trace runs it):
//
//	writer -> lab 03 API server -> lab 04 etcd3 store -> embedded etcd ->
//	lab 04 Cacher -> lab 03 WatchServer -> HTTP -> lab 02 ListWatch ->
//	lab 05 Reflector -> RealFIFO -> Indexer -> handler
//
// and, when a cluster answers, the same write through the real
// kube-apiserver and client-go's informer, observed at the same seams. It
// writes trace.json, trace.md (a mermaid sequence diagram per stack) and
// trace.html (a self-contained timeline) to -out.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/client-go/tools/clientcmd"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// Main runs the trace; it returns the exit code.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("trace", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("out", ".cluster/trace", "directory for trace.json, trace.md and trace.html")
	kubeconfig := fs.String("kubeconfig", os.Getenv("KUBECONFIG"), "the real cluster to compare with (empty: .cluster/kubeconfig if present; \"none\": skip)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	var traces []StackTrace
	tr, storageDesc, err := runLabStack(ctx)
	if err != nil {
		fmt.Fprintln(stderr, "trace:", err)
		return 1
	}
	traces = append(traces, StackTrace{Stack: tr.Stack, Storage: storageDesc, Hops: tr.Hops()})

	if *kubeconfig == "" {
		if _, err := os.Stat(".cluster/kubeconfig"); err == nil {
			*kubeconfig = ".cluster/kubeconfig"
		}
	}
	if *kubeconfig != "" && *kubeconfig != "none" {
		cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
		if err == nil {
			var real *Tracer
			real, err = runRealStack(ctx, cfg)
			if err == nil {
				traces = append(traces, StackTrace{Stack: real.Stack, Storage: "etcd, the watch cache and the WatchServer inside kube-apiserver (not observable from outside)", Hops: real.Hops()})
			}
		}
		if err != nil {
			fmt.Fprintf(stderr, "trace: the real cluster (%s) is left out: %v\n", *kubeconfig, err)
		}
	}

	if err := os.MkdirAll(*out, 0o755); err != nil {
		fmt.Fprintln(stderr, "trace:", err)
		return 1
	}
	var diagrams []string
	for _, st := range traces {
		fmt.Fprintf(stdout, "%s (storage: %s)\n", st.Stack, st.Storage)
		var prev time.Duration
		for i, h := range st.Hops {
			fmt.Fprintf(stdout, "  %d. %-26s +%-12s hop %-12s %s\n", i+1, h.Name, ms(h.At), ms(h.At-prev), h.Where)
			prev = h.At
		}
		diagrams = append(diagrams, "## "+st.Stack+"\n\n```mermaid\n"+mermaid(st)+"```\n")
	}
	data, _ := json.MarshalIndent(traces, "", "  ")
	files := map[string]string{
		"trace.json": string(data) + "\n",
		"trace.md":   "# One ConfigMap write, hop by hop\n\n" + strings.Join(diagrams, "\n"),
		"trace.html": page(traces, time.Now()),
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(*out, name), []byte(content), 0o644); err != nil {
			fmt.Fprintln(stderr, "trace:", err)
			return 1
		}
	}
	fmt.Fprintf(stdout, "wrote %s (open it in a browser), trace.md (mermaid) and trace.json in %s\n", filepath.Join(*out, "trace.html"), *out)
	return 0
}
