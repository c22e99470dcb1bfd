package main

// `labcluster run`: the supervisor. It owns one cluster: makes its
// credentials, starts each component as a child process, says "ready" once the
// apiserver is, and then serves a few requests on a unix socket (stop, restart
// the apiserver, status) until it is told to stop or its parent dies.
//
// One goroutine (serve) does everything that changes the set of children, so
// no lock is needed: requests from the socket and signals arrive on channels.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/listwatch-labs/listwatch-labs/clusterstate"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/component-base/version"
)

type child struct {
	name   string
	cmd    *exec.Cmd
	exited chan struct{} // closed once the process has exited and been reaped
}

type supervisor struct {
	state    *State
	self     string // path of this binary, to start components
	children map[string]*child
	client   kubernetes.Interface
	// step reports a milestone of the start ("etcd listening") to whoever
	// waits for readiness; `up` prints each with the time it arrived.
	step func(format string, args ...any)
}

type request struct {
	line  string
	reply chan<- string
}

// runSupervisor is `labcluster run`. ready, if not nil, receives one line,
// "ready URL" or "error MESSAGE", and is then closed; with steps, "step WHAT"
// lines come first, as the start progresses (a reader that knows only the
// last line, such as an older labkit, does not ask for them).
func runSupervisor(dir string, components []string, etcdMembers int, detached bool, ready *os.File, steps bool) int {
	report := func(format string, args ...any) {
		if ready != nil {
			fmt.Fprintf(ready, format+"\n", args...)
			ready.Close()
			ready = nil
		}
	}
	step := func(format string, args ...any) {
		if ready != nil && steps {
			fmt.Fprintf(ready, "step "+format+"\n", args...)
		}
	}
	if !detached {
		go exitWhenOrphaned()
	}
	// One supervisor per directory: a second one (two `up`s at once) would
	// wipe the first one's data and credentials under it. The lock is
	// released by the kernel when this process exits, however it exits.
	lock, err := lockDir(dir)
	if err != nil {
		report("error %v", err)
		return 1
	}
	defer lock.Close()
	sv, err := newSupervisor(dir, components, etcdMembers)
	if err != nil {
		report("error %v", err)
		return 1
	}
	sv.step = step
	step("credentials and ports ready")
	sock, err := net.Listen("unix", sv.state.Socket)
	if err != nil {
		report("error control socket: %v", err)
		return 1
	}
	defer os.Remove(sv.state.Socket)
	// Whoever can connect can stop the cluster: only its owner.
	if err := os.Chmod(sv.state.Socket, 0o600); err != nil {
		report("error control socket: %v", err)
		return 1
	}

	if err := sv.startAll(); err != nil {
		report("error %v", err)
		sv.stopAll()
		return 1
	}
	report("ready %s", sv.state.APIServerURL())

	// Socket requests and signals reach serve as channel messages, so only
	// serve's goroutine ever starts or stops a child.
	requests := make(chan request)
	go acceptRequests(sock, requests)
	signals := make(chan os.Signal, 1) // signal.Notify drops signals on a full channel
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)
	sv.serve(requests, signals)
	sock.Close()
	return 0
}

