package labkit

// tcpproxy: a TCP proxy in front of the script's target, which the script can
// cut and resume, to take the apiserver away from one client at a moment the
// script chooses while the script itself keeps talking to the apiserver (lab
// 02's watch that breaks mid-stream, lab 05's informer that must relist).
// TLS passes through untouched: the certificate is for 127.0.0.1, and so is
// the proxy.

import (
	"io"
	"net"
	"net/url"
	"os"
	"sync"

	"github.com/rogpeppe/go-internal/testscript"
	"k8s.io/client-go/tools/clientcmd"
)

type tcpProxy struct {
	addr, target string
	mu           sync.Mutex // guards ln and conns
	ln           net.Listener
	conns        map[net.Conn]bool
	wg           sync.WaitGroup // the accept loop and every forwarding goroutine
}

// tcpproxy start [NAME] | cut [NAME] | resume [NAME]: `start` listens on
// 127.0.0.1 and writes $WORK/NAME.kubeconfig (NAME defaults to proxy), the
// target's kubeconfig with the proxy as server; `cut` closes every
// connection and stops listening (connection refused from then on); `resume`
// listens again on the same port.
func cmdTCPProxy(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "tcpproxy")
	if len(args) < 1 || len(args) > 2 {
		ts.Fatalf("usage: tcpproxy start|cut|resume [NAME]")
	}
	s := stateOf(ts)
	name := "proxy"
	if len(args) == 2 {
		name = args[1]
	}
	p := s.proxies[name]
	switch args[0] {
	case "start":
		if p != nil {
			ts.Fatalf("tcpproxy: %s already started", name)
		}
		u, err := url.Parse(s.target.Server)
		ts.Check(err)
		p = &tcpProxy{addr: "127.0.0.1:0", target: u.Host, conns: map[net.Conn]bool{}}
		ts.Check(p.listen())
		s.proxies[name] = p
		cfg, err := clientcmd.LoadFromFile(ts.Getenv("KUBECONFIG"))
		ts.Check(err)
		for _, c := range cfg.Clusters {
			c.Server = "https://" + p.addr
		}
		kc := ts.MkAbs(name + ".kubeconfig")
		ts.Check(clientcmd.WriteToFile(*cfg, kc))
		ts.Check(os.Chmod(kc, 0o600))
	case "cut", "resume":
		if p == nil {
			ts.Fatalf("tcpproxy: no proxy %q (tcpproxy start %s first)", name, name)
		}
		if args[0] == "cut" {
			p.cut()
		} else {
			ts.Check(p.listen())
		}
	default:
		ts.Fatalf("usage: tcpproxy start|cut|resume [NAME]")
	}
}

// listen listens on p.addr (a port of 127.0.0.1; 0 the first time) and
// forwards every connection until cut.
func (p *tcpProxy) listen() error {
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		return err
	}
	p.mu.Lock()
	p.ln, p.addr = ln, ln.Addr().String()
	p.mu.Unlock()
	p.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return // cut closed the listener
			}
			p.wg.Go(func() { p.forward(c) })
		}
	})
	return nil
}

func (p *tcpProxy) forward(client net.Conn) {
	server, err := net.Dial("tcp", p.target)
	if err != nil {
		client.Close()
		return
	}
	p.mu.Lock()
	if p.ln == nil { // cut while we dialled
		p.mu.Unlock()
		client.Close()
		server.Close()
		return
	}
	p.conns[client], p.conns[server] = true, true
	p.mu.Unlock()
	done := make(chan struct{}, 2)
	go func() { io.Copy(server, client); done <- struct{}{} }()
	go func() { io.Copy(client, server); done <- struct{}{} }()
	<-done
	client.Close()
	server.Close()
	<-done
	p.mu.Lock()
	delete(p.conns, client)
	delete(p.conns, server)
	p.mu.Unlock()
}

// cut stops listening and closes every connection, as if the server died.
func (p *tcpProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		c.Close()
	}
}

// stop cuts the proxy and waits for its goroutines.
func (p *tcpProxy) stop() {
	p.cut()
	p.wg.Wait()
}
