// Command labcluster runs a real Kubernetes v1.37.0 control plane on
// 127.0.0.1, built from Go modules: embedded etcd, kube-apiserver,
// kube-controller-manager, kube-scheduler and a simulated node, each a child
// process of one supervisor. It also carries kubectl. It serves every
// built-in API group but autoscaling and batch, which nothing here could act
// on (components.go says why).
//
//	labcluster up [--dir DIR] [--components LIST] [--etcd-members 1|3|5]
//	                                                 start a cluster, return when ready
//	labcluster down [--dir DIR]                      stop it, leave no process
//	labcluster status [--dir DIR] [-o text|env|json] which cluster is up, what runs, on which ports
//	labcluster restart apiserver [--dir DIR]         restart the apiserver (same port, same etcd)
//	labcluster etcd compact [--dir DIR]              compact etcd to its current revision
//	labcluster etcd kill MEMBER [--dir DIR]          kill an etcd member (of several):
//	                                                 etcd-N, leader, or follower
//	labcluster etcd start [MEMBER] [--dir DIR]       start a killed member (all) again
//	labcluster kubectl ARGS...                       kubectl (k8s.io/kubectl v0.37.0)
//
// DIR defaults to $LABCLUSTER_DIR, else .cluster at the root of the go.work
// workspace around the current directory.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/listwatch-labs/listwatch-labs/clusterstate"
	"k8s.io/component-base/cli"
	"k8s.io/component-base/logs"
	"k8s.io/component-base/version"
	kubectl "k8s.io/kubectl/pkg/cmd"
	kubectlutil "k8s.io/kubectl/pkg/cmd/util"
)

func main() {
	os.Exit(run(os.Args[1:]))
}

const usage = `usage:
  labcluster up [--dir DIR] [--components etcd,apiserver,...] [--etcd-members 1|3|5]
  labcluster down [--dir DIR]
  labcluster status [--dir DIR] [-o text|env|json]
  labcluster restart apiserver [--dir DIR]
  labcluster etcd compact [--dir DIR]
  labcluster etcd kill etcd-N|leader|follower [--dir DIR]
  labcluster etcd start [etcd-N] [--dir DIR]
  labcluster kubectl ARGS...`

