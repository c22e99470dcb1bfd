package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// testTimeout bounds every go test run of the tool: a stub that makes a
// test hang ends as a failure with go test's own report, not as a wait.
const testTimeout = 3 * time.Minute

// exerciseState computes each exercise's state from a test run:
// done (every test passes), not started (failing, the stub's TODO still
// there), failing.
func exerciseState(lab *Lab, ex *Exercise, results []TestResult) string {
	var mine []TestResult
	for _, r := range results {
		for _, t := range ex.Tests {
			if r.Ref.Package == t.Package && r.Ref.Run == t.Run {
				mine = append(mine, r)
			}
		}
	}
	if passed(mine) {
		return "done"
	}
	if data, err := os.ReadFile(filepath.Join(lab.Dir, ex.File)); err == nil && strings.Contains(string(data), "TODO(exercise "+ex.Name+")") {
		return "not started"
	}
	return "failing"
}

// quickTests are the tests of exs that need no cluster.
func quickTests(exs []Exercise, withCluster bool) []TestRef {
	var refs []TestRef
	for _, ex := range exs {
		for _, t := range ex.Tests {
			if !t.Cluster || withCluster {
				refs = append(refs, t)
			}
		}
	}
	return refs
}

func cmdList(ctx context.Context, u *ui, root string, labs []*Lab, noRun bool) int {
	cache := statusCache{}
	readState(root, "status.json", &cache)
	u.printf("%s\n", u.bold("listwatch-labs: labs and exercises (state from each lab's tests in exercise mode)"))
	for _, lab := range labs {
		u.printf("\n%s  %s\n", u.bold("lab "+lab.Num), lab.Name)
		if len(lab.Exercises) == 0 {
			u.printf("    %s\n", u.dim("no exercises yet"))
			continue
		}
		hash, err := labHash(root, lab)
		if err != nil {
			fmt.Fprintln(u.err, "labs:", err)
			return 1
		}
		st, ok := cache[lab.Num]
		if (!ok || st.Hash != hash) && !noRun {
			u.start(fmt.Sprintf("lab %s: running the exercises' tests", lab.Num))
			results, err := runTests(ctx, lab, quickTests(lab.Exercises, false), testRun{exercise: true, timeout: testTimeout, ui: u})
			u.done()
			if ctx.Err() != nil {
				return interruptedCmd(u)
			}
			if err != nil {
				fmt.Fprintln(u.err, "labs:", err)
				return 1
			}
			st = labStatus{Hash: hash, Exercises: map[string]string{}}
			for i := range lab.Exercises {
				st.Exercises[lab.Exercises[i].Name] = exerciseState(lab, &lab.Exercises[i], results)
			}
			cache[lab.Num] = st
			if err := writeState(root, "status.json", cache); err != nil {
				fmt.Fprintln(u.err, "labs: cannot save the state:", err)
			}
		} else if st.Hash != hash {
			st = labStatus{}
		}
		for _, ex := range lab.Exercises {
			state := st.Exercises[ex.Name]
			mark := "?"
			switch state {
			case "done":
				mark = u.green("✓")
			case "failing":
				mark = u.red("✗")
			case "not started":
				mark = u.yellow("·")
			default:
				state = "unknown (not checked yet)"
			}
			u.printf("  %s %-28s %-12s %s\n", mark, ex.Name, state, u.dim(ex.Summary))
		}
	}
	u.printf("\nnext: %[1]s check NN [EXERCISE] (what fails and why), %[1]s watch NN (checks again on every save), %[1]s hint NN EXERCISE\n", u.cmd)
	return 0
}

func cmdCheck(ctx context.Context, u *ui, root string, lab *Lab, only *Exercise, solution, withCluster, verbose bool) int {
	_, code := checkOnce(ctx, u, root, lab, only, solution, withCluster, verbose)
	return code
}

