package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"
)

// TestResult is what one go test run said about one TestRef.
type TestResult struct {
	Ref    TestRef
	Status string // pass, fail, skip, or "did not run" (a build error, a timeout)
	Output string // the test's own output (and its subtests'), or the package's
}

// testRun says how to run a lab's tests.
type testRun struct {
	exercise bool          // -tags exercise
	overlay  string        // a -overlay file (the verifier's "solution written" mode)
	timeout  time.Duration // go test -timeout; a hang ends as a failure, not a wait
	ui       *ui
}

// modulePath reads the module line of dir/go.mod.
func modulePath(dir string) (string, error) {
	data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "module" {
			return f[1], nil
		}
	}
	return "", fmt.Errorf("%s/go.mod has no module line", dir)
}

// runPattern turns "TestScripts/lab/too-old" into -run's per-level anchored form.
func runPattern(run string) string {
	parts := strings.Split(run, "/")
	for i, p := range parts {
		parts[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	return strings.Join(parts, "/")
}

// testGroup is one go test run of runTests: a -run pattern and the
// packages it runs in.
type testGroup struct {
	pattern string
	pkgs    []string
}

// testGroups groups refs into as few go test runs as -run allows: every
// top-level test in one (all their packages at once), and the subtests of
// each parent in one per package, their last names joined. -run matches
// level by level, so only subtests with the same whole parent path can share
// a pattern: '^A$/^(x|y)$' runs A/x and A/y and nothing else, while A/x and
// B/y in one pattern would run A/y and B/x too.
func testGroups(refs []TestRef) []testGroup {
	type group struct {
		prefix string   // the parent's levels of -run and a "/"; "" for top-level tests
		names  []string // the last level's names, quoted
		pkgs   []string
	}
	top := &group{}
	groups := []*group{top}
	byParent := map[string]*group{} // package + " " + prefix
	for _, r := range refs {
		g, name := top, r.Run
		if i := strings.LastIndex(r.Run, "/"); i >= 0 {
			prefix := runPattern(r.Run[:i]) + "/"
			name = r.Run[i+1:]
			if g = byParent[r.Package+" "+prefix]; g == nil {
				g = &group{prefix: prefix}
				byParent[r.Package+" "+prefix] = g
				groups = append(groups, g)
			}
		}
		if q := regexp.QuoteMeta(name); !slices.Contains(g.names, q) {
			g.names = append(g.names, q)
		}
		if !slices.Contains(g.pkgs, r.Package) {
			g.pkgs = append(g.pkgs, r.Package)
		}
	}
	sort.Strings(top.pkgs)
	var out []testGroup
	for _, g := range groups {
		if len(g.names) > 0 {
			out = append(out, testGroup{g.prefix + "^(" + strings.Join(g.names, "|") + ")$", g.pkgs})
		}
	}
	return out
}

// runTests runs refs in lab (testGroups says in how many go test runs) and
// returns their results in the order of refs.
func runTests(ctx context.Context, lab *Lab, refs []TestRef, run testRun) ([]TestResult, error) {
	mod, err := modulePath(lab.Dir)
	if err != nil {
		return nil, err
	}
	importPath := func(pkg string) string {
		pkg = strings.TrimPrefix(strings.TrimPrefix(pkg, "."), "/")
		if pkg == "" {
			return mod
		}
		return mod + "/" + pkg
	}
	events := map[string]*TestResult{} // importPath + " " + test
	pkgOutput := map[string]*strings.Builder{}
	for _, g := range testGroups(refs) {
		args := []string{"test", "-json", "-count=1", "-run", g.pattern}
		if run.exercise {
			args = append(args, "-tags", "exercise")
		}
		if run.overlay != "" {
			args = append(args, "-overlay", run.overlay)
		}
		if run.timeout > 0 {
			args = append(args, "-timeout", run.timeout.String())
		}
		args = append(args, g.pkgs...)
		cmd := groupCommand(ctx, "go", args...)
		cmd.Dir = lab.Dir
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			return nil, err
		}
		if err := cmd.Start(); err != nil {
			return nil, fmt.Errorf("go test: %v", err)
		}
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			var ev struct {
				Action     string
				Package    string
				ImportPath string
				Test       string
				Output     string
			}
			line := sc.Bytes()
			if json.Unmarshal(line, &ev) != nil || ev.Action == "" {
				continue
			}
			pkg := ev.Package
			if pkg == "" {
				pkg = strings.Fields(ev.ImportPath + " ")[0]
			}
			if pkgOutput[pkg] == nil {
				pkgOutput[pkg] = &strings.Builder{}
			}
			if ev.Test == "" {
				if ev.Action == "output" || ev.Action == "build-output" {
					pkgOutput[pkg].WriteString(ev.Output)
				}
				continue
			}
			if run.ui != nil {
				run.ui.progress(ev.Test)
			}
			// Output and results are kept for the test and for every parent of it.
			for name := ev.Test; ; {
				key := pkg + " " + name
				res := events[key]
				if res == nil {
					res = &TestResult{}
					events[key] = res
				}
				if ev.Action == "output" {
					res.Output += ev.Output
				}
				if name == ev.Test && (ev.Action == "pass" || ev.Action == "fail" || ev.Action == "skip") {
					res.Status = ev.Action
				}
				i := strings.LastIndex(name, "/")
				if i < 0 {
					break
				}
				name = name[:i]
			}
		}
		werr := cmd.Wait()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if werr != nil && stderr.Len() > 0 {
			for _, p := range g.pkgs {
				ip := importPath(p)
				if pkgOutput[ip] == nil {
					pkgOutput[ip] = &strings.Builder{}
				}
				pkgOutput[ip].WriteString(stderr.String())
			}
		}
	}
	results := make([]TestResult, len(refs))
	for i, r := range refs {
		ip := importPath(r.Package)
		results[i] = TestResult{Ref: r, Status: "did not run"}
		res := events[ip+" "+r.Run]
		if res != nil && res.Status != "" {
			results[i].Status = res.Status
			results[i].Output = res.Output
			continue
		}
		// No result: the package did not build, or its binary died (a
		// panic, go test's -timeout). Show what the test and the package said.
		if res != nil {
			results[i].Output = res.Output
		}
		if b := pkgOutput[ip]; b != nil {
			results[i].Output += b.String()
		}
	}
	return results, nil
}

