package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
)

// testDir is this test binary's own directory (TestMain makes it): the
// labs command it builds (labsBinary), and the state of every test that
// does not set its own.
var testDir string

// TestMain points LABS_STATE at a directory of the test binary, so that no
// test, a parallel one included (t.Parallel and t.Setenv exclude each
// other), reads or writes the learner's .cluster/learn. A test that needs a
// fresh state of its own still calls withState.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "labs-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	testDir = dir
	os.Setenv("LABS_STATE", filepath.Join(dir, "state"))
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// labsBinary is the labs command, built once for the test binary (go build
// takes seconds; the demo tests run it as its own process, as
// scripts/labs does).
func labsBinary(t *testing.T) string {
	t.Helper()
	labsBuild.once.Do(func() {
		labsBuild.bin = filepath.Join(testDir, "labs")
		if out, err := exec.Command("go", "build", "-o", labsBuild.bin, ".").CombinedOutput(); err != nil {
			labsBuild.err = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if labsBuild.err != nil {
		t.Fatal(labsBuild.err)
	}
	return labsBuild.bin
}

var labsBuild struct {
	once sync.Once
	bin  string
	err  error
}

// run runs the labs command in-process on the real workspace, with its
// state in a temporary directory, and returns its exit code and output.
func run(t *testing.T, stdin string, args ...string) (int, string) {
	t.Helper()
	var out bytes.Buffer
	code := Main(context.Background(), args, strings.NewReader(stdin), &out, &out)
	return code, out.String()
}

func withState(t *testing.T) {
	t.Setenv("LABS_STATE", t.TempDir())
}

// TestListShowsEveryLab: `labs` names every labs/NN-* directory and every
// exercise of every exercises.json (--no-run: states from the cache only).
func TestListShowsEveryLab(t *testing.T) {
	withState(t)
	root, err := workspaceRoot()
	if err != nil {
		t.Fatal(err)
	}
	code, out := run(t, "", "--no-run")
	if code != 0 {
		t.Fatalf("labs --no-run: exit %d\n%s", code, out)
	}
	dirs, _ := filepath.Glob(filepath.Join(root, "labs", "[0-9][0-9]-*"))
	if len(dirs) < 4 {
		t.Fatalf("found only %v under labs/", dirs)
	}
	labs, err := loadLabs(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		if !strings.Contains(out, filepath.Base(d)) {
			t.Errorf("labs does not list %s:\n%s", filepath.Base(d), out)
		}
	}
	n := 0
	for _, lab := range labs {
		for _, ex := range lab.Exercises {
			n++
			if !strings.Contains(out, ex.Name) {
				t.Errorf("labs does not list exercise %s of lab %s", ex.Name, lab.Num)
			}
		}
	}
	if n < 6 {
		t.Errorf("only %d exercises in the workspace; labs 03 and 05 have 3 each", n)
	}
}

// TestCheckFailsReadablyThenPassesSolved: `labs check 03 flush-when-idle`
// in exercise mode fails, naming the exercise, the file to edit, what was
// expected and the next step; with --solution (no stubs) it passes.
func TestCheckFailsReadablyThenPassesSolved(t *testing.T) {
	t.Parallel() // go test subprocesses; check keeps no state
	code, out := run(t, "", "check", "03", "flush-when-idle")
	if code != 1 {
		t.Fatalf("check in exercise mode: exit %d, want 1\n%s", code, out)
	}
	for _, want := range []string{
		"✗ flush-when-idle",
		"file:   labs/03-watchserver/watchserver/flush_exercise.go",
		"fail TestFramesAreFlushedOnlyWhenNoEventIsWaiting (watchserver)",
		"with 6 flushes; want 2",
		"next: write the TODO in labs/03-watchserver/watchserver/flush_exercise.go",
		"scripts/labs hint 03 flush-when-idle",
		"0 of 1 exercise(s) pass.",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("check output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "\x1b[") {
		t.Errorf("colour codes in output that is not a terminal:\n%q", out)
	}
	if strings.Contains(out, "goroutine ") {
		t.Errorf("a stack trace in the check output:\n%s", out)
	}
	// About 20 lines for the exercise, without the exercise note that the
	// test prints (check says the same in its own words).
	exLines := strings.Count(out[strings.Index(out, "✗ flush-when-idle"):strings.Index(out, "0 of 1 exercise(s) pass.")], "\n")
	if exLines > 20 || strings.Contains(out, "this test checks exercise") {
		t.Errorf("the exercise takes %d lines (want at most 20), or repeats the test's exercise note:\n%s", exLines, out)
	}
	// --verbose: go test's output as it is, the exercise note included.
	code, out = run(t, "", "check", "03", "flush-when-idle", "--verbose")
	if code != 1 || !strings.Contains(out, "=== RUN   TestFramesAreFlushedOnlyWhenNoEventIsWaiting") || !strings.Contains(out, "this test checks exercise flush-when-idle") {
		t.Errorf("check --verbose: exit %d, want 1 and go test's whole output\n%s", code, out)
	}
	code, out = run(t, "", "check", "03", "flush-when-idle", "--solution")
	if code != 0 || !strings.Contains(out, "✓ flush-when-idle") || !strings.Contains(out, "1 of 1 exercise(s) pass.") {
		t.Fatalf("check --solution: exit %d, want 0 and the exercise passing\n%s", code, out)
	}
}

// TestVerifyOneExercise: the maintainers' check on each exercise: it fails
// as shipped, naming the exercise and its file; it passes with only its
// solution overlaid, and in solution mode. On a lab of its own, lab 09,
// whose tests build in a moment (scripts/check-exercises.sh runs verify on
// every exercise of the real labs): double is sound; half's stub already
// holds the answer, and triple's test fails without naming its exercise,
// both of which verify must report.
func TestVerifyOneExercise(t *testing.T) {
	t.Parallel() // go vet and go test in a lab of its own; verify keeps no state
	root := t.TempDir()
	test := func(name, call, want, says string) string {
		return "func Test" + name + "(t *testing.T) {\n\tif got := " + call + "; got != " + want + " {\n\t\tt.Fatalf(\"" + call + " = %d, want " + want + says + "\", got)\n\t}\n}\n\n"
	}
	writeFiles(t, root, map[string]string{
		"go.work":             "go 1.26.0\n\nuse ./labs/09-demo\n",
		"labs/09-demo/go.mod": "module example.com/demo\n\ngo 1.26.0\n",
		"labs/09-demo/exercises.json": `{"exercises": [
  {"name": "double", "file": "double_exercise.go", "solution": "double.go", "tests": [{"package": ".", "run": "TestDouble"}]},
  {"name": "half", "file": "half_exercise.go", "solution": "half.go", "tests": [{"package": ".", "run": "TestHalf"}]},
  {"name": "triple", "file": "triple_exercise.go", "solution": "triple.go", "tests": [{"package": ".", "run": "TestTriple"}]}
]}`,
		"labs/09-demo/double_exercise.go": "//go:build exercise\n\npackage demo\n\n// TODO(exercise double): twice n\nfunc double(n int) int { return n }\n",
		"labs/09-demo/double.go":          "//go:build !exercise\n\npackage demo\n\nfunc double(n int) int { return 2 * n }\n",
		"labs/09-demo/half_exercise.go":   "//go:build exercise\n\npackage demo\n\n// TODO(exercise half): n over two\nfunc half(n int) int { return n / 2 }\n",
		"labs/09-demo/half.go":            "//go:build !exercise\n\npackage demo\n\nfunc half(n int) int { return n / 2 }\n",
		"labs/09-demo/triple_exercise.go": "//go:build exercise\n\npackage demo\n\n// TODO(exercise triple): three times n\nfunc triple(n int) int { return n }\n",
		"labs/09-demo/triple.go":          "//go:build !exercise\n\npackage demo\n\nfunc triple(n int) int { return 3 * n }\n",
		"labs/09-demo/demo_test.go": "package demo\n\nimport \"testing\"\n\n" +
			// What labkit.ChecksExercise adds to a failure: the exercise and its file.
			test("Double", "double(3)", "6", "; this test checks exercise double: write it in double_exercise.go") +
			test("Half", "half(6)", "3", "") +
			test("Triple", "triple(2)", "6", ""),
	})
	labs, err := loadLabs(root)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	code := cmdVerify(context.Background(), newUI(&out, &out), labs, nil, false, false)
	// Each exercise's lines: from "lab 09 NAME" (or "lab 09 NAME: ...",
	// the overlay run's progress line) to the next.
	section := map[string]string{}
	for _, part := range strings.Split(out.String(), "\nlab 09 ")[1:] {
		name, _, _ := strings.Cut(strings.Fields(part)[0], ":")
		section[name] += part
	}
	for ex, wants := range map[string][]string{
		"double": {"ok   exercise mode as shipped: fails (TestDouble)", "ok   exercise mode with the solution written in: passes", "ok   solution mode: passes"},
		"half":   {"FAIL its tests pass with the stub: the exercise removes nothing they check", "ok   solution mode: passes"},
		"triple": {"FAIL TestTriple fails without naming the exercise and triple_exercise.go (call labkit.ChecksExercise)", "ok   exercise mode with the solution written in: passes"},
	} {
		for _, want := range wants {
			if !strings.Contains(section[ex], want) {
				t.Errorf("verify's section for %s lacks %q:\n%s", ex, want, out.String())
			}
		}
	}
	if strings.Contains(section["double"], "FAIL") {
		t.Errorf("verify reports a problem with double, which is sound:\n%s", out.String())
	}
	if code != 1 || !strings.Contains(out.String(), "verify failed: 2 problem(s)") {
		t.Errorf("verify: exit %d, want 1 and 2 problems (half, triple)\n%s", code, out.String())
	}
}

// writeFiles writes files (path relative to root: content) under root.
func writeFiles(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestListIsCachedByContent: the second listing of a lab runs no test; a
// changed file runs them again. The lab is one of its own, whose tests
// build and run in a moment: lab 09, two exercises, double (the stub as
// shipped: not started) and half (its stub written: done).
func TestListIsCachedByContent(t *testing.T) {
	withState(t)
	root := t.TempDir()
	stub := "//go:build exercise\n\npackage demo\n\n// TODO(exercise double): return twice n\nfunc double(n int) int { return n }\n"
	files := map[string]string{
		"go.work":             "go 1.26.0\n\nuse ./labs/09-demo\n",
		"labs/09-demo/go.mod": "module example.com/demo\n\ngo 1.26.0\n",
		"labs/09-demo/exercises.json": `{"exercises": [
  {"name": "double", "summary": "twice n", "file": "double_exercise.go", "solution": "double.go", "tests": [{"package": ".", "run": "TestDouble"}]},
  {"name": "half", "summary": "n over two", "file": "half_exercise.go", "solution": "half.go", "tests": [{"package": ".", "run": "TestHalf"}]}
]}`,
		"labs/09-demo/double_exercise.go": stub,
		"labs/09-demo/double.go":          "//go:build !exercise\n\npackage demo\n\nfunc double(n int) int { return 2 * n }\n",
		"labs/09-demo/half_exercise.go":   "//go:build exercise\n\npackage demo\n\nfunc half(n int) int { return n / 2 }\n",
		"labs/09-demo/half.go":            "//go:build !exercise\n\npackage demo\n\nfunc half(n int) int { return n / 2 }\n",
		"labs/09-demo/demo_test.go": "package demo\n\nimport \"testing\"\n\n" +
			"func TestDouble(t *testing.T) {\n\tif got := double(3); got != 6 {\n\t\tt.Fatalf(\"double(3) = %d, want 6\", got)\n\t}\n}\n\n" +
			"func TestHalf(t *testing.T) {\n\tif got := half(6); got != 3 {\n\t\tt.Fatalf(\"half(6) = %d, want 3\", got)\n\t}\n}\n",
	}
	writeFiles(t, root, files)
	labs, err := loadLabs(root)
	if err != nil {
		t.Fatal(err)
	}
	lab, err := findLab(labs, "09")
	if err != nil {
		t.Fatal(err)
	}
	list := func() string {
		var out bytes.Buffer
		if code := cmdList(context.Background(), newUI(&out, &out), root, []*Lab{lab}, false); code != 0 {
			t.Fatalf("list: exit %d\n%s", code, out.String())
		}
		return out.String()
	}
	const ran = "running the exercises' tests"
	// state is what list shows for an exercise: "  <mark> NAME  STATE  summary".
	state := func(out, ex string) string {
		m := regexp.MustCompile(`(?m)^  \S+ ` + ex + ` +(done|failing|not started) `).FindStringSubmatch(out)
		if m == nil {
			return ""
		}
		return m[1]
	}
	first := list()
	if !strings.Contains(first, ran) || state(first, "double") != "not started" || state(first, "half") != "done" {
		t.Fatalf("first listing: want the tests run, double not started and half done:\n%s", first)
	}
	second := list()
	if strings.Contains(second, ran) {
		t.Fatalf("second listing ran the tests again, with no file changed:\n%s", second)
	}
	// Same states, from the cache.
	states := func(out string) string {
		var keep []string
		for _, l := range strings.Split(out, "\n") {
			if !strings.Contains(l, ran) {
				keep = append(keep, l)
			}
		}
		return strings.Join(keep, "\n")
	}
	if a, b := states(first), states(second); a != b {
		t.Errorf("cached listing differs from the first:\n%s\n---\n%s", a, b)
	}
	// The learner writes double: the next listing runs the tests again.
	solved := strings.Replace(stub, "return n }", "return 2 * n }", 1)
	if err := os.WriteFile(filepath.Join(lab.Dir, "double_exercise.go"), []byte(solved), 0o644); err != nil {
		t.Fatal(err)
	}
	third := list()
	if !strings.Contains(third, ran) || state(third, "double") != "done" || state(third, "half") != "done" {
		t.Fatalf("listing after double_exercise.go changed: want the tests run again, both done:\n%s", third)
	}
}

// TestHintsAreGradedAndRemembered: each call shows the next hint; after the
// last, the last again, pointing at `labs solution`.
func TestHintsAreGradedAndRemembered(t *testing.T) {
	withState(t)
	for i, want := range []string{"hint 1 of 3", "hint 2 of 3", "hint 3 of 3", "hint 3 of 3"} {
		code, out := run(t, "", "hint", "03", "too-old-rv")
		if code != 0 || !strings.Contains(out, want) {
			t.Fatalf("call %d: exit %d, want %q:\n%s", i+1, code, want, out)
		}
	}
	if _, err := os.Stat(filepath.Join(os.Getenv("LABS_STATE"), "hints.json")); err != nil {
		t.Fatalf("hints are not remembered in the state directory: %v", err)
	}
}

// TestSolutionAsksFirst: without --yes, anything but "y" shows nothing.
func TestSolutionAsksFirst(t *testing.T) {
	withState(t)
	code, out := run(t, "n\n", "solution", "03", "flush-when-idle")
	if code != 1 || strings.Contains(out, "len(events) == 0") {
		t.Fatalf("answered n: exit %d\n%s", code, out)
	}
	code, out = run(t, "", "solution", "03", "flush-when-idle", "--yes")
	if code != 0 || !strings.Contains(out, "+ \treturn len(events) == 0") || !strings.Contains(out, "- \treturn true") {
		t.Fatalf("--yes: exit %d, want the diff from the stub to the solution\n%s", code, out)
	}
}

// TestResetRestoresTheCommittedStub, on a throw-away git repository: a
// changed stub is replaced only when the learner says so (asked on a
// terminal; with none, only with --yes), and their text is kept in
// .cluster/learn/backup/ (here $LABS_STATE/backup), which reset names.
func TestResetRestoresTheCommittedStub(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	withState(t)
	root := t.TempDir()
	dir := filepath.Join(root, "labs", "09-demo")
	os.MkdirAll(dir, 0o755)
	stub := "//go:build exercise\n\npackage demo\n\n// TODO(exercise x): write it\nfunc x() int { return 0 }\n"
	file := filepath.Join(dir, "x_exercise.go")
	os.WriteFile(file, []byte(stub), 0o644)
	for _, args := range [][]string{{"init", "-q"}, {"add", "."}, {"-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "stub"}} {
		if out, err := exec.Command("git", append([]string{"-C", root}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	lab := &Lab{Num: "09", Dir: dir, Name: "09-demo"}
	ex := &Exercise{Name: "x", File: "x_exercise.go"}
	reset := func(stdin string, interactive, yes bool) (int, string) {
		var out bytes.Buffer
		u := newUI(&out, &out)
		u.from(root, "") // as Main does, with no LABS_CWD: paths from the root
		code := cmdReset(u, root, strings.NewReader(stdin), interactive, yes, lab, ex)
		return code, out.String()
	}
	const mine = "//go:build exercise\n\npackage demo\n\nfunc x() int { return 42 } // my attempt\n"
	os.WriteFile(file, []byte(mine), 0o644)
	unchanged := func(when string) {
		t.Helper()
		if got, _ := os.ReadFile(file); string(got) != mine {
			t.Fatalf("%s: the learner's file is now %q", when, got)
		}
		if backups, _ := filepath.Glob(filepath.Join(backupDir(root), "*")); len(backups) != 0 {
			t.Fatalf("%s: backups made: %v", when, backups)
		}
	}

	// No terminal, no --yes: one line, nothing touched.
	code, out := reset("", false, false)
	if want := "labs: labs/09-demo/x_exercise.go differs from the committed stub; reset would replace your code (a copy is kept): pass --yes to reset it\n"; code != 1 || out != want {
		t.Fatalf("no terminal, no --yes: exit %d, output %q; want exit 1 and %q", code, out, want)
	}
	unchanged("refused")

	// A terminal: it asks; anything but y keeps the file.
	code, out = reset("n\n", true, false)
	if code != 1 || !strings.Contains(out, "differs from the committed stub (your code). Replace it?") || !strings.HasSuffix(out, "not reset.\n") {
		t.Fatalf("answered n: exit %d\n%s", code, out)
	}
	unchanged("answered n")

	// y: the stub is back, and the learner's text is in the backup reset names.
	code, out = reset("y\n", true, false)
	if code != 0 {
		t.Fatalf("answered y: exit %d\n%s", code, out)
	}
	if got, _ := os.ReadFile(file); string(got) != stub {
		t.Fatalf("after reset the file is %q, want the committed stub", got)
	}
	backups, _ := filepath.Glob(filepath.Join(backupDir(root), "lab09-x_exercise.*.go"))
	if len(backups) != 1 {
		t.Fatalf("backups %v, want one lab09-x_exercise.<time>.go\n%s", backups, out)
	}
	if got, _ := os.ReadFile(backups[0]); string(got) != mine {
		t.Fatalf("the backup holds %q, want the learner's text %q", got, mine)
	}
	if !strings.Contains(out, "your version of labs/09-demo/x_exercise.go is in "+backups[0]) {
		t.Errorf("reset does not say where the learner's file went (%s):\n%s", backups[0], out)
	}

	// --yes with no terminal: resets without asking, and keeps a second copy.
	os.WriteFile(file, []byte(mine), 0o644)
	if code, out = reset("", false, true); code != 0 || strings.Contains(out, "[y/N]") {
		t.Fatalf("--yes: exit %d\n%s", code, out)
	}
	if backups, _ = filepath.Glob(filepath.Join(backupDir(root), "lab09-x_exercise.*.go")); len(backups) != 2 {
		t.Fatalf("after a second reset: backups %v, want two", backups)
	}

	// As committed: nothing to do, no question, no backup.
	if code, out = reset("", false, false); code != 0 || !strings.Contains(out, "already as committed") {
		t.Fatalf("unchanged stub: exit %d\n%s", code, out)
	}
}

// TestHintWithoutExercise: `labs hint 02` says what is missing and lists
// the lab's exercises, in one line, exit 2.
func TestHintWithoutExercise(t *testing.T) {
	withState(t)
	code, out := run(t, "", "hint", "02")
	if want := "labs: hint needs an exercise: scripts/labs hint 02 EXERCISE (lab 02 has: relist-on-410, resume-rv, backoff-delay)\n"; code != 2 || out != want {
		t.Fatalf("exit %d, output %q; want 2 and %q", code, out, want)
	}
}

// TestCommandsFromALabDirectory: scripts/labs typed in labs/02-listwatcher
// (it passes that directory as LABS_CWD) names itself and the lab's files as
// the learner can type and open them there, not from the root.
func TestCommandsFromALabDirectory(t *testing.T) {
	withState(t)
	root, err := workspaceRoot()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("LABS_CWD", filepath.Join(root, "labs", "02-listwatcher"))
	code, out := run(t, "", "hint", "02")
	if want := "labs: hint needs an exercise: ../../scripts/labs hint 02 EXERCISE (lab 02 has: relist-on-410, resume-rv, backoff-delay)\n"; code != 2 || out != want {
		t.Fatalf("exit %d, output %q; want 2 and %q", code, out, want)
	}
	code, out = run(t, "", "hint", "02", "resume-rv")
	if code != 0 || !strings.Contains(out, "(../../scripts/labs hint 02 resume-rv again for the next one)") {
		t.Fatalf("exit %d, output:\n%s", code, out)
	}
	// Outside the workspace (scripts/labs run by its full path from
	// elsewhere), the root's form: a relative path from there would be long.
	t.Setenv("LABS_CWD", t.TempDir())
	if code, out = run(t, "", "hint", "02"); !strings.Contains(out, ": scripts/labs hint 02 EXERCISE") {
		t.Fatalf("from outside: exit %d, output %q", code, out)
	}
}

func TestLineDiff(t *testing.T) {
	got := strings.Join(lineDiff("a\nb\nc\n", "a\nB\nc\nd\n"), "|")
	if want := "  a|- b|+ B|  c|+ d"; got != want {
		t.Fatalf("lineDiff = %q, want %q", got, want)
	}
}

// TestTagAffectedPackages: verify --full runs again, in exercise mode, only
// the packages whose test binary the exercise tag changes. Every package that
// holds a stub is among them, and so is every package importing one (lab
// 04's cacher holds lab 04's stubs and imports lab 03's); lab 04's etcd3,
// which imports neither, is not, and every package with tests is in exactly
// one of the two lists.
func TestTagAffectedPackages(t *testing.T) {
	t.Parallel()
	root, err := workspaceRoot()
	if err != nil {
		t.Fatal(err)
	}
	labs, err := loadLabs(root)
	if err != nil {
		t.Fatal(err)
	}
	lab, err := findLab(labs, "04")
	if err != nil {
		t.Fatal(err)
	}
	affected, same, err := tagAffectedPackages(context.Background(), lab)
	if err != nil {
		t.Fatal(err)
	}
	in := func(list []string, pkg string) bool {
		for _, p := range list {
			if p == pkg {
				return true
			}
		}
		return false
	}
	for _, ex := range lab.Exercises {
		pkg := "./" + filepath.Dir(ex.File)
		if !in(affected, pkg) {
			t.Errorf("%s holds the stub of %s but is not affected: affected %v, same %v", pkg, ex.Name, affected, same)
		}
	}
	for _, pkg := range []string{".", "./miniapiserver"} {
		if !in(affected, pkg) {
			t.Errorf("%s imports the cacher but is not affected: affected %v", pkg, affected)
		}
	}
	if !in(same, "./etcd3") || in(affected, "./etcd3") {
		t.Errorf("./etcd3 imports no stub, so its binary is the same in both modes: affected %v, same %v", affected, same)
	}
}