func newSupervisor(dir string, components []string, etcdMembers int) (*supervisor, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	p := clusterstate.Dir(dir)
	// Every run starts from a clean cluster: old data, credentials and logs go.
	for _, old := range []string{p.EtcdData(), p.PKI(""), p.Logs(), p.State(), p.Kubeconfig()} {
		if err := os.RemoveAll(old); err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll(p.Logs(), 0o700); err != nil {
		return nil, err
	}
	s := &State{Dir: dir, PID: os.Getpid(), Components: components, Version: version.Get().GitVersion}
	for _, port := range []*int{&s.EtcdPort, &s.EtcdPeerPort, &s.APIServerPort} {
		if *port, err = freePort(); err != nil {
			return nil, err
		}
	}
	if etcdMembers > 1 {
		// etcd-1 keeps the ports above; the others get their own.
		s.EtcdMembers = []clusterstate.EtcdMember{{Name: "etcd-1", ClientPort: s.EtcdPort, PeerPort: s.EtcdPeerPort}}
		for i := 2; i <= etcdMembers; i++ {
			m := clusterstate.EtcdMember{Name: fmt.Sprintf("etcd-%d", i)}
			for _, port := range []*int{&m.ClientPort, &m.PeerPort} {
				if *port, err = freePort(); err != nil {
					return nil, err
				}
			}
			s.EtcdMembers = append(s.EtcdMembers, m)
		}
	}
	// A unix socket path is limited to 107 bytes; deep temp dirs can exceed it.
	s.Socket = filepath.Join(dir, "labcluster.sock")
	if len(s.Socket) > 100 {
		s.Socket = filepath.Join(os.TempDir(), fmt.Sprintf("labcluster-%d.sock", os.Getpid()))
	}
	os.Remove(s.Socket)
	if err := makePKI(p, s.APIServerURL()); err != nil {
		return nil, fmt.Errorf("credentials: %w", err)
	}
	if err := clusterstate.Write(s); err != nil {
		return nil, err
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", p.Kubeconfig())
	if err != nil {
		return nil, err
	}
	cfg.Timeout = 5 * time.Second
	// No client-side rate limit: the readiness polls come every 20ms, and
	// client-go's default (5 QPS) would space them 200ms apart, so `up` would
	// notice readiness up to that much late.
	cfg.QPS = -1
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &supervisor{state: s, self: self, children: map[string]*child{}, client: client}, nil
}

func (sv *supervisor) has(name string) bool {
	for _, c := range sv.state.Components {
		if c == name {
			return true
		}
	}
	return false
}

// startAll starts etcd (every member at once: a member of several waits for
// the others to elect a leader), then the apiserver and the node, waits until the
// apiserver is ready, then starts the controllers and waits for the node to
// register. The controllers are not waited for: they connect on their own.
func (sv *supervisor) startAll() error {
	members := sv.state.Members()
	for _, m := range members {
		if err := sv.start(m.Name); err != nil {
			return err
		}
	}
	for _, m := range members {
		if err := sv.waitTCP(m.Name, m.ClientPort, 30*time.Second); err != nil {
			return err
		}
	}
	if len(members) == 1 {
		sv.step("etcd listening%s", detail(sv.cpuNote(compEtcd)))
	} else {
		sv.step("etcd listening: %d members%s", len(members), detail(sv.cpuNote(members[0].Name)))
	}
	if err := sv.start(compAPIServer); err != nil {
		return err
	}
	// The node is light and retries until the apiserver answers: starting it
	// now lets it register the moment the apiserver is ready.
	if sv.has(compNode) {
		if err := sv.start(compNode); err != nil {
			return err
		}
	}
	if err := sv.waitAPIServer(60 * time.Second); err != nil {
		return err
	}
	for _, name := range []string{compControllerManager, compScheduler} {
		if sv.has(name) {
			if err := sv.start(name); err != nil {
				return err
			}
		}
	}
	if sv.has(compNode) {
		// So that `kubectl get nodes` right after up shows the node.
		if err := sv.waitNode(15 * time.Second); err != nil {
			return err
		}
		sv.step("node %s registered", nodeName)
	}
	return nil
}

// waitNode waits until the simulated node has registered its Node object.
func (sv *supervisor) waitNode(timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for {
		if err := sv.exitedEarly(compNode); err != nil {
			return err
		}
		_, err := sv.client.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("node %s did not register within %s: %v%s", nodeName, timeout, err, sv.logTail(compNode))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// start starts a component, or an etcd member by its name.
func (sv *supervisor) start(name string) error {
	args := []string{"component", name}
	if m, ok := sv.member(name); ok {
		args = append([]string{"component", compEtcd}, etcdArgs(sv.state, m)...)
	} else {
		args = append(args, componentArgs(name, sv.state)...)
	}
	log, err := os.OpenFile(clusterstate.Dir(sv.state.Dir).Log(name), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	cmd := exec.Command(sv.self, args...)
	cmd.Stdout, cmd.Stderr = log, log
	// Kill the child if we die (Linux); exitWhenOrphaned in the child is
	// the guarantee everywhere.
	dieWithParent(cmd)
	if err := cmd.Start(); err != nil {
		log.Close()
		return fmt.Errorf("start %s: %w", name, err)
	}
	c := &child{name: name, cmd: cmd, exited: make(chan struct{})}
	go func() {
		cmd.Wait()
		log.Close()
		close(c.exited)
	}()
	sv.children[name] = c
	return nil
}

// stop asks a component to stop (SIGTERM) and kills it after grace.
func (sv *supervisor) stop(name string, grace time.Duration) {
	c, ok := sv.children[name]
	if !ok {
		return
	}
	delete(sv.children, name)
	start := time.Now()
	c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.exited:
		fmt.Printf("stopped %s in %.2fs\n", name, time.Since(start).Seconds())
	case <-time.After(grace):
		c.cmd.Process.Kill()
		<-c.exited
		fmt.Printf("killed %s after %s: it did not stop on SIGTERM\n", name, grace)
	}
}

// member returns the etcd member of that name, if name is one.
func (sv *supervisor) member(name string) (clusterstate.EtcdMember, bool) {
	for _, m := range sv.state.Members() {
		if m.Name == name {
			return m, true
		}
	}
	return clusterstate.EtcdMember{}, false
}

// stopAll stops clients of the apiserver, then the apiserver, then etcd.
func (sv *supervisor) stopAll() {
	for i := len(allComponents) - 1; i >= 1; i-- {
		// The apiserver drains requests on SIGTERM; long watches are ended
		// for it, so a second or two is plenty on a lab cluster.
		sv.stop(allComponents[i], 2*time.Second)
	}
	members := sv.state.Members()
	for i := len(members) - 1; i >= 0; i-- {
		sv.stop(members[i].Name, 2*time.Second)
	}
}

func (sv *supervisor) waitTCP(name string, port int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if err := sv.exitedEarly(name); err != nil {
			return err
		}
		conn, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
		if err == nil {
			conn.Close()
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("%s did not listen on 127.0.0.1:%d within %s%s", name, port, timeout, sv.logTail(name))
}

// waitAPIServer polls /readyz until it passes, then waits for namespace
// "default" (created by the apiserver's own system namespaces controller, a
// moment after readyz). It reports when the apiserver first answers (it
// serves: its API groups and OpenAPI are built) and when it is ready (its
// post-start hooks are done), naming the checks that passed last.
func (sv *supervisor) waitAPIServer(timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var last error
	var pending []string // the checks /readyz last reported failing
	serving := false
	for ctx.Err() == nil {
		if err := sv.exitedEarly(compAPIServer); err != nil {
			return err
		}
		body, err := sv.client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		if err == nil {
			break
		}
		last = fmt.Errorf("/readyz: %v %s", err, strings.TrimSpace(string(body)))
		var status *apierrors.StatusError
		if errors.As(err, &status) {
			if !serving {
				serving = true
				sv.step("apiserver serving%s", detail(sv.cpuNote(compAPIServer)))
			}
			pending = failingChecks(body)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if ctx.Err() != nil {
		return fmt.Errorf("kube-apiserver not ready within %s: %v%s", timeout, last, sv.logTail(compAPIServer))
	}
	lastChecks := ""
	if len(pending) > 0 {
		lastChecks = "last checks to pass: " + strings.Join(pending, ", ")
	}
	sv.step("apiserver ready%s", detail(lastChecks, sv.cpuNote(compAPIServer)))
	for {
		_, err := sv.client.CoreV1().Namespaces().Get(ctx, metav1.NamespaceDefault, metav1.GetOptions{})
		if err == nil {
			sv.step("namespace default exists")
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("namespace default not created within %s: %v%s", timeout, err, sv.logTail(compAPIServer))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// failingChecks returns the names of the checks a failing /readyz lists as
// failed ("[-]poststarthook/rbac/bootstrap-roles failed: reason withheld").
func failingChecks(body []byte) []string {
	var out []string
	for _, line := range strings.Split(string(body), "\n") {
		if name, ok := strings.CutPrefix(strings.TrimSpace(line), "[-]"); ok {
			name, _, _ = strings.Cut(name, " ")
			out = append(out, name)
		}
	}
	return out
}

func (sv *supervisor) exitedEarly(name string) error {
	c, ok := sv.children[name]
	if !ok {
		return fmt.Errorf("%s is not running", name)
	}
	select {
	case <-c.exited:
		return fmt.Errorf("%s exited: %v%s", name, c.cmd.ProcessState, sv.logTail(name))
	default:
		return nil
	}
}

// logTail returns the last lines of a component's log, for error messages.
func (sv *supervisor) logTail(name string) string {
	b, err := os.ReadFile(clusterstate.Dir(sv.state.Dir).Log(name))
	if err != nil || len(b) == 0 {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > 15 {
		lines = lines[len(lines)-15:]
	}
	return fmt.Sprintf("\nlast lines of %s:\n  %s", clusterstate.Dir(sv.state.Dir).Log(name), strings.Join(lines, "\n  "))
}

// serve handles requests until stop, a signal, or the socket closing.
func (sv *supervisor) serve(requests <-chan request, signals <-chan os.Signal) {
	for {
		select {
		case <-signals:
			sv.stopAll()
			return
		case req, ok := <-requests:
			if !ok {
				sv.stopAll()
				return
			}
			switch req.line {
			case "stop":
				sv.stopAll()
				req.reply <- "ok stopped"
				return
			case "restart apiserver":
				req.reply <- sv.restartAPIServer()
			case "status":
				req.reply <- sv.status()
			default:
				if name, ok := strings.CutPrefix(req.line, "etcd kill "); ok {
					req.reply <- sv.killMember(name)
				} else if name, ok := strings.CutPrefix(req.line, "etcd start"); ok {
					req.reply <- sv.startMembers(strings.TrimSpace(name))
				} else {
					req.reply <- fmt.Sprintf("error unknown request %q (want stop, restart apiserver, status, etcd kill NAME, etcd start NAME)", req.line)
				}
			}
		}
	}
}

// restartAPIServer stops the apiserver and starts it again with the same
// flags, port and etcd: what a rolling upgrade or a crash does to clients.
func (sv *supervisor) restartAPIServer() string {
	start := time.Now()
	sv.stop(compAPIServer, 2*time.Second)
	if err := sv.start(compAPIServer); err != nil {
		return "error " + err.Error()
	}
	if err := sv.waitAPIServer(60 * time.Second); err != nil {
		return "error " + err.Error()
	}
	return fmt.Sprintf("ok apiserver restarted on %s in %.1fs", sv.state.APIServerURL(), time.Since(start).Seconds())
}

// killMember kills an etcd member at once (SIGKILL: a crash, not a clean
// stop), "leader" being whichever member leads now. The others go on if they
// still have a quorum (two of three).
func (sv *supervisor) killMember(name string) string {
	if len(sv.state.Members()) == 1 {
		return "error this cluster has one etcd member; killing it would stop the cluster (start one with --etcd-members 3)"
	}
	switch name {
	case "leader":
		m, err := etcdLeader(context.Background(), sv.state)
		if err != nil {
			return "error " + err.Error()
		}
		name = m.Name
	case "follower":
		// The first running member that does not lead: killing it costs
		// no election, so the cluster answers throughout.
		leader, err := etcdLeader(context.Background(), sv.state)
		if err != nil {
			return "error " + err.Error()
		}
		name = ""
		for _, m := range sv.state.Members() {
			if _, running := sv.children[m.Name]; running && m.Name != leader.Name {
				name = m.Name
				break
			}
		}
		if name == "" {
			return "error no running member but the leader"
		}
	}
	if _, ok := sv.member(name); !ok {
		return fmt.Sprintf("error no etcd member %q (members: %s)", name, sv.memberNames())
	}
	c, ok := sv.children[name]
	if !ok {
		return fmt.Sprintf("error etcd member %s is not running", name)
	}
	delete(sv.children, name)
	c.cmd.Process.Kill()
	<-c.exited
	reply := fmt.Sprintf("ok killed etcd member %s (pid %d)", name, c.cmd.Process.Pid)
	members, running := len(sv.state.Members()), 0
	for _, m := range sv.state.Members() {
		if _, ok := sv.children[m.Name]; ok {
			running++
		}
	}
	if running < members/2+1 {
		reply += fmt.Sprintf("; %d of %d members run, no quorum: etcd, and so the apiserver, cannot serve until you start one again (labcluster etcd start)", running, members)
	}
	return reply
}

// startMembers starts a killed member again, or with no name every killed
// member.
func (sv *supervisor) startMembers(name string) string {
	if name != "" {
		return sv.startMember(name)
	}
	var out []string
	for _, m := range sv.state.Members() {
		if _, running := sv.children[m.Name]; running {
			continue
		}
		reply := sv.startMember(m.Name)
		if strings.HasPrefix(reply, "error ") {
			return reply
		}
		out = append(out, strings.TrimPrefix(reply, "ok "))
	}
	if len(out) == 0 {
		return "ok every etcd member is running"
	}
	return "ok " + strings.Join(out, "\n")
}

// startMember starts a killed member again on its data directory: it
// rejoins and catches up from the leader.
func (sv *supervisor) startMember(name string) string {
	m, ok := sv.member(name)
	if !ok {
		return fmt.Sprintf("error no etcd member %q (members: %s)", name, sv.memberNames())
	}
	if c, ok := sv.children[name]; ok && sv.exitedEarly(name) == nil {
		return fmt.Sprintf("error etcd member %s is running (pid %d)", name, c.cmd.Process.Pid)
	}
	if err := sv.start(name); err != nil {
		return "error " + err.Error()
	}
	if err := sv.waitTCP(name, m.ClientPort, 30*time.Second); err != nil {
		return "error " + err.Error()
	}
	return fmt.Sprintf("ok started etcd member %s (pid %d) on %s", name, sv.children[name].cmd.Process.Pid, m.ClientURL())
}

func (sv *supervisor) memberNames() string {
	var names []string
	for _, m := range sv.state.Members() {
		names = append(names, m.Name)
	}
	return strings.Join(names, ", ")
}

func (sv *supervisor) status() string {
	var b strings.Builder
	fmt.Fprintf(&b, "ok supervisor pid %d, apiserver %s, etcd %s", sv.state.PID, sv.state.APIServerURL(), strings.Join(sv.state.EtcdURLs(), ","))
	names := slices.Clone(allComponents)
	if ms := sv.state.Members(); len(ms) > 1 {
		names = names[1:]
		for i := len(ms) - 1; i >= 0; i-- {
			names = slices.Insert(names, 0, ms[i].Name)
		}
	}
	for _, name := range names {
		c, ok := sv.children[name]
		switch {
		case !ok && strings.HasPrefix(name, compEtcd+"-"):
			fmt.Fprintf(&b, "\n%-20s killed", name)
		case !ok:
			continue
		case sv.exitedEarly(name) != nil:
			fmt.Fprintf(&b, "\n%-20s exited (%v)", name, c.cmd.ProcessState)
		default:
			fmt.Fprintf(&b, "\n%-20s running, pid %d", name, c.cmd.Process.Pid)
		}
	}
	return b.String()
}

// acceptRequests reads one line per connection and writes back the reply.
func acceptRequests(sock net.Listener, requests chan<- request) {
	defer close(requests)
	for {
		conn, err := sock.Accept()
		if err != nil {
			return
		}
		conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		line, err := bufio.NewReader(conn).ReadString('\n')
		if err != nil {
			conn.Close()
			continue
		}
		reply := make(chan string, 1) // serve never blocks handing back a reply
		requests <- request{line: strings.TrimSpace(line), reply: reply}
		fmt.Fprintln(conn, <-reply)
		conn.Close()
	}
}

// ask sends one request to a running supervisor and returns its reply.
func ask(s *State, line string, timeout time.Duration) (string, error) {
	conn, err := net.DialTimeout("unix", s.Socket, 2*time.Second)
	if err != nil {
		return "", fmt.Errorf("labcluster supervisor (pid %d) not answering on %s: %w", s.PID, s.Socket, err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(timeout))
	if _, err := fmt.Fprintln(conn, line); err != nil {
		return "", err
	}
	b, err := io.ReadAll(conn)
	reply := strings.TrimSpace(string(b))
	if err != nil && reply == "" {
		return "", err
	}
	if msg, ok := strings.CutPrefix(reply, "error "); ok {
		return "", errors.New(msg)
	}
	return strings.TrimPrefix(reply, "ok "), nil
}

// lockDir takes an exclusive, non-blocking flock on DIR/lock.
func lockDir(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("another labcluster supervisor is running in %s (stop it with labcluster down --dir %s)", dir, dir)
	}
	return f, nil
}
