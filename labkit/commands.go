package labkit

// The testscript commands of labkit/README.md. Each fails the script with a
// message that names what went wrong; none sleeps: waiting is polling a
// condition until a deadline.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/listwatch-labs/listwatch-labs/clusterstate"
	"github.com/rogpeppe/go-internal/testscript"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
)

// Commands returns labkit's testscript commands (a new map each call).
func Commands() map[string]func(ts *testscript.TestScript, neg bool, args []string) {
	return map[string]func(ts *testscript.TestScript, neg bool, args []string){
		"kapply":         cmdApply,
		"kcreate":        cmdCreate,
		"kpatch":         cmdPatch,
		"kdelete":        cmdDelete,
		"listrv":         cmdListRV,
		"waitfor":        cmdWaitFor,
		"kwatch":         cmdWatch,
		"transcript":     cmdTranscript,
		"chunks":         cmdChunks,
		"labcluster":     cmdLabcluster,
		"privatecluster": cmdPrivateCluster,
		"target":         cmdTarget,
		"kubectl":        cmdKubectl,
		"tcpproxy":       cmdTCPProxy,
		"jsonvar":        cmdJSONVar,
		"freeport":       cmdFreePort,
		"release":        cmdRelease,
	}
}

func noNeg(ts *testscript.TestScript, neg bool, name string) {
	if neg {
		ts.Fatalf("%s does not support !", name)
	}
}

func ctxTimeout(d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), d)
}

// resourceFor resolves "configmaps" (or "configmap", "deployments.apps") to
// the resource the apiserver serves.
func resourceFor(ts *testscript.TestScript, c *Cluster, name string) schema.GroupVersionResource {
	gr := schema.ParseGroupResource(name)
	gvr, err := c.Mapper.ResourceFor(gr.WithVersion(""))
	if err != nil {
		ts.Fatalf("unknown resource %q: %v", name, err)
	}
	return gvr
}

// kapply FILE: server-side apply every object in FILE into $NS.
func cmdApply(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "kapply")
	if len(args) != 1 {
		ts.Fatalf("usage: kapply FILE")
	}
	forEachObject(ts, args[0], func(ctx context.Context, ri dynamic.ResourceInterface, obj *unstructured.Unstructured) error {
		_, err := ri.Apply(ctx, obj.GetName(), obj, metav1.ApplyOptions{FieldManager: "labkit", Force: true})
		return err
	}, "applied")
}

// kcreate FILE: create every object in FILE into $NS, as `kubectl create -f`
// does. kapply is a server-side apply, which the labs' own servers (lab 03's,
// lab 04's miniapiserver) do not serve; a create works on every target.
func cmdCreate(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "kcreate")
	if len(args) != 1 {
		ts.Fatalf("usage: kcreate FILE")
	}
	forEachObject(ts, args[0], func(ctx context.Context, ri dynamic.ResourceInterface, obj *unstructured.Unstructured) error {
		_, err := ri.Create(ctx, obj, metav1.CreateOptions{})
		return err
	}, "created")
}

// forEachObject decodes FILE (YAML or JSON, "---" separated) and calls do for
// each object with its resource on the script's target, in $NS when the
// resource is namespaced; it logs "VERB resource/name".
func forEachObject(ts *testscript.TestScript, file string, do func(context.Context, dynamic.ResourceInterface, *unstructured.Unstructured) error, verb string) {
	s := stateOf(ts)
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(ts.ReadFile(file)), 4096)
	for {
		obj := &unstructured.Unstructured{}
		if err := dec.Decode(&obj.Object); err == io.EOF {
			return
		} else if err != nil {
			ts.Fatalf("%s: %v", file, err)
		}
		if len(obj.Object) == 0 {
			continue // an empty YAML document
		}
		gvk := obj.GroupVersionKind()
		mapping, err := s.target.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			ts.Fatalf("%s: target %s: %v", file, s.target.Name, err)
		}
		var ri dynamic.ResourceInterface = s.target.Dynamic.Resource(mapping.Resource)
		if mapping.Scope.Name() == "namespace" {
			obj.SetNamespace(s.ns)
			ri = s.target.Dynamic.Resource(mapping.Resource).Namespace(s.ns)
		}
		ctx, cancel := ctxTimeout(30 * time.Second)
		err = do(ctx, ri, obj)
		cancel()
		ts.Check(err)
		ts.Logf("%s %s/%s", verb, mapping.Resource.Resource, obj.GetName())
	}
}

