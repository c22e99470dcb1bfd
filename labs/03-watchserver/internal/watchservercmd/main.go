// Upstream: k8s.io/kubernetes@v1.37.0/cmd/kube-apiserver/app/server.go
// (NewAPIServerCommand: flags, then run until a signal asks to stop) and
// k8s.io/apiserver@v0.37.0/pkg/server/signal.go (SetupSignalHandler). A
// handful of flags instead of hundreds; one SIGINT or SIGTERM shuts down
// cleanly (a second one does not force an exit, as upstream's does: `os.Exit`,
// k8s.io/apiserver@v0.37.0/pkg/server/signal.go:51).

// Package watchservercmd is cmd/watchserver's code, in an internal package so
// tests run the very same program in-process (labkit registers Main for
// testscript's `exec watchserver`).
package watchservercmd

import (
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/listwatch-labs/listwatch-labs/labs/03-watchserver/apiserver"
)

// Main is cmd/watchserver: parse flags, serve until SIGINT or SIGTERM, shut
// down cleanly. It reports on stderr; stdout stays empty (the program has no
// output of its own, only a server).
func Main(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("watchserver", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg := apiserver.Config{ErrorLog: stderr}
	fs.StringVar(&cfg.Listen, "listen", "127.0.0.1:0", "address to listen on; the host must be 127.0.0.1, port 0 picks a free port")
	fs.StringVar(&cfg.KubeconfigOut, "kubeconfig-out", "", "write a kubeconfig for this server here (mode 0600)")
	fs.IntVar(&cfg.HistorySize, "history", 1000, "how many events a watch from an old resourceVersion can replay")
	fs.DurationVar(&cfg.BookmarkInterval, "bookmark-interval", 0, "how often a watcher that allows bookmarks gets one (default 1m)")
	fs.DurationVar(&cfg.MinRequestTimeout, "min-request-timeout", 0, "a watch without timeoutSeconds ends after 1-2x this (default 30m)")
	compress := fs.Bool("watch-list-compression", true, "answer a watch-list that accepts gzip with gzip (kube-apiserver's gate WatchListCompression)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "watchserver: unexpected arguments %q\n", fs.Args())
		return 2
	}
	cfg.DisableWatchListCompression = !*compress
	in, err := apiserver.Start(cfg)
	if err != nil {
		fmt.Fprintln(stderr, "watchserver:", err)
		return 1
	}
	fmt.Fprintf(stderr, "watchserver: serving %s, kubeconfig in %s\n", in.URL, in.KubeconfigPath)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	<-sig
	signal.Stop(sig)
	if err := in.Close(); err != nil {
		fmt.Fprintln(stderr, "watchserver: shutdown:", err)
		return 1
	}
	fmt.Fprintln(stderr, "watchserver: stopped")
	return 0
}
