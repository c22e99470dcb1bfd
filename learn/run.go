package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/listwatch-labs/listwatch-labs/clusterstate"
)

// cmdRun runs a lab's demo (the "demo" steps of its exercises.json) against
// the cluster of $KUBECONFIG or .cluster/kubeconfig, starting one with
// scripts/cluster-up.sh when none answers. Each step is narrated: what it
// shows, the command, its output.
func cmdRun(ctx context.Context, u *ui, root string, lab *Lab) int {
	if len(lab.Demo) == 0 {
		fmt.Fprintf(u.err, "labs: lab %s has no demo yet; its README's \"Run it\" section has the commands\n", lab.Num)
		return 2
	}
	// The course's one rule for which cluster (clusterstate.Discover, as
	// labkit's tests and `labcluster status` follow it).
	found, err := clusterstate.Discover(root, func(kc string) error {
		if !clusterAnswers(ctx, root, kc) {
			return errors.New("it does not answer")
		}
		return nil
	})
	if err != nil {
		fmt.Fprintln(u.err, "labs:", err)
		return 1
	}
	kubeconfig := filepath.Join(root, ".cluster", "kubeconfig")
	if found != nil {
		kubeconfig = found.Kubeconfig
	} else {
		log := filepath.Join(stateDir(root), "cluster-up.log")
		os.MkdirAll(stateDir(root), 0o755)
		u.start("starting the embedded cluster (scripts/cluster-up.sh; the first build of labcluster takes minutes)")
		err := runLogged(ctx, root, log, "scripts/cluster-up.sh")
		u.done()
		if ctx.Err() != nil {
			return interruptedCmd(u) // its group was stopped with it; no demo step ran yet
		}
		if err != nil {
			fmt.Fprintf(u.err, "labs: scripts/cluster-up.sh failed (%v); its output is in %s\n", err, log)
			return 1
		}
		u.printf("%s cluster up (scripts/cluster-down.sh stops it)\n", u.green("✓"))
	}
	if err := os.MkdirAll(stateDir(root), 0o755); err != nil {
		fmt.Fprintln(u.err, "labs:", err)
		return 1
	}
	ns := "labs-demo-" + lab.Num
	env := append(os.Environ(), "KUBECONFIG="+kubeconfig, "NS="+ns, "ROOT="+root, "LAB="+lab.Dir)
	var background []*exec.Cmd
	finished := false
	defer func() {
		// Stopped early (Ctrl-C, SIGTERM, the output pipe closed as by
		// `| head`, or a step failed): the demo's last step, which deletes
		// its namespace, did not run.
		if !finished {
			deleteDemoNamespace(root, kubeconfig, ns)
		}
	}()
	defer func() {
		for _, c := range background {
			syscall.Kill(-c.Process.Pid, syscall.SIGINT)
			done := make(chan struct{})
			go func() { c.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
				<-done
			}
		}
	}()
	u.printf("%s %s, against %s, in namespace %s\n", u.bold("lab "+lab.Num+" demo:"), lab.Name, kubeconfig, ns)
	for i, step := range lab.Demo {
		u.printf("\n%s %s\n", u.bold(fmt.Sprintf("step %d.", i+1)), step.Say)
		u.printf("  %s %s\n", u.dim("$"), step.Run)
		cmd := exec.CommandContext(ctx, "bash", "-c", step.Run)
		cmd.Dir = root
		cmd.Env = env
		// Its own process group, so that stopping it stops what it started
		// (go run's child, say) as well.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
		if step.Background {
			logFile := filepath.Join(stateDir(root), fmt.Sprintf("demo-%s-%d.log", lab.Num, i+1))
			f, err := os.Create(logFile)
			if err != nil {
				fmt.Fprintln(u.err, "labs:", err)
				return 1
			}
			cmd.Stdout, cmd.Stderr = f, f
			cmd.Cancel = nil // stopped by the deferred function above, gently first
			if err := cmd.Start(); err != nil {
				f.Close()
				fmt.Fprintln(u.err, "labs:", err)
				return 1
			}
			f.Close()
			background = append(background, cmd)
			env = append(env, fmt.Sprintf("BG%d=%s", i+1, logFile))
			u.printf("  %s\n", u.dim("(running in the background; its output: "+logFile+")"))
			if step.Wait != "" {
				u.start("waiting for " + step.Wait)
				ok := waitForOutput(ctx, logFile, step.Wait, 2*time.Minute)
				u.done()
				if !ok && ctx.Err() != nil {
					return interrupted(u, ns)
				}
				if !ok {
					data, _ := os.ReadFile(logFile)
					fmt.Fprintf(u.err, "labs: step %d never printed %q; its output:\n%s\n", i+1, step.Wait, data)
					return 1
				}
			}
			continue
		}
		out, err := cmd.CombinedOutput()
		for _, l := range strings.Split(strings.TrimRight(string(out), "\n"), "\n") {
			if l != "" {
				u.printf("    %s\n", l)
			}
		}
		if err != nil && ctx.Err() != nil {
			return interrupted(u, ns)
		}
		if err != nil {
			fmt.Fprintf(u.err, "labs: step %d failed: %v\n", i+1, err)
			return 1
		}
	}
	finished = true
	u.printf("\n%s the demo is over; the lab's README explains each step.\n", u.green("✓"))
	return 0
}

// interrupted says the demo was stopped; cmdRun's deferred functions then
// stop its background commands and delete its namespace.
func interrupted(u *ui, ns string) int {
	fmt.Fprintf(u.err, "labs: interrupted; stopping the demo's background commands and deleting its namespace %s\n", ns)
	return 130
}