// kpatch RESOURCE NAME PATCH: a JSON merge patch.
func cmdPatch(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "kpatch")
	if len(args) != 3 {
		ts.Fatalf("usage: kpatch RESOURCE NAME MERGE-PATCH")
	}
	s := stateOf(ts)
	gvr := resourceFor(ts, s.target, args[0])
	ctx, cancel := ctxTimeout(30 * time.Second)
	defer cancel()
	_, err := s.target.Dynamic.Resource(gvr).Namespace(s.ns).Patch(ctx, args[1], types.MergePatchType, []byte(args[2]), metav1.PatchOptions{})
	ts.Check(err)
}

// kdelete RESOURCE NAME
func cmdDelete(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "kdelete")
	if len(args) != 2 {
		ts.Fatalf("usage: kdelete RESOURCE NAME")
	}
	s := stateOf(ts)
	gvr := resourceFor(ts, s.target, args[0])
	ctx, cancel := ctxTimeout(30 * time.Second)
	defer cancel()
	ts.Check(s.target.Dynamic.Resource(gvr).Namespace(s.ns).Delete(ctx, args[1], metav1.DeleteOptions{}))
}

// listrv [-l SELECTOR] RESOURCE VAR: LIST in $NS, set VAR to its resourceVersion.
func cmdListRV(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "listrv")
	fs := flag.NewFlagSet("listrv", flag.ContinueOnError)
	selector := fs.String("l", "", "label selector")
	if err := fs.Parse(args); err != nil || fs.NArg() != 2 {
		ts.Fatalf("usage: listrv [-l SELECTOR] RESOURCE VAR")
	}
	s := stateOf(ts)
	gvr := resourceFor(ts, s.target, fs.Arg(0))
	ctx, cancel := ctxTimeout(30 * time.Second)
	defer cancel()
	list, err := s.target.Dynamic.Resource(gvr).Namespace(s.ns).List(ctx, metav1.ListOptions{LabelSelector: *selector})
	ts.Check(err)
	ts.Setenv(fs.Arg(1), list.GetResourceVersion())
}

// waitfor [-timeout D] COND ARGS: poll until COND holds.
//
//	exists RESOURCE NAME     the object exists in $NS
//	gone RESOURCE NAME       it does not
//	file FILE REGEXP         FILE has a line matching REGEXP
//	count FILE REGEXP N      FILE has at least N lines matching REGEXP
//	http URL                 a plain GET of URL answers 200 (a proxy is up)
func cmdWaitFor(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "waitfor")
	fs := flag.NewFlagSet("waitfor", flag.ContinueOnError)
	timeout := fs.Duration("timeout", 30*time.Second, "how long to wait")
	if err := fs.Parse(args); err != nil || fs.NArg() < 1 {
		ts.Fatalf("usage: waitfor [-timeout D] exists|gone|file|count ARGS")
	}
	s := stateOf(ts)
	args = fs.Args()
	var check func() (bool, string)
	switch {
	case (args[0] == "exists" || args[0] == "gone") && len(args) == 3:
		gvr := resourceFor(ts, s.target, args[1])
		want := args[0] == "exists"
		check = func() (bool, string) {
			ctx, cancel := ctxTimeout(5 * time.Second)
			defer cancel()
			_, err := s.target.Dynamic.Resource(gvr).Namespace(s.ns).Get(ctx, args[2], metav1.GetOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				return false, err.Error()
			}
			return (err == nil) == want, fmt.Sprintf("%s/%s exists: %v", args[1], args[2], err == nil)
		}
	case args[0] == "file" && len(args) == 3, args[0] == "count" && len(args) == 4:
		re, err := regexp.Compile("(?m)" + args[2])
		ts.Check(err)
		n := 1
		if args[0] == "count" {
			n, err = strconv.Atoi(args[3])
			ts.Check(err)
		}
		file := ts.MkAbs(args[1])
		check = func() (bool, string) {
			b, err := os.ReadFile(file)
			if err != nil {
				return false, err.Error()
			}
			got := len(re.FindAll(b, -1))
			return got >= n, fmt.Sprintf("%d of %d lines matching %q in %s", got, n, args[2], args[1])
		}
	case args[0] == "http" && len(args) == 2:
		client := &http.Client{Timeout: 2 * time.Second}
		check = func() (bool, string) {
			resp, err := client.Get(args[1])
			if err != nil {
				return false, err.Error()
			}
			resp.Body.Close()
			return resp.StatusCode == http.StatusOK, resp.Status
		}
	default:
		ts.Fatalf("usage: waitfor [-timeout D] exists RES NAME | gone RES NAME | file FILE REGEXP | count FILE REGEXP N | http URL")
	}
	var state string
	err := wait.PollUntilContextTimeout(context.Background(), 25*time.Millisecond, *timeout, true, func(context.Context) (bool, error) {
		var ok bool
		ok, state = check()
		return ok, nil
	})
	if err != nil {
		ts.Fatalf("waitfor %s: not true after %s (%s)", strings.Join(args, " "), *timeout, state)
	}
}