// passed reports whether every result passed (a skip counts: the test chose not to run here).
func passed(results []TestResult) bool {
	for _, r := range results {
		if r.Status != "pass" && r.Status != "skip" {
			return false
		}
	}
	return true
}

// runPackage runs every test of one package of the lab in exercise mode,
// except those skip matches (go test -skip), and returns a result for each
// test and subtest that ran. A package that fails with no failing test did
// not build, or its binary died (a panic, the timeout): that is an error.
func runPackage(ctx context.Context, lab *Lab, pkg, skip string, u *ui) ([]TestResult, error) {
	args := []string{"test", "-json", "-count=1", "-tags", "exercise", "-timeout", testTimeout.String()}
	if skip != "" {
		args = append(args, "-skip", skip)
	}
	cmd := groupCommand(ctx, "go", append(args, pkg)...)
	cmd.Dir = lab.Dir
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	var order []string
	byName := map[string]*TestResult{}
	var pkgOut strings.Builder
	pkgFailed := false
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var ev struct{ Action, Test, Output string }
		if json.Unmarshal(sc.Bytes(), &ev) != nil {
			continue
		}
		if ev.Test == "" {
			if ev.Action == "output" || ev.Action == "build-output" {
				pkgOut.WriteString(ev.Output)
			}
			pkgFailed = pkgFailed || ev.Action == "fail"
			continue
		}
		u.progress(ev.Test)
		r := byName[ev.Test]
		if r == nil {
			r = &TestResult{Ref: TestRef{Package: pkg, Run: ev.Test}, Status: "did not run"}
			byName[ev.Test] = r
			order = append(order, ev.Test)
		}
		switch ev.Action {
		case "output":
			r.Output += ev.Output
		case "pass", "fail", "skip":
			r.Status = ev.Action
		}
	}
	werr := cmd.Wait()
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	results := make([]TestResult, 0, len(order))
	anyFailed := false
	for _, name := range order {
		results = append(results, *byName[name])
		anyFailed = anyFailed || byName[name].Status == "fail"
	}
	if (pkgFailed || werr != nil) && !anyFailed {
		return results, fmt.Errorf("failed in exercise mode without a failing test (build error, panic or timeout):\n%s", indent(pkgOut.String()+stderr.String()))
	}
	return results, nil
}
