package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
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
		vet := groupCommand(ctx, "go", "vet", "-tags", "exercise", "./...")
		vet.Dir = lab.Dir
		out, err := vet.CombinedOutput()
		u.done()
		if ctx.Err() != nil {
			return interruptedCmd(u)
		}
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
		if ctx.Err() != nil {
			return interruptedCmd(u)
		}
		if err != nil {
			fail("%v", err)
			continue
		}
		u.start(fmt.Sprintf("lab %s: the exercises' tests, solution mode", lab.Num))
		solved, err := runTests(ctx, lab, refsAll, testRun{timeout: testTimeout, ui: u})
		u.done()
		if ctx.Err() != nil {
			return interruptedCmd(u)
		}
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
			if ctx.Err() != nil {
				return interruptedCmd(u)
			}
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
			if ctx.Err() != nil {
				return interruptedCmd(u)
			}
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

// verifyFull proves the other half of the exercise contract: in exercise
// mode every test that checks no exercise still passes, so `go test -tags
// exercise ./...` fails only in the exercises' tests (step 1 showed those fail).
//
// It does not run the whole lab again. A test binary that contains no
// tag-dependent file (no file with an exercise build line, in the package or
// any package it imports) behaves the same in both modes: the one difference
// is the -tags setting in its build info, which only labkit's exerciseMode
// reads, to word a failing test's log. test.sh's modules lane runs it in
// solution mode; only the packages whose binary the tag changes run here.
// In those, every test runs except the ones exercises.json
// lists (an exercise's tests, or "combined" tests that need several), which
// -skip leaves out: they fail as shipped, and waiting for each to fail would
// take minutes of deadlines. A test that fails here, or a package that does
// not build or dies, is a problem: it breaks in exercise mode yet names no
// exercise.
func verifyFull(ctx context.Context, u *ui, lab *Lab) int {
	u.start(fmt.Sprintf("lab %s: which test binaries the exercise tag changes", lab.Num))
	affected, same, err := tagAffectedPackages(ctx, lab)
	u.done()
	if ctx.Err() != nil {
		return 0 // cmdVerify says it was interrupted
	}
	if err != nil {
		u.printf("  %s %v\n", u.red("FAIL"), err)
		return 1
	}
	if len(same) > 0 {
		u.printf("  ok   lab %s, built from the same files in both modes (the solution-mode run covers them): %s\n", lab.Num, strings.Join(same, " "))
	}
	var listed []TestRef
	for _, ex := range lab.Exercises {
		listed = append(listed, ex.Tests...)
	}
	listed = append(listed, lab.Combined...)
	problems := 0
	for _, pkg := range affected {
		var skip []string
		for _, l := range listed {
			if l.Package == pkg {
				skip = append(skip, runPattern(l.Run))
			}
		}
		u.start(fmt.Sprintf("lab %s %s: every other test, exercise mode", lab.Num, pkg))
		res, err := runPackage(ctx, lab, pkg, strings.Join(skip, "|"), u)
		u.done()
		if ctx.Err() != nil {
			return problems // cmdVerify says it was interrupted
		}
		if err != nil {
			problems++
			u.printf("  %s %s: %v\n", u.red("FAIL"), pkg, err)
			continue
		}
		bad := 0
		for _, r := range res {
			if r.Status == "fail" {
				bad++
				u.printf("  %s %s fails in exercise mode but checks no exercise (add it to exercises.json, or keep it from the stub)\n%s\n", u.red("FAIL"), r.Ref, indent(r.Output))
			}
		}
		problems += bad
		if bad == 0 {
			u.printf("  ok   lab %s %s, exercise mode: %d other tests pass (%d listed for exercises left out)\n", lab.Num, pkg, countPassed(res), len(skip))
		}
	}
	return problems
}

func countPassed(res []TestResult) int {
	n := 0
	for _, r := range res {
		if r.Status == "pass" && !strings.Contains(r.Ref.Run, "/") {
			n++
		}
	}
	return n
}

// tagAffectedPackages splits the lab's packages (as ./rel paths) into those
// whose test binary differs with -tags exercise and those it leaves alone.
// A package is tag-dependent when one of its .go files has an exercise build
// line (//go:build exercise or !exercise); a test binary differs when it, or
// any package it imports in either mode, is tag-dependent. Other labs'
// stubs count: lab 04's binaries contain lab 03's WatchServer.
func tagAffectedPackages(ctx context.Context, lab *Lab) (affected, same []string, err error) {
	mod, err := modulePath(lab.Dir)
	if err != nil {
		return nil, nil, err
	}
	type pkgInfo struct {
		ImportPath string
		Dir        string
		Module     *struct{ Main bool }
		Deps       []string
		ForTest    string
	}
	deps := map[string]map[string]bool{} // lab package -> every package its test binary holds
	dirs := map[string]string{}
	for _, tags := range [][]string{nil, {"-tags", "exercise"}} {
		args := append([]string{"list", "-e", "-json=ImportPath,Dir,Module,Deps,ForTest", "-test", "-deps"}, tags...)
		cmd := groupCommand(ctx, "go", append(args, "./...")...)
		cmd.Dir = lab.Dir
		out, err := cmd.Output()
		if err != nil {
			return nil, nil, fmt.Errorf("go list %s: %v", strings.Join(tags, " "), err)
		}
		dec := json.NewDecoder(strings.NewReader(string(out)))
		for dec.More() {
			var p pkgInfo
			if err := dec.Decode(&p); err != nil {
				return nil, nil, err
			}
			base := strings.Fields(p.ImportPath)[0] // "x [x.test]" is x compiled for x's test
			if p.Module != nil && p.Module.Main {
				dirs[base] = p.Dir
			}
			// The test main "x.test" lists everything x's test binary links.
			if !strings.HasSuffix(base, ".test") {
				continue
			}
			owner := strings.TrimSuffix(base, ".test")
			if deps[owner] == nil {
				deps[owner] = map[string]bool{}
			}
			for _, d := range p.Deps {
				deps[owner][strings.Fields(d)[0]] = true
			}
			deps[owner][owner] = true
		}
	}
	tagged := map[string]bool{}
	for pkg, dir := range dirs {
		if tagged[pkg], err = hasExerciseBuildLine(dir); err != nil {
			return nil, nil, err
		}
	}
	list := groupCommand(ctx, "go", "list", "./...")
	list.Dir = lab.Dir
	out, err := list.Output()
	if err != nil {
		return nil, nil, fmt.Errorf("go list ./...: %v", err)
	}
	for _, pkg := range strings.Fields(string(out)) {
		rel := "." + strings.TrimPrefix(pkg, mod)
		if deps[pkg] == nil {
			continue // no test files: nothing to run in either mode
		}
		changed := false
		for d := range deps[pkg] {
			changed = changed || tagged[d]
		}
		if changed {
			affected = append(affected, rel)
		} else {
			same = append(same, rel)
		}
	}
	return affected, same, nil
}

// hasExerciseBuildLine reports whether a .go file in dir has a build
// constraint naming the exercise tag.
func hasExerciseBuildLine(dir string) (bool, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return false, err
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return false, err
		}
		for _, line := range strings.SplitN(string(data), "\n", 20) {
			if strings.HasPrefix(line, "//go:build") && strings.Contains(line, "exercise") {
				return true, nil
			}
			if strings.HasPrefix(line, "package ") {
				break
			}
		}
	}
	return false, nil
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
