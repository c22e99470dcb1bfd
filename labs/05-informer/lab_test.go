// The lab's cluster tests: testscript exercises (testdata/script) that run
// cmd/informer (our informer over lab 02's ListWatch) and cmd/podsbynode
// (the capstone controller) against the real embedded cluster, each ending
// in a golden transcript. Run one: go test -run TestScripts/configmaps
//
// Besides labkit's commands (labkit/README.md) the scripts use:
//
//	lwproxy start NAME        a TCP proxy to $APISERVER on 127.0.0.1; writes NAME.kubeconfig
//	lwproxy cut NAME          close it and every connection through it (clients get "connection refused")
//	lwproxy resume NAME       listen again on the same port
//	freshlist [-l SEL] RES FILE   LIST RES in $NS and write "name resourceVersion" lines, sorted
//	converged [-timeout D] FILE   wait until FILE (podsbynode --out) equals the pods per node of a LIST
package lab05_test

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/listwatch-labs/listwatch-labs/labkit"
	"github.com/listwatch-labs/listwatch-labs/labs/05-informer/internal/informercmd"
	"github.com/listwatch-labs/listwatch-labs/labs/05-informer/internal/podsbynodecmd"
	"github.com/listwatch-labs/listwatch-labs/labs/05-informer/podsbynode"
)

func TestMain(m *testing.M) {
	labkit.Main(m, map[string]func(){
		"informer":   func() { os.Exit(informercmd.Main(os.Args[1:], os.Stdout, os.Stderr)) },
		"podsbynode": func() { os.Exit(podsbynodecmd.Main(os.Args[1:], os.Stdout, os.Stderr)) },
	})
}

func TestScripts(t *testing.T) {
	labkit.RunScripts(t, "testdata/script", map[string]func(*testscript.TestScript, bool, []string){
		"lwproxy":   cmdProxy,
		"freshlist": cmdFreshList,
		"converged": cmdConverged,
	})
}

// proxy is a TCP proxy that a script can cut and resume: a way to take the
// apiserver away from one client, at a moment the script chooses, while the
// script itself keeps talking to the apiserver.
type proxy struct {
	addr, target string
	// mu guards ln and conns.
	mu    sync.Mutex
	ln    net.Listener
	conns map[net.Conn]bool
	wg    sync.WaitGroup
}

func (p *proxy) listen() error {
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		return err
	}
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	p.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.wg.Go(func() { p.serve(c) })
		}
	})
	return nil
}

func (p *proxy) serve(c net.Conn) {
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		c.Close()
		return
	}
	p.mu.Lock()
	if p.ln == nil { // cut meanwhile
		p.mu.Unlock()
		c.Close()
		up.Close()
		return
	}
	p.conns[c], p.conns[up] = true, true
	p.mu.Unlock()
	done := make(chan struct{}, 2)
	go func() { io.Copy(up, c); done <- struct{}{} }()
	go func() { io.Copy(c, up); done <- struct{}{} }()
	<-done
	c.Close()
	up.Close()
	<-done
	p.mu.Lock()
	delete(p.conns, c)
	delete(p.conns, up)
	p.mu.Unlock()
}

func (p *proxy) cut() {
	p.mu.Lock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
}

// proxies holds each script's proxies by name.
var (
	proxiesMu sync.Mutex
	proxies   = map[*testscript.TestScript]map[string]*proxy{}
)

func proxiesOf(ts *testscript.TestScript) map[string]*proxy {
	proxiesMu.Lock()
	defer proxiesMu.Unlock()
	m := proxies[ts]
	if m == nil {
		m = map[string]*proxy{}
		proxies[ts] = m
		ts.Defer(func() {
			proxiesMu.Lock()
			defer proxiesMu.Unlock()
			for _, p := range m {
				p.cut()
				p.wg.Wait()
			}
			delete(proxies, ts)
		})
	}
	return m
}

