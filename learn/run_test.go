package main

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// demoRoot is a workspace with one lab, 09, whose demo creates a
// namespace, starts a background command that writes its pid to bg.pid and
// then bgPrints (the demo waits for "synced"), then prints once the file
// $ROOT/go exists. Its
// cluster is a fake: .cluster/bin/labcluster answers everything and logs
// its arguments to labcluster.log. It returns the root and the labs binary.
func demoRoot(t *testing.T, bgPrints string) (root, bin string) {
	t.Helper()
	return labsRoot(t, map[string]string{
		"go.work":                 "go 1.26.0\n",
		".cluster/kubeconfig":     "",
		".cluster/bin/labcluster": "#!/bin/sh\necho \"$@\" >>\"$(dirname \"$0\")/../../labcluster.log\"\n",
		"labs/09-demo/exercises.json": `{"demo": [
  {"say": "a namespace", "run": "echo created $NS"},
  {"say": "in the background", "run": "echo $$ > $ROOT/bg.pid; echo ` + bgPrints + `; exec sleep 300", "background": true, "wait": "synced"},
  {"say": "prints on cue", "run": "until [ -f $ROOT/go ]; do sleep 0.05; done; echo after"}
]}`,
	})
}

// labsRoot is a workspace made of files (path: content, all executable),
// and the labs command built from this package.
func labsRoot(t *testing.T, files map[string]string) (root, bin string) {
	t.Helper()
	root = t.TempDir()
	bin = labsBinary(t)
	for name, body := range files {
		p := filepath.Join(root, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return root, bin
}

// startDemo runs `labs run 09` in its own process group (a terminal's
// foreground job) and waits for its background command to start.
func startDemo(t *testing.T, root, bin string, stdout *os.File) (*exec.Cmd, int, *strings.Builder) {
	t.Helper()
	cmd := exec.Command(bin, "run", "09")
	cmd.Env = append(os.Environ(), "LABS_ROOT="+root, "LABS_STATE="+filepath.Join(root, "state"), "KUBECONFIG=")
	var stderr strings.Builder
	cmd.Stdout, cmd.Stderr = stdout, &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	var pid int
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		data, err := os.ReadFile(filepath.Join(root, "bg.pid"))
		pid, _ = strconv.Atoi(strings.TrimSpace(string(data)))
		return err == nil && pid > 0, nil
	})
	if err != nil {
		t.Fatalf("the demo's background command never started: %s", stderr.String())
	}
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
	return cmd, pid, &stderr
}

// checkCleanedUp: the background command is gone, and the namespace was
// deleted.
func checkCleanedUp(t *testing.T, root string, pid int) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH), nil
	})
	if err != nil {
		t.Errorf("the demo's background command (pid %d) still runs", pid)
	}
	log, _ := os.ReadFile(filepath.Join(root, "labcluster.log"))
	if !strings.Contains(string(log), "delete namespace labs-demo-09 --wait=false --ignore-not-found") {
		t.Errorf("the namespace was not deleted; labcluster calls:\n%s", log)
	}
}

// TestRunDemoInterrupted: Ctrl-C while the demo waits on its background
// command says "interrupted" (not that the step failed), stops that
// command and deletes the demo's namespace; exit status 130.
func TestRunDemoInterrupted(t *testing.T) {
	t.Parallel() // its own process group, root and state
	root, bin := demoRoot(t, "starting")
	cmd, pid, stderr := startDemo(t, root, bin, nil)
	syscall.Kill(-cmd.Process.Pid, syscall.SIGINT) // Ctrl-C: the foreground group
	err := cmd.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 130 {
		t.Errorf("exit %v, want status 130", err)
	}
	if want := "labs: interrupted; stopping the demo's background commands and deleting its namespace labs-demo-09\n"; !strings.HasSuffix(stderr.String(), want) || strings.Contains(stderr.String(), "never printed") {
		t.Errorf("stderr %q, want it to end with %q", stderr.String(), want)
	}
	checkCleanedUp(t, root, pid)
}