func run(args []string) int {
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, usage)
		return 2
	}
	cmd, args := args[0], args[1:]
	var member string // etcd kill/start MEMBER
	switch cmd {
	case "kubectl":
		return runKubectl(args)
	case "component":
		if len(args) == 0 {
			fmt.Fprintln(os.Stderr, "labcluster component NAME ARGS...")
			return 2
		}
		return runComponent(args[0], args[1:])
	case "restart", "etcd":
		// Two-word commands: "restart apiserver", "etcd compact"; "etcd
		// kill MEMBER" and "etcd start MEMBER" take the member as well.
		valid := map[string][]string{"restart": {"apiserver"}, "etcd": {"compact", "kill", "start"}}[cmd]
		switch {
		case len(args) == 0 || strings.HasPrefix(args[0], "-"):
			fmt.Fprintf(os.Stderr, "labcluster %s: name a subcommand: %s\n%s\n", cmd, strings.Join(valid, ", "), usage)
			return 2
		case !slices.Contains(valid, args[0]):
			fmt.Fprintf(os.Stderr, "labcluster %s: unknown %q; labcluster %s takes %s\n%s\n", cmd, args[0], cmd, strings.Join(quoteAll(valid), ", "), usage)
			return 2
		}
		cmd, args = cmd+" "+args[0], args[1:]
		if cmd == "etcd kill" || cmd == "etcd start" {
			if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
				member, args = args[0], args[1:]
			} else if cmd == "etcd kill" {
				fmt.Fprintln(os.Stderr, "labcluster etcd kill: name the member: etcd-1, etcd-2, ..., leader or follower")
				return 2
			}
		}
	}

	fs := flag.NewFlagSet("labcluster "+cmd, flag.ContinueOnError)
	dir := fs.String("dir", "", "cluster state directory (default $LABCLUSTER_DIR, else <workspace>/.cluster)")
	components := fs.String("components", strings.Join(allComponents, ","), "components to run (up, run)")
	detached := fs.Bool("detached", false, "run: do not exit when the parent exits (used by up)")
	readyFD := fs.Int("ready-fd", 0, "run: file descriptor on which to report readiness")
	steps := fs.Bool("steps", false, "run: also report start-up milestones on the ready fd (used by up)")
	output := fs.String("o", "text", "status: text, env (shell assignments) or json")
	etcdMembers := fs.Int("etcd-members", 1, "etcd members (up, run): 1, or 3 or 5 for a cluster that survives losing one or two")
	// A bad flag is one line and a pointer, not the whole flag list (which
	// includes `run`'s internal flags).
	fs.Usage = func() { fmt.Fprintf(fs.Output(), "run labcluster with no arguments for its usage\n") }
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if cmd == "status" {
		// Before stateDir: asking about a cluster must not create its directory.
		return statusCmd(*dir, *output, os.Stdout, os.Stderr)
	}
	d, err := stateDir(*dir)
	if err != nil {
		fmt.Fprintf(os.Stderr, "labcluster: %v\n", err)
		return 1
	}
	comps, err := parseComponents(*components)
	if err != nil {
		fmt.Fprintf(os.Stderr, "labcluster: %v\n", err)
		return 2
	}
	if *etcdMembers != 1 && *etcdMembers != 3 && *etcdMembers != 5 {
		fmt.Fprintf(os.Stderr, "labcluster: --etcd-members %d: want 1, 3 or 5 (an even number survives no more failures than one fewer)\n", *etcdMembers)
		return 2
	}

	switch cmd {
	case "run":
		var ready *os.File
		if *readyFD > 0 {
			ready = os.NewFile(uintptr(*readyFD), "ready")
		}
		return runSupervisor(d, comps, *etcdMembers, *detached, ready, *steps)
	case "up":
		err = up(d, comps, *etcdMembers)
		if errors.Is(err, errInterrupted) {
			if err != errInterrupted {
				fmt.Fprintf(os.Stderr, "labcluster up: %v\n", err)
			}
			return 130 // as a shell reports a command ended by Ctrl-C
		}
	case "down":
		err = down(d)
	case "restart apiserver":
		err = restartAPIServer(d)
	case "etcd compact":
		err = compact(d)
	case "etcd kill", "etcd start":
		err = etcdMember(d, cmd, member)
	default:
		fmt.Fprintf(os.Stderr, "labcluster: unknown command %q\n%s\n", cmd, usage)
		return 2
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "labcluster %s: %v\n", cmd, err)
		return 1
	}
	return 0
}

// quoteAll is each of words in double quotes.
func quoteAll(words []string) []string {
	out := make([]string, len(words))
	for i, w := range words {
		out[i] = strconv.Quote(w)
	}
	return out
}

func parseComponents(list string) ([]string, error) {
	var out []string
	for _, c := range strings.Split(list, ",") {
		known := false
		for _, k := range allComponents {
			known = known || c == k
		}
		if !known {
			return nil, fmt.Errorf("unknown component %q (known: %s)", c, strings.Join(allComponents, ","))
		}
		out = append(out, c)
	}
	if len(out) < 2 || out[0] != compEtcd || out[1] != compAPIServer {
		return nil, fmt.Errorf("components must start with etcd,apiserver")
	}
	return out, nil
}

// stateDir resolves --dir: the flag, else clusterstate.DefaultDir
// ($LABCLUSTER_DIR, or <workspace>/.cluster), and makes sure it exists.
func stateDir(flagValue string) (string, error) {
	d := flagValue
	if d == "" {
		var err error
		if d, err = clusterstate.DefaultDir(); err != nil {
			return "", err
		}
	}
	abs, err := filepath.Abs(d)
	if err != nil {
		return "", err
	}
	return abs, os.MkdirAll(abs, 0o700)
}

