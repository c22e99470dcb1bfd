package labkit

// Ctrl-C on scripts/test.sh must leave nothing running: not the README
// check's cluster, not the command it was running, not the cluster test.sh
// started, and none of its temporary files. Linux only: it reads /proc to
// find what is left (macOS has no /proc; the script's trap is the same there).

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
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// TestInterruptedTestShLeavesNothing runs scripts/test.sh, in a copy of the
// checkout, as far as the middle of its README check (lab 01's README, whose
// commands run against a cluster of the check's own, beside the cluster
// test.sh started), then sends SIGINT to test.sh's pid alone, as a
// supervisor would (a terminal's Ctrl-C also reaches only test.sh: each lane
// runs in a process group of its own). test.sh must exit 130 saying what it
// stopped, and then no process may run from the copy (its executable,
// working directory or command line in it) or from its $TMPDIR, and the
// $TMPDIR must be empty.
func TestInterruptedTestShLeavesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("runs scripts/test.sh's README check, with two clusters")
	}
	root, err := Root()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, ".cluster", "bin", "labcluster")); err != nil {
		t.Skipf("needs .cluster/bin/labcluster (scripts/build-labcluster.sh): %v", err)
	}
	// A stable path, so that the second run finds the copy's packages in
	// the build cache.
	copyDir := filepath.Join(root, ".cluster", "testsh-interrupt")
	if err := copyCheckout(root, copyDir); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(copyDir) })
	// A git repository, as a clone is: the README check copies the files
	// git knows.
	for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}} {
		if out, err := exec.Command("git", append([]string{"-C", copyDir}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	tmp := t.TempDir()

	cmd := exec.Command(filepath.Join(copyDir, "scripts", "test.sh"), "--readmes-only", "labs/01")
	cmd.Dir = copyDir
	var env []string
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); k != "KUBECONFIG" && k != "GOWORK" && k != "TMPDIR" {
			env = append(env, kv)
		}
	}
	cmd.Env = append(env, "TMPDIR="+tmp)
	var out lockedBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	// In this test binary's process group: should the binary itself be
	// interrupted, test.sh gets the signal too and cleans up after itself.
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	ended := false
	defer func() {
		if ended {
			return
		}
		// The test failed early: let test.sh clean up, then make sure.
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(2 * time.Minute):
			cmd.Process.Kill()
			<-exited
		}
	}()

	// Mid-README-check: the check's own cluster is up and one of the
	// README's commands runs in its copy.
	checkCopy := filepath.Join(copyDir, ".cluster", "readme-check", "labs-01-watch-curl-README")
	err = wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 5*time.Minute, true, func(context.Context) (bool, error) {
		select {
		case err := <-exited:
			exited <- err
			return false, fmt.Errorf("test.sh ended (%v) before its README check ran a command", err)
		default:
		}
		// test.sh names the README check's log; the check logs each command
		// it ran ("README.md:44: ran scripts/cluster-up.sh").
		m := checksLogRE.FindStringSubmatch(out.String())
		if m == nil {
			return false, nil
		}
		log, _ := os.ReadFile(m[1])
		if !strings.Contains(string(log), "labs/01-watch-curl/README.md:") || !strings.Contains(string(log), ": ran ") {
			return false, nil
		}
		for _, p := range processesUnder(checkCopy) {
			if !strings.Contains(p.exe, "labcluster") {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("waiting for the README check to run a command: %v\n%s", err, out.String())
	}
	t.Logf("interrupting test.sh with %d processes running from the copy", len(processesUnder(copyDir)))
	interruptedAt := time.Now()

	syscall.Kill(cmd.Process.Pid, syscall.SIGINT)
	select {
	case err = <-exited:
		ended = true
	case <-time.After(3 * time.Minute):
		t.Fatalf("test.sh still runs 3 minutes after SIGINT\n%s", out.String())
	}
	t.Logf("test.sh ended %.1fs after SIGINT", time.Since(interruptedAt).Seconds())
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 130 {
		t.Errorf("test.sh ended with %v, want exit status 130", err)
	}
	if !strings.Contains(out.String(), "test.sh: interrupted; stopped ") {
		t.Errorf("test.sh did not say what it stopped:\n%s", out.String())
	}

	// Whatever was stopped may take a moment to be gone.
	var left []proc
	wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 15*time.Second, true, func(context.Context) (bool, error) {
		left = append(processesUnder(copyDir), processesUnder(tmp)...)
		return len(left) == 0, nil
	})
	for _, p := range left {
		t.Errorf("still running after test.sh's SIGINT: %s", p)
	}
	if entries, _ := os.ReadDir(tmp); len(entries) != 0 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("left in test.sh's $TMPDIR: %v", names)
	}
	if t.Failed() || testing.Verbose() {
		t.Logf("test.sh's output:\n%s", out.String())
	}
}

var checksLogRE = regexp.MustCompile(`their logs: (\S+readme\.log)`)

// A proc is a live process seen in /proc.
type proc struct {
	pid           int
	exe, cwd, cmd string
}

func (p proc) String() string {
	return fmt.Sprintf("pid %d exe %s cwd %s: %s", p.pid, p.exe, p.cwd, p.cmd)
}

// processesUnder lists the live processes (zombies aside: they run nothing
// and their parent reaps them) whose executable, working directory or
// command line is dir or below it.
func processesUnder(dir string) []proc {
	entries, _ := os.ReadDir("/proc")
	var found []proc
	for _, e := range entries {
		var pid int
		if _, err := fmt.Sscanf(e.Name(), "%d", &pid); err != nil || pid == os.Getpid() {
			continue
		}
		base := filepath.Join("/proc", e.Name())
		if stat, err := os.ReadFile(filepath.Join(base, "stat")); err != nil {
			continue
		} else if i := strings.LastIndexByte(string(stat), ')'); i < 0 || strings.HasPrefix(string(stat[i+1:]), " Z") {
			continue
		}
		exe, _ := os.Readlink(filepath.Join(base, "exe"))
		cwd, _ := os.Readlink(filepath.Join(base, "cwd"))
		raw, _ := os.ReadFile(filepath.Join(base, "cmdline"))
		cmdline := strings.TrimSpace(strings.ReplaceAll(string(raw), "\x00", " "))
		under := func(p string) bool { return p == dir || strings.HasPrefix(p, dir+"/") }
		if under(exe) || under(cwd) || strings.Contains(cmdline, dir) {
			found = append(found, proc{pid: pid, exe: exe, cwd: cwd, cmd: cmdline})
		}
	}
	return found
}