// checkOnce runs and shows one check of lab's exercises (only's, when it is
// not nil) and returns which exercises pass, and check's exit code; pass is
// nil when the tests could not run (an interrupt: code 130, or an error).
func checkOnce(ctx context.Context, u *ui, root string, lab *Lab, only *Exercise, solution, withCluster, verbose bool) (pass map[string]bool, code int) {
	exs := lab.Exercises
	if only != nil {
		exs = []Exercise{*only}
	}
	if len(exs) == 0 {
		fmt.Fprintf(u.err, "labs: lab %s has no exercises yet\n", lab.Num)
		return nil, 2
	}
	mode := "exercise mode (go test -tags exercise: your code in the *_exercise.go stubs)"
	if solution {
		mode = "solution mode (go test without tags: the shipped solutions)"
	}
	refs := quickTests(exs, withCluster)
	u.start(fmt.Sprintf("lab %s: %d test(s), %s", lab.Num, len(refs), strings.SplitN(mode, " (", 2)[0]))
	results, err := runTests(ctx, lab, refs, testRun{exercise: !solution, timeout: testTimeout, ui: u})
	u.done()
	if ctx.Err() != nil {
		return nil, interruptedCmd(u)
	}
	if err != nil {
		fmt.Fprintln(u.err, "labs:", err)
		return nil, 1
	}
	pass = map[string]bool{}
	u.printf("%s  %s, %s\n", u.bold("lab "+lab.Num), lab.Name, mode)
	done := 0
	for i := range exs {
		ex := &exs[i]
		var mine []TestResult
		for _, r := range results {
			for _, t := range ex.Tests {
				if r.Ref.Package == t.Package && r.Ref.Run == t.Run {
					mine = append(mine, r)
				}
			}
		}
		rel := func(p string) string { return u.path(filepath.Join(lab.Dir, p)) }
		if passed(mine) {
			pass[ex.Name] = true
			done++
			u.printf("\n%s %s: %s\n", u.green("✓"), u.bold(ex.Name), ex.Summary)
			for _, r := range mine {
				u.printf("    %s %s\n", u.green(r.Status), r.Ref)
			}
			continue
		}
		u.printf("\n%s %s: %s\n", u.red("✗"), u.bold(ex.Name), ex.Summary)
		u.printf("    file:   %s\n    README: %s\n", rel(ex.File), rel(ex.Readme))
		// The first failing test in full (briefly, without --verbose); the
		// others by name, or with --verbose each with go test's output as it is.
		var others []string
		first := true
		for _, r := range mine {
			switch {
			case r.Status == "pass" || r.Status == "skip":
				u.printf("    %s %s\n", u.green(r.Status), r.Ref)
			case verbose:
				u.printf("    %s %s\n", u.red(r.Status), r.Ref)
				for _, l := range strings.Split(strings.TrimRight(r.Output, "\n"), "\n") {
					u.printf("      %s\n", l)
				}
			case first:
				first = false
				u.printf("    %s %s\n", u.red(r.Status), r.Ref)
				lines, cut := briefOutput(r.Output)
				explain(u, lines)
				if cut > 0 {
					u.printf("      %s\n", u.dim(fmt.Sprintf("... (%d more lines or parts of lines: "+u.cmd+" check %s %s --verbose)", cut, lab.Num, ex.Name)))
				}
			default:
				others = append(others, r.Ref.String())
			}
		}
		if len(others) > 0 {
			u.printf("    %s %s %s\n", u.red("also "+map[bool]string{true: "fails", false: "fail"}[len(others) == 1]+":"), strings.Join(others, ", "), u.dim("(--verbose shows why)"))
		}
		if solution {
			u.printf("    %s the solution fails this test: the lab itself is broken, not your exercise\n", u.yellow("note:"))
		} else {
			u.printf("    %s write the TODO in %s, then: "+u.cmd+" check %s %s\n", u.bold("next:"), rel(ex.File), lab.Num, ex.Name)
			u.printf("          stuck? "+u.cmd+" hint %s %s\n", lab.Num, ex.Name)
		}
	}
	u.printf("\n%d of %d exercise(s) pass.\n", done, len(exs))
	if !withCluster {
		for _, ex := range exs {
			var slow []string
			for _, t := range ex.Tests {
				if t.Cluster {
					slow = append(slow, t.String())
				}
			}
			switch {
			case len(slow) == 1:
				u.printf("%s %s also checks %s; run it with %s check %s %s --cluster (slow while the exercise fails)\n", u.dim("note:"), slow[0], ex.Name, u.cmd, lab.Num, ex.Name)
			case len(slow) > 1:
				names := strings.Join(slow, ", ")
				if len(slow) > 2 {
					names = fmt.Sprintf("%s, %s and %d more", slow[0], slow[1], len(slow)-2)
				}
				u.printf("%s %d slower tests (they start a server) also check %s (%s); run them with %s check %s %s --cluster (slow while the exercise fails)\n", u.dim("note:"), len(slow), ex.Name, names, u.cmd, lab.Num, ex.Name)
			}
		}
	}
	if done != len(exs) {
		return pass, 1
	}
	return pass, 0
}

