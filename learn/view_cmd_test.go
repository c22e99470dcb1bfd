package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestLabsViewServesThenStopsOnCtrlC runs `scripts/labs view` as docs/view.md
// shows it, from the repository root, in its own process group (a
// terminal's foreground job): it prints the page's URL on 127.0.0.1, the
// page answers, and Ctrl-C stops everything: exit 0, "view: stopped", and
// no view process left. (TestViewInABrowser, in learn/view, drives the page.)
func TestLabsViewServesThenStopsOnCtrlC(t *testing.T) {
	v := startLabsView(t)
	cmd, url, seen, lines, stderr := v.cmd, v.url, v.seen, v.lines, v.stderr
	// It says whether the real cluster is beside the course's stack: the
	// one that is up, by the course's rule, or none.
	saidCluster := false
	for _, l := range seen {
		if strings.HasPrefix(l, "labs: ") && strings.Contains(l, "the view shows the course's stack alone") ||
			strings.HasPrefix(l, "view: and beside it the real cluster of ") {
			saidCluster = true
		}
	}
	if !saidCluster {
		t.Errorf("labs view did not say whether a real cluster is beside the stack:\n%s", strings.Join(seen, "\n"))
	}
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), "The course's stack, live") {
		t.Fatalf("GET %s: %s\n%.300s", url, resp.Status, body)
	}

	syscall.Kill(-cmd.Process.Pid, syscall.SIGINT) // Ctrl-C
	var rest []string
	for l := range lines {
		rest = append(rest, l)
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	select {
	case err = <-waited:
	case <-time.After(time.Minute):
		t.Fatalf("labs view still runs a minute after Ctrl-C:\n%s", stderr.String())
	}
	if err != nil {
		t.Errorf("exit: %v, want 0\n%s", err, stderr.String())
	}
	if len(rest) == 0 || rest[len(rest)-1] != "view: stopped" {
		t.Errorf("after Ctrl-C it printed %q, want it to end with \"view: stopped\"", rest)
	}
	// Nothing of the group is left (the view, its etcd and servers are one process).
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for syscall.Kill(-cmd.Process.Pid, 0) == nil {
		select {
		case <-ctx.Done():
			t.Fatalf("a process of the view's group is still running")
		case <-time.After(50 * time.Millisecond): // polling for the group's end, with the deadline above
		}
	}
	if _, err := http.Get(url); err == nil {
		t.Errorf("%s still answers after Ctrl-C", url)
	}
}

// labsView is `scripts/labs view` started as docs/view.md shows it, from the
// repository root, in its own process group (a terminal's foreground job),
// once it serves its page.
type labsView struct {
	cmd    *exec.Cmd
	root   string
	url    string
	seen   []string    // its output up to the line with the URL
	lines  chan string // its output after that line; closed at the end
	stderr *strings.Builder
}

// startLabsView starts scripts/labs view and waits, with a deadline, until
// it prints its page's URL; a cleanup kills its process group.
func startLabsView(t *testing.T) *labsView {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and starts the whole stack")
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(root, "scripts", "labs"), "view")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "LABS_ROOT=")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	v := &labsView{cmd: cmd, root: root, lines: make(chan string, 100), stderr: &strings.Builder{}}
	cmd.Stderr = v.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })

	go func() {
		defer close(v.lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			v.lines <- sc.Text()
		}
	}()
	urlLine := regexp.MustCompile(`^view: open (http://127\.0\.0\.1:[0-9]+/) \(Ctrl-C stops everything\)$`)
	deadline := time.After(5 * time.Minute) // the first run compiles the labs
	for v.url == "" {
		select {
		case l, ok := <-v.lines:
			if !ok {
				t.Fatalf("labs view ended before printing its URL:\n%s\n%s", strings.Join(v.seen, "\n"), v.stderr.String())
			}
			v.seen = append(v.seen, l)
			if m := urlLine.FindStringSubmatch(l); m != nil {
				v.url = m[1]
			}
		case <-deadline:
			t.Fatalf("no URL after 5 minutes:\n%s\n%s", strings.Join(v.seen, "\n"), v.stderr.String())
		}
	}
	return v
}
