package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// cmdVerify is the maintainers' check of the exercises (scripts/check-exercises.sh):
// for every exercise,
//
//  1. as shipped, in exercise mode, its tests fail, and each failure names
//     the exercise and its file (the learner's starting point);
//  2. in exercise mode with only this stub replaced by its solution (go test
//     -overlay), its tests pass: the exercise can be solved alone, whatever
//     state the others are in;
//  3. in solution mode (no tag) its tests pass.
//
// Tests that need a cluster run only with --cluster. With --full it also
// runs every test of the lab in exercise mode and checks that the failures
// are all tests of exercises (or "combined" tests that need several).
func cmdVerify(ctx context.Context, u *ui, labs []*Lab, only *Exercise, withCluster, full bool) int {
	failures := 0
	fail := func(format string, args ...any) {
		failures++
		u.printf("  %s "+format+"\n", append([]any{u.red("FAIL")}, args...)...)
	}
	for _, lab := range labs {
		exs := lab.Exercises
		if only != nil {
			exs = []Exercise{*only}
		}
		if only == nil && len(lab.Exercises) < 3 {
			u.printf("lab %s\n", lab.Num)
			fail("lab %s has %d exercise(s) in exercises.json; every lab has at least 3", lab.Num, len(lab.Exercises))
			if len(exs) == 0 {
				continue
			}
		}
		// Exercise mode must build and vet cleanly, every package of the lab.
		u.start(fmt.Sprintf("lab %s: go vet -tags exercise ./...", lab.Num))
		vet := exec.CommandContext(ctx, "go", "vet", "-tags", "exercise", "./...")
		vet.Dir = lab.Dir
		out, err := vet.CombinedOutput()
		u.done()
		if err != nil {
			u.printf("lab %s\n", lab.Num)
			fail("go vet -tags exercise ./... fails:\n%s", indent(string(out)))
			continue
		}
		// Steps 1 and 3 run every exercise's tests in one go test each (the
		// same binary as one at a time: all stubs, or none); step 2 needs
		// one run per exercise, its own stub replaced.
		var ready []*Exercise
		var refsAll []TestRef
		for i := range exs {
			ex := &exs[i]
			if err := checkExerciseFiles(lab, ex); err != nil {
				u.printf("lab %s %s\n", lab.Num, ex.Name)
				fail("%v", err)
				continue
			}
			refs := quickTests([]Exercise{*ex}, withCluster)
			if len(refs) == 0 {
				u.printf("lab %s %s\n", lab.Num, ex.Name)
				fail("no test checks it without a cluster (use --cluster)")
				continue
			}
			ready = append(ready, ex)
			refsAll = append(refsAll, refs...)
		}
		if len(ready) == 0 {
			continue
		}
		u.start(fmt.Sprintf("lab %s: the exercises' tests, exercise mode as shipped", lab.Num))
		shipped, err := runTests(ctx, lab, refsAll, testRun{exercise: true, timeout: testTimeout, ui: u})
		u.done()
		if err != nil {
			fail("%v", err)
			continue
		}
		u.start(fmt.Sprintf("lab %s: the exercises' tests, solution mode", lab.Num))
		solved, err := runTests(ctx, lab, refsAll, testRun{timeout: testTimeout, ui: u})
		u.done()
		if err != nil {
			fail("%v", err)
			continue
		}
		for _, ex := range ready {
			u.printf("lab %s %s\n", lab.Num, ex.Name)
			// 1. As shipped: fails, and says which exercise and file.
			res := resultsOf(shipped, ex, withCluster)
			if passed(res) {
				fail("its tests pass with the stub: the exercise removes nothing they check")
			} else {
				for _, r := range res {
					if r.Status == "fail" && !strings.Contains(r.Ref.Run, "/") &&
						!(strings.Contains(r.Output, "exercise "+ex.Name) && strings.Contains(r.Output, ex.File)) {
						fail("%s fails without naming the exercise and %s (call labkit.ChecksExercise)", r.Ref, ex.File)
					}
					if r.Status == "did not run" {
						fail("%s did not run (build error, panic or timeout):\n%s", r.Ref, indent(r.Output))
					}
				}
				u.printf("  ok   exercise mode as shipped: fails (%s)\n", failedNames(res))
			}
			// 2. Exercise mode, this stub solved.
			overlay, cleanup, err := solutionOverlay(lab, ex)
			if err != nil {
				fail("%v", err)
				continue
			}
			u.start(fmt.Sprintf("lab %s %s: exercise mode, solved", lab.Num, ex.Name))
			res, err = runTests(ctx, lab, quickTests([]Exercise{*ex}, withCluster), testRun{exercise: true, overlay: overlay, timeout: testTimeout, ui: u})
			u.done()
			cleanup()
			switch {
			case err != nil:
				fail("%v", err)
			case !passed(res):
				fail("exercise mode with the solution in the stub fails: %s\n%s", failedNames(res), indent(firstFailure(res)))
			default:
				u.printf("  ok   exercise mode with the solution written in: passes\n")
			}
			// 3. Solution mode.
			res = resultsOf(solved, ex, withCluster)
			if !passed(res) {
				fail("solution mode fails: %s\n%s", failedNames(res), indent(firstFailure(res)))
			} else {
				u.printf("  ok   solution mode: passes\n")
			}
		}
		if full && only == nil {
			failures += verifyFull(ctx, u, lab)
		}
	}
	if failures > 0 {
		u.printf("%s: %d problem(s)\n", u.red("verify failed"), failures)
		return 1
	}
	u.printf("%s\n", u.green("verify: every exercise fails as shipped and passes once solved"))
	return 0
}