func colourDiff(u *ui, l string) string {
	t := strings.TrimSpace(l)
	switch {
	case strings.HasPrefix(t, "+ ") || (strings.HasPrefix(t, "+") && !strings.HasPrefix(t, "+++")):
		return u.green(l)
	case strings.HasPrefix(t, "- ") || (strings.HasPrefix(t, "-") && !strings.HasPrefix(t, "---")):
		return u.red(l)
	case strings.Contains(t, "this test checks exercise"):
		return u.yellow(l)
	}
	return l
}

func cmdHint(u *ui, root string, lab *Lab, ex *Exercise) int {
	if len(ex.Hints) == 0 {
		u.printf("no hints for %s; its README section: %s\n", ex.Name, ex.Readme)
		return 0
	}
	shown := hintsShown{}
	readState(root, "hints.json", &shown)
	key := lab.Num + "/" + ex.Name
	n := min(shown[key], len(ex.Hints)-1)
	u.printf("%s %s, hint %d of %d:\n\n  %s\n\n", u.bold("lab "+lab.Num), ex.Name, n+1, len(ex.Hints), ex.Hints[n])
	if n+1 < len(ex.Hints) {
		u.printf("("+u.cmd+" hint %s %s again for the next one)\n", lab.Num, ex.Name)
	} else {
		u.printf("(that was the last hint; "+u.cmd+" solution %s %s shows the whole answer)\n", lab.Num, ex.Name)
	}
	shown[key] = n + 1
	if err := writeState(root, "hints.json", shown); err != nil {
		fmt.Fprintln(u.err, "labs: cannot save the state:", err)
	}
	return 0
}