// RawWatch is a watch running in the background whose body is copied, byte
// for byte, into a file: the raw stream, for transcript or chunks to read.
// kwatch uses it; a lab that watches another server (lab 03's own) can too.
type RawWatch struct {
	cancel context.CancelFunc
	done   chan struct{} // closed once the body is copied and the file closed
	err    error         // the copy's error; read only after done is closed
}

// StartRawWatch GETs url with client (a watch URL: ...?watch=1&...) and copies
// the body to file until Stop. A refused watch (not 200) is an error that
// carries the server's Status body.
func StartRawWatch(client *http.Client, url, file string) (*RawWatch, error) {
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		cancel()
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		cancel()
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		cancel()
		return nil, fmt.Errorf("HTTP %d: %s", resp.StatusCode, bytes.TrimSpace(body))
	}
	out, err := os.Create(file)
	if err != nil {
		resp.Body.Close()
		cancel()
		return nil, err
	}
	w := &RawWatch{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		defer out.Close()
		defer resp.Body.Close()
		_, w.err = io.Copy(out, resp.Body)
	}()
	return w, nil
}

// Stop ends the watch and waits until the file holds everything received.
// Ending it ourselves cancels the request, so context.Canceled is no error.
func (w *RawWatch) Stop() error {
	w.cancel()
	<-w.done
	if errors.Is(w.err, context.Canceled) {
		return nil
	}
	return w.err
}

// kwatch NAME RESOURCE [QUERY] / kwatch -stop NAME: a raw watch in the
// background, its body written unchanged to $WORK/NAME.json.
func cmdWatch(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "kwatch")
	s := stateOf(ts)
	if len(args) == 2 && args[0] == "-stop" {
		w, ok := s.watches[args[1]]
		if !ok {
			ts.Fatalf("kwatch: no watch named %q", args[1])
		}
		delete(s.watches, args[1])
		if err := w.Stop(); err != nil {
			ts.Fatalf("kwatch %s: %v", args[1], err)
		}
		return
	}
	if len(args) < 2 || len(args) > 3 {
		ts.Fatalf("usage: kwatch NAME RESOURCE [QUERY] | kwatch -stop NAME")
	}
	name := args[0]
	if _, dup := s.watches[name]; dup {
		ts.Fatalf("kwatch: %s already running", name)
	}
	gvr := resourceFor(ts, s.target, args[1])
	query := "watch=1"
	if len(args) == 3 {
		query += "&" + args[2]
	}
	client, err := rest.HTTPClientFor(s.target.Config)
	ts.Check(err)
	w, err := StartRawWatch(client, s.target.Server+collectionPath(gvr, s.ns)+"?"+query, ts.MkAbs(name+".json"))
	if err != nil {
		ts.Fatalf("kwatch %s: %v", name, err)
	}
	s.watches[name] = w
}

// collectionPath is the URL path of a namespaced collection.
func collectionPath(gvr schema.GroupVersionResource, ns string) string {
	if gvr.Group == "" {
		return fmt.Sprintf("/api/%s/namespaces/%s/%s", gvr.Version, ns, gvr.Resource)
	}
	return fmt.Sprintf("/apis/%s/%s/namespaces/%s/%s", gvr.Group, gvr.Version, ns, gvr.Resource)
}

// transcript [-squash-bookmarks] [-f FIELD]... FILE...: print the transcript of watch output,
// Lists and Statuses in FILEs, numbering resourceVersions across all of them.
func cmdTranscript(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "transcript")
	var fields []string
	squash := false
	for len(args) > 0 && strings.HasPrefix(args[0], "-") {
		switch {
		case args[0] == "-squash-bookmarks":
			squash, args = true, args[1:]
		case args[0] == "-f" && len(args) >= 2:
			fields, args = append(fields, args[1]), args[2:]
		default:
			ts.Fatalf("transcript: unknown flag %s", args[0])
		}
	}
	if len(args) == 0 {
		ts.Fatalf("usage: transcript [-squash-bookmarks] [-f FIELD]... FILE...")
	}
	t := NewTranscript(fields...)
	t.SquashBookmarks = squash
	for _, f := range args {
		if err := t.AddStream(strings.NewReader(ts.ReadFile(f))); err != nil {
			ts.Fatalf("transcript %s: %v", f, err)
		}
	}
	fmt.Fprint(ts.Stdout(), t.String())
}

