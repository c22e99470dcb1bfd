// Command trace sends ConfigMap writes (100 by default, -writes) through the
// course's whole stack and timestamps every hop (scripts/labs trace runs it):
//
//	writer -> lab 03 API server -> lab 04 etcd3 store -> embedded etcd ->
//	lab 04 Cacher -> lab 03 WatchServer -> HTTP -> lab 02 ListWatch ->
//	lab 05 Reflector -> RealFIFO -> Indexer -> handler
//
// and, when a cluster answers, the same writes through the real
// kube-apiserver and client-go's informer, observed at the same seams where
// they can be seen from outside. It writes trace.json (every write's marks
// and each hop's median and 99th percentile), trace.md (a mermaid sequence
// diagram per stack) and trace.html (the lesson: a timeline of both stacks
// hop by hop, with a key, links to the labs' code and upstream's, and why the
// stacks differ) to -out.
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
	writes := fs.Int("writes", 100, "how many ConfigMaps to write through each stack (after one warm-up write); the page shows each hop's median and 99th percentile")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "trace: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	if *writes < 1 || *writes > 10000 {
		fmt.Fprintf(stderr, "trace: -writes %d: want 1 to 10000\n", *writes)
		return 2
	}
	var traces []StackTrace
	run, err := runLabStack(ctx, *writes)
	if err == nil {
		var st StackTrace
		st, err = summarize(run, func(h PathHop) string { return h.Course })
		traces = append(traces, st)
	}
	if err != nil {
		fmt.Fprintln(stderr, "trace:", err)
		return 1
	}

	if *kubeconfig == "" {
		if _, err := os.Stat(".cluster/kubeconfig"); err == nil {
			*kubeconfig = ".cluster/kubeconfig"
		}
	}
	if *kubeconfig != "" && *kubeconfig != "none" {
		cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
		if err == nil {
			var real *stackRun
			real, err = runRealStack(ctx, cfg, *writes)
			if err == nil {
				var st StackTrace
				st, err = summarize(real, func(h PathHop) string { return h.Real })
				if err == nil {
					traces = append(traces, st)
				}
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
	fmt.Fprint(stdout, text(traces))
	var diagrams []string
	for _, st := range traces {
		diagrams = append(diagrams, "## "+st.Stack+"\n\n```mermaid\n"+mermaid(st)+"```\n")
	}
	data, _ := json.MarshalIndent(traces, "", "  ")
	files := map[string]string{
		"trace.json": string(data) + "\n",
		"trace.md":   "# One ConfigMap write, hop by hop\n\nEach arrow: the hop's median latency over the writes, and its 99th percentile.\n\n" + strings.Join(diagrams, "\n"),
		"trace.html": page(traces, time.Now(), repoLink(*out)),
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

// repoLink makes a repository path (labs/...) into a link relative to the
// directory the page is written to, so it opens from the page in a browser.
// The repository root is LABS_ROOT (scripts/labs sets it), else the nearest
// directory above with a go.work.
func repoLink(out string) func(string) string {
	root := os.Getenv("LABS_ROOT")
	if root == "" {
		dir, _ := filepath.Abs(".")
		for d := dir; ; d = filepath.Dir(d) {
			if _, err := os.Stat(filepath.Join(d, "go.work")); err == nil {
				root = d
				break
			}
			if filepath.Dir(d) == d {
				root = dir
				break
			}
		}
	}
	absOut, err := filepath.Abs(out)
	rel, err2 := filepath.Rel(absOut, root)
	return func(p string) string {
		if err != nil || err2 != nil {
			return filepath.ToSlash(filepath.Join(root, p))
		}
		return filepath.ToSlash(filepath.Join(rel, p))
	}
}