// deleteDemoNamespace deletes ns without waiting, quietly: it may not exist.
func deleteDemoNamespace(root, kubeconfig, ns string) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	labcluster := filepath.Join(root, ".cluster", "bin", "labcluster")
	exec.CommandContext(ctx, labcluster, "kubectl", "--kubeconfig", kubeconfig, "delete", "namespace", ns, "--wait=false", "--ignore-not-found").Run()
}

func clusterAnswers(ctx context.Context, root, kubeconfig string) bool {
	if _, err := os.Stat(kubeconfig); err != nil {
		return false
	}
	labcluster := filepath.Join(root, ".cluster", "bin", "labcluster")
	if _, err := os.Stat(labcluster); err != nil {
		return false
	}
	cmd := exec.CommandContext(ctx, labcluster, "kubectl", "--kubeconfig", kubeconfig, "--request-timeout=5s", "get", "--raw", "/readyz")
	return cmd.Run() == nil
}

// runLogged runs a script (cluster-up.sh: it builds labcluster and starts
// it) with its output in log; when ctx ends, its whole group is stopped.
func runLogged(ctx context.Context, dir, log string, name string, args ...string) error {
	f, err := os.Create(log)
	if err != nil {
		return err
	}
	defer f.Close()
	cmd := groupCommand(ctx, name, args...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = f, f
	return cmd.Run()
}

// waitForOutput polls file until it matches pattern, with a deadline.
func waitForOutput(ctx context.Context, file, pattern string, timeout time.Duration) bool {
	re, err := regexp.Compile(pattern)
	if err != nil {
		return false
	}
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if data, err := os.ReadFile(file); err == nil && re.Match(data) {
			return true
		}
		time.Sleep(200 * time.Millisecond) // polling a file: there is nothing to wait on
	}
	return false
}

// cmdView builds learn/view (its own main package, like trace) and runs it
// in the foreground until it exits; it passes the view's status on. The
// view stops its whole stack (one process) on SIGINT or SIGTERM, and says
// "view: stopped".
func cmdView(ctx context.Context, u *ui, root string, args []string) int {
	bin := filepath.Join(root, ".cluster", "bin", "view")
	u.start("building the live view (the first run compiles the labs)")
	build := groupCommand(ctx, "go", "build", "-o", bin, "./learn/view")
	build.Dir = root
	out, err := build.CombinedOutput()
	u.done()
	if ctx.Err() != nil {
		return interruptedCmd(u)
	}
	if err != nil {
		fmt.Fprintf(u.err, "%slabs: building the view failed: %v\n", out, err)
		return 1
	}
	// The real cluster beside the course's stack: the one that is up, by
	// the course's rule (clusterstate.Discover), unless the learner named
	// one with -kubeconfig (or none, with -kubeconfig=).
	if !hasFlag(args, "kubeconfig") {
		found, err := clusterstate.Discover(root, func(kc string) error {
			if !clusterAnswers(ctx, root, kc) {
				return errors.New("it does not answer")
			}
			return nil
		})
		switch {
		case err != nil:
			u.printf("labs: %v; the view shows the course's stack alone\n", err)
		case found == nil:
			u.printf("labs: no cluster is up, so the view shows the course's stack alone (scripts/cluster-up.sh, then labs view again, adds the real kube-apiserver beside it)\n")
		default:
			args = append([]string{"-kubeconfig", found.Kubeconfig}, args...)
		}
	}
	// The view stays in our process group, in a terminal the foreground
	// one, which Ctrl-C reaches: the view gets it directly. A signal sent
	// to labs alone (kill PID) does not reach it: when one ends ctx, the
	// view gets a SIGINT from us, once. After a Ctrl-C it has its own
	// already, and it swallows ours until it exits (view's main), so it
	// still stops cleanly.
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.Dir = root
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, u.out, u.err
	err = cmd.Run()
	switch {
	case cmd.ProcessState == nil && ctx.Err() != nil: // stopped before the view started
		return interruptedCmd(u)
	case cmd.ProcessState == nil:
		fmt.Fprintf(u.err, "labs: view: %v\n", err)
		return 1
	case cmd.ProcessState.ExitCode() < 0: // killed by a signal it does not handle
		fmt.Fprintf(u.err, "labs: view: %v\n", cmd.ProcessState)
		return 1
	}
	// Once signalled the view stops cleanly with status 0, as after Ctrl-C:
	// stopping it is how a learner ends `labs view`.
	return cmd.ProcessState.ExitCode()
}

// hasFlag reports whether args set -name or --name (with or without =value).
func hasFlag(args []string, name string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		a = strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-")
		if a == name || strings.HasPrefix(a, name+"=") {
			return true
		}
	}
	return false
}

// cmdTrace runs learn/trace (its own main package: it imports every lab, so
// the rest of the labs command stays quick to build).
func cmdTrace(ctx context.Context, u *ui, root string, args []string) int {
	out := filepath.Join(root, ".cluster", "trace")
	u.start("tracing one ConfigMap write through every layer (the first run compiles the labs)")
	cmd := groupCommand(ctx, "go", append([]string{"run", "./learn/trace", "-out", out}, args...)...)
	cmd.Dir = root
	var stderr strings.Builder
	cmd.Stderr = &stderr
	output, err := cmd.Output()
	u.done()
	u.printf("%s", output)
	if ctx.Err() != nil {
		return interruptedCmd(u)
	}
	if err != nil {
		// The embedded etcd logs its shutdown on stderr; show it only when
		// something failed.
		fmt.Fprintf(u.err, "%slabs: trace failed: %v\n", stderr.String(), err)
		return 1
	}
	return 0
}