// resultsOf picks ex's tests from a run of several exercises' tests.
func resultsOf(all []TestResult, ex *Exercise, withCluster bool) []TestResult {
	var out []TestResult
	for _, t := range quickTests([]Exercise{*ex}, withCluster) {
		for _, r := range all {
			if r.Ref.Package == t.Package && r.Ref.Run == t.Run {
				out = append(out, r)
				break
			}
		}
	}
	return out
}

// checkExerciseFiles: the stub and the solution exist with the right build lines.
func checkExerciseFiles(lab *Lab, ex *Exercise) error {
	for _, f := range []struct{ path, line string }{{ex.File, "//go:build exercise"}, {ex.Solution, "//go:build !exercise"}} {
		data, err := os.ReadFile(filepath.Join(lab.Dir, f.path))
		if err != nil {
			return err
		}
		if !strings.HasPrefix(string(data), f.line+"\n") {
			return fmt.Errorf("%s must start with %q", f.path, f.line)
		}
		if f.path == ex.File && !strings.Contains(string(data), "TODO(exercise "+ex.Name+")") {
			return fmt.Errorf("%s has no TODO(exercise %s)", f.path, ex.Name)
		}
	}
	return nil
}

// solutionOverlay builds a go -overlay file that replaces ex's stub by its
// solution (with the stub's build line), as if the learner had written it.
func solutionOverlay(lab *Lab, ex *Exercise) (string, func(), error) {
	sol, err := os.ReadFile(filepath.Join(lab.Dir, ex.Solution))
	if err != nil {
		return "", nil, err
	}
	dir, err := os.MkdirTemp("", "labs-overlay-")
	if err != nil {
		return "", nil, err
	}
	cleanup := func() { os.RemoveAll(dir) }
	body := strings.Replace(string(sol), "//go:build !exercise", "//go:build exercise", 1)
	replacement := filepath.Join(dir, filepath.Base(ex.File))
	if err := os.WriteFile(replacement, []byte(body), 0o644); err != nil {
		cleanup()
		return "", nil, err
	}
	data, _ := json.Marshal(map[string]map[string]string{"Replace": {filepath.Join(lab.Dir, ex.File): replacement}})
	overlay := filepath.Join(dir, "overlay.json")
	if err := os.WriteFile(overlay, data, 0o644); err != nil {
		cleanup()
		return "", nil, err
	}
	return overlay, cleanup, nil
}

// verifyFull runs all of the lab's tests in exercise mode (cluster tests
// included) and checks that every failing test is one the exercises list.
func verifyFull(ctx context.Context, u *ui, lab *Lab) int {
	u.start(fmt.Sprintf("lab %s: every test, exercise mode", lab.Num))
	failed, err := failingTests(ctx, lab, u)
	u.done()
	if err != nil {
		u.printf("  %s %v\n", u.red("FAIL"), err)
		return 1
	}
	var listed []TestRef
	for _, ex := range lab.Exercises {
		listed = append(listed, ex.Tests...)
	}
	listed = append(listed, lab.Combined...)
	problems := 0
	for _, f := range failed {
		ok := false
		for _, l := range listed {
			// A failing parent (TestScripts) is explained by a listed
			// subtest, a failing subtest by its listed parent.
			if l.Package == f.Package && (l.Run == f.Run || strings.HasPrefix(l.Run, f.Run+"/") || strings.HasPrefix(f.Run, l.Run+"/")) {
				ok = true
			}
		}
		if !ok {
			problems++
			u.printf("  %s %s fails in exercise mode but checks no exercise\n", u.red("FAIL"), f)
		}
	}
	if problems == 0 {
		u.printf("  ok   lab %s, every test in exercise mode: only the exercises' tests fail (%d)\n", lab.Num, len(failed))
	}
	return problems
}

func failedNames(res []TestResult) string {
	var names []string
	for _, r := range res {
		if r.Status != "pass" && r.Status != "skip" {
			names = append(names, r.Ref.String())
		}
	}
	return strings.Join(names, ", ")
}

func firstFailure(res []TestResult) string {
	for _, r := range res {
		if r.Status != "pass" && r.Status != "skip" {
			return r.Output
		}
	}
	return ""
}

func indent(s string) string {
	s = strings.TrimRight(s, "\n")
	if len(s) > 4000 {
		s = s[:2000] + "\n...\n" + s[len(s)-2000:]
	}
	return "       " + strings.ReplaceAll(s, "\n", "\n       ")
}