func cmdProxy(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: lwproxy start|cut|resume NAME")
	}
	proxies := proxiesOf(ts)
	name := args[1]
	switch args[0] {
	case "start":
		u, err := url.Parse(ts.Getenv("APISERVER"))
		ts.Check(err)
		p := &proxy{addr: "127.0.0.1:0", target: u.Host, conns: map[net.Conn]bool{}}
		ts.Check(p.listen())
		p.addr = p.ln.Addr().String()
		proxies[name] = p
		cfg, err := clientcmd.LoadFromFile(ts.Getenv("KUBECONFIG"))
		ts.Check(err)
		for _, c := range cfg.Clusters {
			c.Server = "https://" + p.addr
		}
		ts.Check(clientcmd.WriteToFile(*cfg, ts.MkAbs(name+".kubeconfig")))
		ts.Check(os.Chmod(ts.MkAbs(name+".kubeconfig"), 0o600))
	case "cut":
		p := proxies[name]
		if p == nil {
			ts.Fatalf("lwproxy: no proxy %q", name)
		}
		p.cut()
	case "resume":
		p := proxies[name]
		if p == nil {
			ts.Fatalf("lwproxy: no proxy %q", name)
		}
		ts.Check(p.listen())
	default:
		ts.Fatalf("usage: lwproxy start|cut|resume NAME")
	}
}

// freshlist [-l SELECTOR] RESOURCE FILE: a LIST straight from the
// apiserver, in the format of `informer --cache-out`.
func cmdFreshList(ts *testscript.TestScript, neg bool, args []string) {
	fs := flag.NewFlagSet("freshlist", flag.ContinueOnError)
	selector := fs.String("l", "", "label selector")
	if err := fs.Parse(args); neg || err != nil || fs.NArg() != 2 {
		ts.Fatalf("usage: freshlist [-l SELECTOR] RESOURCE FILE")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", ts.Getenv("KUBECONFIG"))
	ts.Check(err)
	client, err := dynamic.NewForConfig(cfg)
	ts.Check(err)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	list, err := client.Resource(schema.GroupVersionResource{Version: "v1", Resource: fs.Arg(0)}).
		Namespace(ts.Getenv("NS")).List(ctx, metav1.ListOptions{LabelSelector: *selector})
	ts.Check(err)
	var lines []string
	for _, item := range list.Items {
		lines = append(lines, fmt.Sprintf("%s %s\n", item.GetName(), item.GetResourceVersion()))
	}
	sort.Strings(lines)
	ts.Check(os.WriteFile(ts.MkAbs(fs.Arg(1)), []byte(strings.Join(lines, "")), 0o644))
}

// converged [-timeout D] FILE: wait until FILE (podsbynode --out) holds the
// pods per node of a fresh LIST of pods in $NS.
func cmdConverged(ts *testscript.TestScript, neg bool, args []string) {
	fs := flag.NewFlagSet("converged", flag.ContinueOnError)
	timeout := fs.Duration("timeout", 60*time.Second, "how long to wait")
	if err := fs.Parse(args); neg || err != nil || fs.NArg() != 1 {
		ts.Fatalf("usage: converged [-timeout D] FILE")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", ts.Getenv("KUBECONFIG"))
	ts.Check(err)
	client, err := kubernetes.NewForConfig(cfg)
	ts.Check(err)
	var want, got string
	err = wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, *timeout, true, func(ctx context.Context) (bool, error) {
		pods, err := client.CoreV1().Pods(ts.Getenv("NS")).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil // the apiserver may be restarting
		}
		counts := map[string]int{}
		for _, p := range pods.Items {
			if p.Spec.NodeName != "" {
				counts[p.Spec.NodeName]++
			}
		}
		want = podsbynode.Format(counts)
		b, _ := os.ReadFile(ts.MkAbs(fs.Arg(0)))
		got = string(b)
		return got == want, nil
	})
	if err != nil {
		ts.Fatalf("converged: after %s the controller says\n%sbut a LIST says\n%s", *timeout, got, want)
	}
}
