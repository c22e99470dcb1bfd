package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// lockedBuffer is an io.Writer a command writes to while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// waitOutput polls out until it holds want after its first from bytes, or
// fails after timeout; it returns where want ends.
func waitOutput(t *testing.T, out *lockedBuffer, from int, want string, timeout time.Duration) int {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		s := out.String()
		if i := strings.Index(s[from:], want); i >= 0 {
			return from + i + len(want)
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %q after %v; output:\n%s", want, timeout, s)
		}
		<-time.After(20 * time.Millisecond) // polling the output: there is nothing to wait on
	}
}

// TestWatchRechecksOnSave: `labs watch 09` checks a lab's exercises, then,
// when the learner saves the stub solved, checks again within 2 s and says
// "now passes"; saved broken again, "now fails". SIGINT to its pid (a
// terminal's Ctrl-C) stops it with "labs: interrupted", status 130. The lab is one of its own, lab
// 09, whose test builds in a moment.
func TestWatchRechecksOnSave(t *testing.T) {
	t.Parallel() // a subprocess running go test in a lab of its own
	stub := "//go:build exercise\n\npackage demo\n\n// TODO(exercise double): return twice n\nfunc double(n int) int { return n }\n"
	root, bin := labsRoot(t, map[string]string{
		"go.work":             "go 1.26.0\n\nuse ./labs/09-demo\n",
		"labs/09-demo/go.mod": "module example.com/demo\n\ngo 1.26.0\n",
		"labs/09-demo/exercises.json": `{"exercises": [
  {"name": "double", "summary": "twice n", "file": "double_exercise.go", "solution": "double.go", "tests": [{"package": ".", "run": "TestDouble"}]}
]}`,
		"labs/09-demo/double_exercise.go": stub,
		"labs/09-demo/double.go":          "//go:build !exercise\n\npackage demo\n\nfunc double(n int) int { return 2 * n }\n",
		"labs/09-demo/demo_test.go": "package demo\n\nimport \"testing\"\n\n" +
			"func TestDouble(t *testing.T) {\n\tif got := double(3); got != 6 {\n\t\tt.Fatalf(\"double(3) = %d, want 6\", got)\n\t}\n}\n",
	})
	cmd := exec.Command(bin, "watch", "09")
	cmd.Env = append(os.Environ(), "LABS_ROOT="+root, "LABS_STATE="+filepath.Join(root, "state"))
	var out lockedBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })

	at := waitOutput(t, &out, 0, "lab 09: 0 of 1 pass: ✗ double", 2*time.Minute) // go test compiles first
	at = waitOutput(t, &out, at, "watching labs/09-demo/ for changes", 10*time.Second)
	file := filepath.Join(root, "labs", "09-demo", "double_exercise.go")
	for _, step := range []struct{ body, result string }{
		{strings.Replace(stub, "return n }", "return 2 * n }", 1), "lab 09: 1 of 1 pass: ✓ double; now passes: double"},
		{stub, "lab 09: 0 of 1 pass: ✗ double; now fails: double"},
	} {
		saved := time.Now()
		if err := os.WriteFile(file, []byte(step.body), 0o644); err != nil {
			t.Fatal(err)
		}
		at = waitOutput(t, &out, at, "double_exercise.go changed: checking again", 2*time.Second)
		at = waitOutput(t, &out, at, step.result, time.Minute)
		t.Logf("%q %v after the save", step.result, time.Since(saved).Round(time.Millisecond))
		at = waitOutput(t, &out, at, "watching labs/09-demo/ for changes", 10*time.Second)
	}

	syscall.Kill(cmd.Process.Pid, syscall.SIGINT) // labs alone, not its group
	err := waitExit(t, cmd, 30*time.Second)
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 130 || !strings.HasSuffix(out.String(), "\nlabs: interrupted\n") {
		t.Errorf("exit %v, output ends %q; want status 130 and \"labs: interrupted\" last", err, out.String()[max(0, len(out.String())-200):])
	}
}

// TestBriefOutput: a failing test's output as check shows it without
// --verbose: no goroutine dump, no exercise note (check says it), long
// lines cut, at most briefLines lines, and how much was left out.
func TestBriefOutput(t *testing.T) {
	long := "    differential_test.go:303: scenario: [a f c] " + strings.Repeat("delete [f] 1 update [c] 2 ", 20)
	output := strings.Join([]string{
		"=== RUN   TestOpenRefused",
		"    watchapi_test.go:162: got <nil>, want HTTP 500",
		"    panic.go:694: found unexpected goroutines:",
		"        [Goroutine 13 in state select, with net/http.(*persistConn).readLoop on top of the stack:",
		"        net/http.(*persistConn).readLoop(0x3c514d44eb40)",
		"        ]",
		"    exercise.go:31: this test checks exercise refused-watch: turn a refused watch into an *HTTPError",
		"            write it in watchapi/refused_exercise.go (the TODO there); README: README.md#refused-watch",
		"            a hint: scripts/labs hint 01 refused-watch",
		long,
		"--- FAIL: TestOpenRefused (0.00s)",
	}, "\n")
	lines, cut := briefOutput(output)
	got := strings.Join(lines, "\n")
	for _, no := range []string{"readLoop", "this test checks exercise", "a hint:", "=== RUN", "--- FAIL"} {
		if strings.Contains(got, no) {
			t.Errorf("brief output holds %q:\n%s", no, got)
		}
	}
	if !strings.Contains(got, "got <nil>, want HTTP 500") || !strings.Contains(got, "goroutines left running after the test") {
		t.Errorf("brief output lacks the failure or the note on the goroutines:\n%s", got)
	}
	for _, l := range lines {
		if n := len([]rune(l)); n > briefWidth+40 {
			t.Errorf("a line of %d characters:\n%s", n, l)
		}
	}
	if cut == 0 {
		t.Errorf("nothing said to be left out")
	}
	many := strings.Repeat("    x_test.go:1: delay 1 = 800ms, want in [1.6s, 3.2s]\n", 30)
	if lines, cut := briefOutput(many); len(lines) != briefLines || cut != 30-briefLines {
		t.Errorf("30 lines: kept %d, cut %d; want %d and %d", len(lines), cut, briefLines, 30-briefLines)
	}
}
