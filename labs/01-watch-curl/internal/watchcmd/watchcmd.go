// Package watchcmd is the watch command (cmd/watch): curl's watch in Go, one
// line per event. cmd/watch/main.go runs Main; the lab's tests run it
// in-process (lab_test.go). It is the only part of this lab that uses
// client-go, and only to read the kubeconfig and build an *http.Client with
// its TLS settings and bearer token; the request and the decoding are
// package watchapi's, net/http and encoding/json.
//
// Upstream twin: `kubectl get --watch` (`GetOptions.watch`,
// k8s.io/kubectl@v0.37.0/pkg/cmd/get/get.go:614), which goes through client-go's typed decoding and prints
// table rows. Left out: all of that; we print the event type, kind, name and
// resourceVersion straight from the JSON frame.
package watchcmd

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/listwatch-labs/listwatch-labs/clusterstate"
	"github.com/listwatch-labs/listwatch-labs/labs/01-watch-curl/watchapi"
)

// Main is the watch command with its arguments (without the program name).
// It writes events to stdout and errors to stderr, and returns the exit
// code: 0 when the server ended the watch or it was interrupted, 1 on an
// error, 2 on bad usage.
func Main(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("watch", flag.ContinueOnError)
	fs.SetOutput(stderr)
	kubeconfig := fs.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig file (default $KUBECONFIG, else this checkout's .cluster/kubeconfig)")
	ns := fs.String("n", "default", "namespace")
	var o watchapi.Options
	fs.StringVar(&o.ResourceVersion, "rv", "", "resourceVersion to watch from (empty: the current state first)")
	fs.BoolVar(&o.AllowWatchBookmarks, "bookmarks", false, "allowWatchBookmarks")
	fs.IntVar(&o.TimeoutSeconds, "timeout", 0, "timeoutSeconds: the server ends the watch after it")
	fs.StringVar(&o.LabelSelector, "l", "", "labelSelector")
	fs.StringVar(&o.FieldSelector, "field-selector", "", "fieldSelector")
	output := fs.String("o", "line", "line: one summary line per event; json: the raw frames")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: watch [flags] RESOURCE   (a core/v1 resource: configmaps, pods, ...)")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 1 || (*output != "line" && *output != "json") {
		fs.Usage()
		return 2
	}
	fail := func(err error) int {
		fmt.Fprintf(stderr, "watch: %v\n", err)
		return 1
	}
	kc, note, err := clusterstate.ProgramKubeconfig(".", *kubeconfig)
	if err != nil {
		fmt.Fprintf(stderr, "watch: %v\n", err)
		return 2
	}
	if note != "" {
		fmt.Fprintf(stderr, "watch: %s\n", note)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kc)
	if err != nil {
		return fail(err)
	}
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return fail(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()

	body, err := watchapi.Open(ctx, client, watchapi.URL(cfg.Host, *ns, fs.Arg(0), o))
	if err != nil {
		return fail(err)
	}
	defer body.Close()
	dec := watchapi.NewDecoder(body)
	for {
		ev, err := dec.Next()
		if err == io.EOF {
			return 0 // the server ended the watch: timeoutSeconds, or it shut down
		}
		if err != nil {
			if ctx.Err() != nil {
				return 0 // interrupted
			}
			return fail(err)
		}
		if *output == "json" {
			fmt.Fprintf(stdout, "{\"type\":%q,\"object\":%s}\n", ev.Type, ev.Object)
			continue
		}
		if err := printLine(stdout, ev); err != nil {
			return fail(err)
		}
	}
}

// printLine prints "TYPE Kind name resourceVersion=N", the bookmark's
// annotations, or an ERROR's Status.
func printLine(out io.Writer, ev watchapi.WatchEvent) error {
	if ev.Type == watchapi.Error {
		s, err := ev.Status()
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "ERROR %d %s: %s\n", s.Code, s.Reason, s.Message)
		return nil
	}
	m, err := ev.Meta()
	if err != nil {
		return errors.New("an event whose object is not a Kubernetes object: " + err.Error())
	}
	line := fmt.Sprintf("%s %s %s resourceVersion=%s", ev.Type, m.Kind, m.Metadata.Name, m.Metadata.ResourceVersion)
	if ev.Type == watchapi.Bookmark {
		line = fmt.Sprintf("%s %s resourceVersion=%s", ev.Type, m.Kind, m.Metadata.ResourceVersion)
		keys := make([]string, 0, len(m.Metadata.Annotations))
		for k := range m.Metadata.Annotations {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			line += " " + k + "=" + m.Metadata.Annotations[k]
		}
	}
	fmt.Fprintln(out, line)
	return nil
}