// up starts `labcluster run` in its own session (so it outlives this command
// and the shell's Ctrl-C), then waits for its "ready" line.
func up(dir string, comps []string, etcdMembers int) error {
	if s, err := clusterstate.Read(dir); err == nil && clusterstate.Alive(s.PID) {
		if _, err := ask(s, "status", 5*time.Second); err == nil {
			// The other release's labcluster (scripts/cluster-up.sh
			// --release previous, or without it) started this one.
			if own := version.Get().GitVersion; s.Version != "" && s.Version != own {
				return fmt.Errorf("a cluster of Kubernetes %s is already up in %s, and this labcluster runs %s; stop it first (scripts/cluster-down.sh) to start %s", s.Version, dir, own, own)
			}
			if n := len(s.Members()); n != etcdMembers {
				return fmt.Errorf("a cluster with %d etcd member(s) is already up in %s; stop it first (scripts/cluster-down.sh) to start one with %d", n, dir, etcdMembers)
			}
			fmt.Printf("labcluster: already up in %s: %s\n", dir, s.APIServerURL())
			return nil
		}
	}
	start := time.Now()
	self, err := os.Executable()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	log, err := os.OpenFile(filepath.Join(dir, "labcluster.log"), os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	defer log.Close()
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	defer r.Close()
	cmd := exec.Command(self, "run", "--dir", dir, "--components", strings.Join(comps, ","), "--etcd-members", strconv.Itoa(etcdMembers), "--detached", "--ready-fd", "3", "--steps")
	cmd.Stdout, cmd.Stderr = log, log
	cmd.ExtraFiles = []*os.File{w} // fd 3 in the child
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	// Catch Ctrl-C before saying "starting": from that line on a learner
	// (and TestInterruptedUpStopsTheCluster) may press it, and a signal that
	// arrived before Notify would kill this command and leave the
	// supervisor starting alone. Signals wait in the channel until the
	// goroutine below reads them.
	signals := make(chan os.Signal, 2)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(signals)
	if err := cmd.Start(); err != nil {
		w.Close()
		return err
	}
	// "starting" comes once the supervisor runs in its own session: a
	// Ctrl-C sent to this terminal's process group between the fork and
	// the child's setsid would reach the child too, with its handlers
	// reset to the default, and kill it before it wrote a line
	// (TestInterruptedUpStopsTheCluster met that under load).
	if etcdMembers > 1 {
		fmt.Printf("labcluster: starting %s (etcd: %d members) in %s\n", strings.Join(comps, ", "), etcdMembers, dir)
	} else {
		fmt.Printf("labcluster: starting %s in %s\n", strings.Join(comps, ", "), dir)
	}
	w.Close() // the child holds its own copy; EOF on r now means it died
	supervisorPID := cmd.Process.Pid
	cmd.Process.Release()

	// Ctrl-C (or SIGTERM) while it starts: the supervisor, in its own
	// session, does not see it and would go on alone. Stop it once it has
	// started (it takes seconds), as a learner who pressed Ctrl-C expects;
	// a second Ctrl-C kills it at once (its components die with it).
	interrupted := make(chan struct{})
	go func() {
		if _, ok := <-signals; !ok {
			return
		}
		fmt.Fprintln(os.Stderr, "labcluster: interrupted: stopping the cluster as soon as it has started (Ctrl-C again to kill it now)")
		close(interrupted)
		if _, ok := <-signals; ok {
			syscall.Kill(supervisorPID, syscall.SIGKILL)
		}
	}()
	isInterrupted := func() bool {
		select {
		case <-interrupted:
			return true
		default:
			return false
		}
	}
	stopInterrupted := func() error {
		if err := down(dir); err != nil {
			return fmt.Errorf("%w; stopping the cluster: %v (scripts/cluster-down.sh stops it)", errInterrupted, err)
		}
		return errInterrupted
	}

	// "step WHAT" lines as the start progresses, each shown with the time it
	// arrived (since this command started: what a learner waits), then
	// "ready URL" or "error MESSAGE". EOF means the supervisor died.
	lines := bufio.NewScanner(r)
	for lines.Scan() {
		line := lines.Text()
		if what, ok := strings.CutPrefix(line, "step "); ok {
			fmt.Printf("labcluster: %5.2fs  %s\n", time.Since(start).Seconds(), what)
			continue
		}
		if url, ok := strings.CutPrefix(line, "ready "); ok {
			if isInterrupted() {
				return stopInterrupted()
			}
			fmt.Printf("labcluster: ready in %.1fs: %s (Kubernetes %s)\n", time.Since(start).Seconds(), url, version.Get().GitVersion)
			return nil
		}
		if msg, ok := strings.CutPrefix(line, "error "); ok {
			return errors.New(msg)
		}
	}
	if isInterrupted() {
		return stopInterrupted() // killed by a second Ctrl-C: down clears its state
	}
	return fmt.Errorf("the supervisor exited before the cluster was ready; see %s", log.Name())
}

// errInterrupted: up was interrupted, and stopped what it had started.
var errInterrupted = errors.New("interrupted; the cluster is stopped")

// down asks the supervisor to stop everything, then makes sure it did.
func down(dir string) error {
	s, err := clusterstate.Read(dir)
	if errors.Is(err, clusterstate.ErrNoCluster) {
		fmt.Printf("labcluster: nothing running in %s\n", dir)
		return nil
	}
	if err != nil {
		return err
	}
	if clusterstate.Alive(s.PID) {
		if _, err := ask(s, "stop", 15*time.Second); err != nil {
			fmt.Fprintf(os.Stderr, "labcluster: %v; killing pid %d\n", err, s.PID)
		}
		deadline := time.Now().Add(3 * time.Second)
		for clusterstate.Alive(s.PID) && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if clusterstate.Alive(s.PID) {
			// Its children die with it: they watch their parent (and, on Linux, Pdeathsig).
			syscall.Kill(s.PID, syscall.SIGKILL)
		}
	}
	p := clusterstate.Dir(dir)
	os.Remove(p.State())
	os.Remove(p.Kubeconfig())
	os.Remove(s.Socket)
	fmt.Printf("labcluster: stopped (logs kept in %s)\n", p.Logs())
	return nil
}

func restartAPIServer(dir string) error {
	s, err := running(dir)
	if err != nil {
		return err
	}
	reply, err := ask(s, "restart apiserver", 90*time.Second)
	if err != nil {
		return err
	}
	fmt.Println(reply)
	return nil
}

func compact(dir string) error {
	s, err := running(dir)
	if err != nil {
		return err
	}
	rev, err := etcdCompact(context.Background(), s)
	if err != nil {
		return err
	}
	fmt.Printf("compacted etcd at revision %d\n", rev)
	return nil
}

// etcdMember is `labcluster etcd kill|start MEMBER`.
func etcdMember(dir, cmd, member string) error {
	s, err := running(dir)
	if err != nil {
		return err
	}
	reply, err := ask(s, strings.TrimSpace(cmd+" "+member), 100*time.Second)
	if err != nil {
		return err
	}
	fmt.Println(reply)
	return nil
}

func running(dir string) (*State, error) {
	s, err := clusterstate.Read(dir)
	if err != nil {
		return nil, err
	}
	if !clusterstate.Alive(s.PID) {
		return nil, fmt.Errorf("the cluster in %s is not running (supervisor pid %d is gone); start it with scripts/cluster-up.sh", dir, s.PID)
	}
	return s, nil
}

// runKubectl is kubectl itself, as cmd/kubectl/kubectl.go of k8s.io/kubernetes.
func runKubectl(args []string) int {
	os.Args = append([]string{"kubectl"}, args...)
	logs.GlogSetter(kubectl.GetLogVerbosity(os.Args)) // nolint:errcheck
	if err := cli.RunNoErrOutput(kubectl.NewDefaultKubectlCommand()); err != nil {
		kubectlutil.CheckErr(err)
	}
	return 0
}