// cmdReset writes the stub back as git has it at HEAD. When the file differs
// from that (the learner wrote something), it asks first, or with no
// terminal to ask on refuses unless yes; and it keeps the learner's file
// under .cluster/learn/backup/ before writing over it.
func cmdReset(u *ui, root string, stdin io.Reader, interactive, yes bool, lab *Lab, ex *Exercise) int {
	path := filepath.Join(lab.Dir, ex.File)
	inRepo, _ := filepath.Rel(root, path)
	rel := u.path(path)
	stub, err := exec.Command("git", "-C", root, "show", "HEAD:"+filepath.ToSlash(inRepo)).Output()
	if err != nil {
		fmt.Fprintf(u.err, "labs: cannot read the stub %s from git (HEAD): %v\n", rel, err)
		return 1
	}
	mine, err := os.ReadFile(path)
	switch {
	case err == nil && string(mine) == string(stub):
		u.printf("%s is already as committed (HEAD); nothing to reset\n", rel)
		return 0
	case err != nil && !os.IsNotExist(err):
		fmt.Fprintln(u.err, "labs:", err)
		return 1
	}
	var backup string
	if err == nil {
		if !yes && !interactive {
			fmt.Fprintf(u.err, "labs: %s differs from the committed stub; reset would replace your code (a copy is kept): pass --yes to reset it\n", rel)
			return 1
		}
		if !yes {
			u.printf("%s differs from the committed stub (your code). Replace it? A copy goes to %s. [y/N] ", rel, u.path(backupDir(root)))
			answer, _ := bufio.NewReader(stdin).ReadString('\n')
			if a := strings.ToLower(strings.TrimSpace(answer)); a != "y" && a != "yes" {
				u.printf("not reset.\n")
				return 1
			}
		}
		if backup, err = backupFile(root, lab, path, mine); err != nil {
			fmt.Fprintf(u.err, "labs: cannot keep a copy of %s, so it is left as it is: %v\n", rel, err)
			return 1
		}
	}
	if err := os.WriteFile(path, stub, 0o644); err != nil {
		fmt.Fprintln(u.err, "labs:", err)
		return 1
	}
	if backup != "" {
		u.printf("your version of %s is in %s\n", rel, u.path(backup))
	}
	u.printf("restored %s as committed (HEAD); next: "+u.cmd+" check %s %s\n", rel, lab.Num, ex.Name)
	return 0
}

// backupDir holds the learner's files that reset replaced.
func backupDir(root string) string { return filepath.Join(stateDir(root), "backup") }

// backupFile writes data, the learner's version of path, to the backup
// directory as lab<NN>-<file>.<UTC time>.go (still a .go file for an editor;
// outside every module, so it is never compiled), and returns its path.
func backupFile(root string, lab *Lab, path string, data []byte) (string, error) {
	dir := backupDir(root)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	name := strings.TrimSuffix(filepath.Base(path), ".go")
	stamp := time.Now().UTC().Format("20060102T150405Z")
	for i := 0; ; i++ {
		file := filepath.Join(dir, fmt.Sprintf("lab%s-%s.%s.go", lab.Num, name, stamp))
		if i > 0 {
			file = filepath.Join(dir, fmt.Sprintf("lab%s-%s.%s-%d.go", lab.Num, name, stamp, i))
		}
		f, err := os.OpenFile(file, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if os.IsExist(err) {
			continue // two resets in one second: keep both
		}
		if err != nil {
			return "", err
		}
		if _, err := f.Write(data); err != nil {
			f.Close()
			return "", err
		}
		return file, f.Close()
	}
}

func cmdSolution(u *ui, stdin io.Reader, lab *Lab, ex *Exercise, yes bool) int {
	if !yes {
		u.printf("This shows the solution of %s. Try the hints first ("+u.cmd+" hint %s %s). Show it? [y/N] ", ex.Name, lab.Num, ex.Name)
		answer, _ := bufio.NewReader(stdin).ReadString('\n')
		if a := strings.ToLower(strings.TrimSpace(answer)); a != "y" && a != "yes" {
			u.printf("not shown.\n")
			return 1
		}
	}
	mine, err := os.ReadFile(filepath.Join(lab.Dir, ex.File))
	if err != nil {
		fmt.Fprintln(u.err, "labs:", err)
		return 1
	}
	sol, err := os.ReadFile(filepath.Join(lab.Dir, ex.Solution))
	if err != nil {
		fmt.Fprintln(u.err, "labs:", err)
		return 1
	}
	u.printf("--- %s (yours)\n+++ %s (the solution)\n", ex.File, ex.Solution)
	for _, d := range hunks(lineDiff(string(mine), string(sol)), 3) {
		u.printf("%s\n", colourDiff(u, d))
	}
	u.printf("\nTo use it: copy the function body into %s (keep its //go:build exercise line), then "+u.cmd+" check %s %s\n", u.path(filepath.Join(lab.Dir, ex.File)), lab.Num, ex.Name)
	return 0
}
