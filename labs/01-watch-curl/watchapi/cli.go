// The watch command (cmd/watch): curl's watch in Go, one line per event.
//
// Upstream twin: `kubectl get --watch` (k8s.io/kubectl@v0.36.4/pkg/cmd/get/get.go,
// GetOptions.watch), which goes through client-go's typed decoding and prints
// table rows. Left out: all of that; we print the event type, kind, name and
// resourceVersion straight from the JSON frame.

package watchapi

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"sort"
	"strings"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Main is the watch command (cmd/watch) with its arguments, returning the exit
// code. It lives here so the lab's tests can run it in-process.
func Main(args []string) int {
	fs := flag.NewFlagSet("watch", flag.ContinueOnError)
	kubeconfig := fs.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig file")
	ns := fs.String("n", "default", "namespace")
	var o Options
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
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		fmt.Fprintf(os.Stderr, "watch: %v\n", err)
		return 1
	}
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		fmt.Fprintf(os.Stderr, "watch: %v\n", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()

	url := fmt.Sprintf("%s/api/v1/namespaces/%s/%s?%s", strings.TrimSuffix(cfg.Host, "/"), *ns, fs.Arg(0), o.Query())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		fmt.Fprintf(os.Stderr, "watch: %v\n", err)
		return 1
	}
	resp, err := client.Do(req)
	if err != nil {
		fmt.Fprintf(os.Stderr, "watch: %v\n", err)
		return 1
	}
	defer resp.Body.Close()
	// A watch the apiserver refuses up front (bad parameters, no permission)
	// gets a plain HTTP error with a Status body, not a stream.
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		fmt.Fprintf(os.Stderr, "watch: HTTP %d: %s\n", resp.StatusCode, strings.TrimSpace(string(body)))
		return 1
	}

	dec := NewDecoder(resp.Body)
	for {
		ev, err := dec.Next()
		if err == io.EOF {
			return 0 // the server ended the watch: timeoutSeconds, or it shut down
		}
		if err != nil {
			if ctx.Err() != nil {
				return 0 // interrupted
			}
			fmt.Fprintf(os.Stderr, "watch: %v\n", err)
			return 1
		}
		if *output == "json" {
			fmt.Printf("{\"type\":%q,\"object\":%s}\n", ev.Type, ev.Object)
			continue
		}
		if err := printLine(ev); err != nil {
			fmt.Fprintf(os.Stderr, "watch: %v\n", err)
			return 1
		}
	}
}

// printLine prints "TYPE Kind name resourceVersion=N", the bookmark's
// annotations, or an ERROR's Status.
func printLine(ev WatchEvent) error {
	if ev.Type == Error {
		s, err := ev.Status()
		if err != nil {
			return err
		}
		fmt.Printf("ERROR %d %s: %s\n", s.Code, s.Reason, s.Message)
		return nil
	}
	m, err := ev.Meta()
	if err != nil {
		return errors.New("an event whose object is not a Kubernetes object: " + err.Error())
	}
	line := fmt.Sprintf("%s %s %s resourceVersion=%s", ev.Type, m.Kind, m.Metadata.Name, m.Metadata.ResourceVersion)
	if ev.Type == Bookmark {
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
	fmt.Println(line)
	return nil
}