// TestRunDemoOutputClosed: `scripts/labs run 05 | head` closes the output
// while the demo runs; the demo stops, and stops its background command,
// instead of leaving it running.
func TestRunDemoOutputClosed(t *testing.T) {
	t.Parallel()
	root, bin := demoRoot(t, "synced")
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd, pid, _ := startDemo(t, root, bin, w)
	w.Close()
	// Read the first line, then go away, as head does.
	if _, err := bufio.NewReader(r).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	r.Close()
	os.WriteFile(filepath.Join(root, "go"), nil, 0o644) // the demo prints again
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("labs run still runs 30s after its output was closed")
	}
	err = wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH), nil
	})
	if err != nil {
		t.Errorf("the demo's background command (pid %d) still runs", pid)
	}
}

// TestRunDemoKubeconfig: labs run picks its cluster by clusterstate's rule:
// $KUBECONFIG naming another cluster that does not answer is an error that
// says what to do (the other tests run with it unset).
func TestRunDemoKubeconfig(t *testing.T) {
	root, _ := demoRoot(t, "synced")
	t.Setenv("LABS_ROOT", root)
	t.Setenv("LABS_STATE", t.TempDir())
	other := filepath.Join(t.TempDir(), "kind.kubeconfig")
	t.Setenv("KUBECONFIG", other)
	code, out := run(t, "", "run", "09")
	if want := "labs: KUBECONFIG=" + other + " points at no ready cluster: it does not answer; start that cluster, or `unset KUBECONFIG`"; code != 1 || !strings.HasPrefix(out, want) || strings.Count(out, "\n") != 1 {
		t.Errorf("exit %d, output %q; want 1 and one line starting %q", code, out, want)
	}
}

// TestRunDemoStopsOnSIGTERMToItsPid: `kill PID` of labs run, from a
// supervisor or a test harness, reaches labs alone, not the demo's
// commands (Ctrl-C reaches the whole group: TestRunDemoInterrupted). The
// demo stops as on Ctrl-C: its background command ends, its namespace is
// deleted, exit status 130.
func TestRunDemoStopsOnSIGTERMToItsPid(t *testing.T) {
	root, bin := demoRoot(t, "synced")
	cmd, pid, stderr := startDemo(t, root, bin, nil)
	syscall.Kill(cmd.Process.Pid, syscall.SIGTERM) // labs alone, not its group
	err := waitExit(t, cmd, 30*time.Second)
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 130 {
		t.Errorf("exit %v, want status 130", err)
	}
	if want := "labs: interrupted; stopping the demo's background commands and deleting its namespace labs-demo-09\n"; !strings.HasSuffix(stderr.String(), want) {
		t.Errorf("stderr %q, want it to end with %q", stderr.String(), want)
	}
	checkCleanedUp(t, root, pid)
}

