// Command view serves a page that shows, live, the state of every layer of
// the course's stack as events flow through it (scripts/labs view runs it):
//
//	embedded etcd -> lab 04 etcd3 store and Cacher -> lab 03 API server and
//	WatchServer -> HTTP -> lab 02 ListWatch -> lab 05 Reflector, RealFIFO,
//	Indexer, handler
//
// with buttons that each show a lesson: write, burst, add a slow watcher
// (cut off at the time budget), watch from an old resourceVersion (410),
// compact etcd, restart the API server (the Reflector backs off and
// watches again, or relists after a 410). Upstream has no such view: a real
// kube-apiserver shows these only through its metrics and logs.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

func main() {
	// The signals stay caught until we exit: a second SIGINT or SIGTERM
	// while the stack stops is swallowed, not fatal. After a Ctrl-C in a
	// terminal, scripts/labs view passes on the SIGINT it got as well.
	ctx, _ := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	os.Exit(Main(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// Main runs the view until ctx ends; it returns the exit code.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("view", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("listen", "127.0.0.1:0", "where the page is served (127.0.0.1 only; port 0: a free one)")
	kubeconfig := fs.String("kubeconfig", "", "a real cluster to show beside the course's stack: the view writes the same ConfigMaps to its namespace \""+namespace+"\" and watches them with client-go (scripts/labs view passes the cluster that is up)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "view: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	ln, err := listen(*addr)
	if err != nil {
		fmt.Fprintln(stderr, "view:", err)
		return 2
	}
	fmt.Fprintln(stdout, "view: starting the course's stack (etcd, lab 04's Cacher, lab 03's API server, lab 02's ListWatch, lab 05's informer) ...")
	log := &eventLog{}
	if *kubeconfig != "" {
		fmt.Fprintf(stdout, "view: and beside it the real cluster of %s (client-go's informer, the kube-apiserver's /metrics) ...\n", shortPath(*kubeconfig))
	}
	s, err := startStack(ctx, log, *kubeconfig, namespace)
	if err != nil {
		ln.Close()
		fmt.Fprintln(stderr, "view:", err)
		return 1
	}
	defer s.Close()
	log.add("view", "the stack is up; the informer has synced", nil)
	serveCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	srv := &http.Server{Handler: newHandler(serveCtx, s, ln.Addr().String()), ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	fmt.Fprintf(stdout, "view: open http://%s/ (Ctrl-C stops everything)\n", ln.Addr())
	select {
	case <-ctx.Done():
	case err := <-served:
		if !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintln(stderr, "view:", err)
			return 1
		}
	}
	cancel() // ends the event streams, so Shutdown does not wait on them
	shutdownCtx, done := context.WithTimeout(context.Background(), 5*time.Second)
	defer done()
	srv.Shutdown(shutdownCtx)
	fmt.Fprintln(stdout, "view: stopped")
	return 0
}

// shortPath is path relative to the working directory when it lies below
// it (.cluster/kubeconfig, from the checkout's root), else path.
func shortPath(path string) string {
	wd, err := os.Getwd()
	if err != nil {
		return path
	}
	rel, err := filepath.Rel(wd, path)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return path
	}
	return rel
}
