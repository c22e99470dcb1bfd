// Upstream: `NewAPIServerCommand`
// (k8s.io/kubernetes@v1.37.0/cmd/kube-apiserver/app/server.go:71): flags,
// then run until a signal asks to stop. Three
// flags instead of hundreds; etcd runs inside the process instead of being
// reached through --etcd-servers.

// Package miniapiservercmd is cmd/miniapiserver's code, in an internal
// package so tests run the very same program in-process (labkit registers
// Main for testscript's `exec miniapiserver`).
package miniapiservercmd

import (
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/listwatch-labs/listwatch-labs/labs/04-cacher/miniapiserver"
)

// Main is cmd/miniapiserver: parse flags, serve until SIGINT or SIGTERM,
// shut down cleanly. The URL and the kubeconfig's path go to stdout, one
// line, so a script can wait for it; errors go to stderr.
func Main(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("miniapiserver", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg := miniapiserver.Config{ErrorLog: stderr}
	fs.StringVar(&cfg.Listen, "listen", "127.0.0.1:0", "address to listen on; the host must be 127.0.0.1, port 0 picks a free port")
	fs.StringVar(&cfg.KubeconfigOut, "kubeconfig-out", "", "write a kubeconfig for this server here (mode 0600)")
	fs.StringVar(&cfg.EtcdDir, "etcd-dir", "", "etcd's data directory; start again with the same one to keep the objects (default: a temporary directory, removed at exit)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "miniapiserver: unexpected arguments %q\n", fs.Args())
		return 2
	}
	if cfg.KubeconfigOut == "" {
		fmt.Fprintln(stderr, "miniapiserver: --kubeconfig-out is required: kubectl needs it to find the server")
		return 2
	}
	in, err := miniapiserver.Start(cfg)
	if err != nil {
		fmt.Fprintln(stderr, "miniapiserver:", err)
		return 1
	}
	fmt.Fprintf(stdout, "miniapiserver: serving %s, kubeconfig in %s, etcd data in %s\n", in.URL, in.KubeconfigPath, in.EtcdDir)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	<-sig
	signal.Stop(sig)
	if err := in.Close(); err != nil {
		fmt.Fprintln(stderr, "miniapiserver: shutdown:", err)
		return 1
	}
	fmt.Fprintln(stdout, "miniapiserver: stopped")
	return 0
}