// chunks FILE: the HTTP/1.1 chunks of a raw body (curl --raw), one per line.
func cmdChunks(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "chunks")
	if len(args) != 1 {
		ts.Fatalf("usage: chunks FILE")
	}
	out, err := DescribeChunks([]byte(ts.ReadFile(args[0])))
	fmt.Fprint(ts.Stdout(), out)
	if err != nil {
		ts.Fatalf("chunks %s: %v", args[0], err)
	}
}

// labcluster ARGS...: the labcluster binary, against this script's target.
// `labcluster kubectl ...` works on any target; the other subcommands
// (restart, etcd compact, status) need a labcluster.
func cmdLabcluster(ts *testscript.TestScript, neg bool, args []string) {
	c := Target(ts)
	if c.Dir == "" && (len(args) == 0 || args[0] != "kubectl") {
		msg := notLabcluster(c, "labcluster "+strings.Join(args, " "))
		if !neg {
			ts.Fatalf("%s", msg)
		}
		fmt.Fprintln(ts.Stderr(), msg)
		return
	}
	bin, err := LabclusterBinary()
	ts.Check(err)
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "LABCLUSTER_DIR="+c.Dir, "KUBECONFIG="+ts.Getenv("KUBECONFIG"), "HOME="+ts.Getenv("HOME"))
	cmd.Dir = ts.Getenv("WORK")
	cmd.Stdout, cmd.Stderr = ts.Stdout(), ts.Stderr()
	err = cmd.Run()
	switch {
	case err != nil && !neg:
		ts.Fatalf("labcluster %s: %v", strings.Join(args, " "), err)
	case err == nil && neg:
		ts.Fatalf("labcluster %s: unexpected success", strings.Join(args, " "))
	}
}

// background is a command running while the script goes on.
type background struct {
	cancel context.CancelFunc
	done   chan struct{} // closed when the command has exited
	err    error         // its exit error; read only after done is closed
}

func (b *background) stop() error {
	b.cancel()
	<-b.done
	return b.err
}

// kubectl ARGS... | kubectl -bg NAME ARGS... | kubectl -stop NAME: the real
// kubectl (built into labcluster) with $KUBECONFIG, which follows the target
// (a script may also set it: env KUBECONFIG=...). -bg runs it in the
// background, output to $WORK/NAME.out, until kubectl -stop NAME.
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
	bin, err := LabclusterBinary()
	ts.Check(err)
	var name string
	if len(args) >= 2 && args[0] == "-bg" {
		name, args = args[1], args[2:]
		if _, dup := s.bg[name]; dup {
			ts.Fatalf("kubectl -bg: %s already running", name)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, append([]string{"kubectl"}, args...)...)
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

// jsonvar VAR FILE PATH: set VAR to the value at dotted PATH of the JSON in
// FILE, e.g. the resourceVersion of a List that curl saved:
// jsonvar RV list.json metadata.resourceVersion
func cmdJSONVar(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "jsonvar")
	if len(args) != 3 {
		ts.Fatalf("usage: jsonvar VAR FILE PATH")
	}
	var doc map[string]any
	dec := json.NewDecoder(strings.NewReader(ts.ReadFile(args[1])))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		ts.Fatalf("jsonvar: %s: %v", args[1], err)
	}
	v := get(doc, strings.Split(args[2], ".")...)
	if v == nil {
		ts.Fatalf("jsonvar: %s has no %s", args[1], args[2])
	}
	ts.Setenv(args[0], str(doc, strings.Split(args[2], ".")...))
}

// freeport VAR: set VAR to a free TCP port on 127.0.0.1, for a server the
// script starts (kubectl proxy --port=$PORT).
func cmdFreePort(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "freeport")
	if len(args) != 1 {
		ts.Fatalf("usage: freeport VAR")
	}
	port, err := clusterstate.FreeLoopbackPort()
	ts.Check(err)
	ts.Setenv(args[0], strconv.Itoa(port))
}