// TestRunClusterUpStopsOnSIGTERMToItsPid: with no cluster up, labs run
// starts one with scripts/cluster-up.sh, which runs commands of its own
// (go build, labcluster up). SIGTERM to labs alone while it waits stops
// them too, not only the script; exit status 130.
func TestRunClusterUpStopsOnSIGTERMToItsPid(t *testing.T) {
	root, bin := demoRoot(t, "synced")
	os.Remove(filepath.Join(root, ".cluster", "kubeconfig")) // no cluster is up
	// The script's command writes its pid, then runs until it is stopped.
	script := "#!/usr/bin/env bash\nbash -c 'echo $$ > up.pid; exec sleep 300'\necho up\n"
	os.MkdirAll(filepath.Join(root, "scripts"), 0o755)
	if err := os.WriteFile(filepath.Join(root, "scripts", "cluster-up.sh"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "run", "09")
	cmd.Env = append(os.Environ(), "LABS_ROOT="+root, "LABS_STATE="+filepath.Join(root, "state"), "KUBECONFIG=")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	up := waitForPid(t, filepath.Join(root, "up.pid"), 30*time.Second)

	syscall.Kill(cmd.Process.Pid, syscall.SIGTERM) // labs alone, not its group
	err := waitExit(t, cmd, 30*time.Second)
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 130 || !strings.HasSuffix(stderr.String(), "\nlabs: interrupted\n") {
		t.Errorf("exit %v, stderr %q; want status 130 and \"labs: interrupted\" last", err, stderr.String())
	}
	checkGone(t, up, "scripts/cluster-up.sh's command")
}

// TestCheckStopsOnSIGTERMToItsPid: labs check runs go test, which runs the
// test binary. SIGTERM to labs alone while a test runs stops the test
// binary too (killing go alone would leave it running, and with it the
// embedded cluster labkit starts); it says "labs: interrupted", status 130.
func TestCheckStopsOnSIGTERMToItsPid(t *testing.T) {
	testCheckStopsOnSignalToItsPid(t, syscall.SIGTERM)
}

// TestCheckStopsOnSIGINTToItsPid: the same for Ctrl-C, which a terminal
// sends to labs alone (its go test runs in a process group of its own):
// "labs: interrupted", not "labs: context canceled" (P14 of the learner walk
// at 2525b38, which `check 04` printed before labs passed signals on).
func TestCheckStopsOnSIGINTToItsPid(t *testing.T) {
	testCheckStopsOnSignalToItsPid(t, syscall.SIGINT)
}

// TestCheckStopsOnSIGHUPToItsPid: the same when the terminal closes. go
// test runs in a process group of its own, which the terminal's hang-up
// does not reach: labs stops it.
func TestCheckStopsOnSIGHUPToItsPid(t *testing.T) {
	testCheckStopsOnSignalToItsPid(t, syscall.SIGHUP)
}

func testCheckStopsOnSignalToItsPid(t *testing.T, sig syscall.Signal) {
	root, bin := labsRoot(t, map[string]string{
		"go.work":              "go 1.26.0\n\nuse ./labs/09-hang\n",
		"labs/09-hang/go.mod":  "module example.com/hang\n\ngo 1.26.0\n",
		"labs/09-hang/hang.go": "package hang\n",
		"labs/09-hang/exercises.json": `{"exercises": [{"name": "hang", "summary": "a test that runs until it is stopped",
  "file": "hang.go", "solution": "hang.go", "tests": [{"package": ".", "run": "TestHang"}]}]}`,
		"labs/09-hang/hang_test.go": `package hang

import (
	"os"
	"strconv"
	"testing"
	"time"
)

func TestHang(t *testing.T) {
	os.WriteFile("hang.pid", []byte(strconv.Itoa(os.Getpid())), 0o644)
	<-time.After(time.Hour) // runs until it is stopped
}
`,
	})
	cmd := exec.Command(bin, "check", "09")
	cmd.Env = append(os.Environ(), "LABS_ROOT="+root, "LABS_STATE="+filepath.Join(root, "state"))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	testBinary := waitForPid(t, filepath.Join(root, "labs", "09-hang", "hang.pid"), 3*time.Minute) // go test compiles first

	syscall.Kill(cmd.Process.Pid, sig) // labs alone, not its group
	err := waitExit(t, cmd, time.Minute)
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 130 || !strings.HasSuffix(stderr.String(), "\nlabs: interrupted\n") {
		t.Errorf("exit %v, stderr %q; want status 130 and \"labs: interrupted\" last", err, stderr.String())
	}
	checkGone(t, testBinary, "go test's test binary")
}

// waitForPid waits, with a deadline, for a pid file to be written, and
// returns the pid; a cleanup kills that process, should the test fail.
func waitForPid(t *testing.T, file string, timeout time.Duration) int {
	t.Helper()
	var pid int
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		data, err := os.ReadFile(file)
		pid, _ = strconv.Atoi(strings.TrimSpace(string(data)))
		return err == nil && pid > 0, nil
	})
	if err != nil {
		t.Fatalf("no pid in %s after %v", file, timeout)
	}
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
	return pid
}

// waitExit waits for cmd to exit, with a deadline, and returns Wait's error.
func waitExit(t *testing.T, cmd *exec.Cmd, timeout time.Duration) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(timeout):
		// The cleanup kills its group, which ends Wait.
		t.Fatalf("%s still runs %v after a signal to its pid", strings.Join(cmd.Args, " "), timeout)
		return nil
	}
}

// checkGone: process pid ends within a deadline.
func checkGone(t *testing.T, pid int, what string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH), nil
	})
	if err != nil {
		t.Errorf("%s (pid %d) still runs after labs exited", what, pid)
	}
}
