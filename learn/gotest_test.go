package main

import (
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestTestGroups: check and verify run the tests they need in as few go
// test runs as -run allows, and each run selects the subtests asked for and
// no others: every top-level test in one run, the subtests of one parent in
// one run per package (A/x and B/y in one pattern would run A/y and B/x too).
func TestTestGroups(t *testing.T) {
	refs := []TestRef{
		{Package: "./a", Run: "TestOne"},
		{Package: ".", Run: "TestTwo"},
		{Package: ".", Run: "TestScripts/lab/too-old"},
		{Package: ".", Run: "TestOnMini/kubectl-watch"},
		{Package: ".", Run: "TestScripts/lab/selectors"},
		{Package: ".", Run: "TestScripts/real/too-old"},
		{Package: "./a", Run: "TestScripts/lab/too-old"},
		{Package: ".", Run: "TestOnMini/a.b+c"}, // quoted, not a regexp
	}
	var got []string
	for _, g := range testGroups(refs) {
		got = append(got, g.pattern+" "+strings.Join(g.pkgs, ","))
	}
	want := []string{
		"^(TestOne|TestTwo)$ .,./a",
		"^TestScripts$/^lab$/^(too-old|selectors)$ .",
		"^TestOnMini$/^(kubectl-watch|a\\.b\\+c)$ .",
		"^TestScripts$/^real$/^(too-old)$ .",
		"^TestScripts$/^lab$/^(too-old)$ ./a",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("groups:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// What each subtest run selects, by go test's rule (each level of the
	// pattern matches the same level of the name), among the subtests that
	// exist: the ones asked for, and their siblings that were not.
	exist := []TestRef{
		{Package: ".", Run: "TestScripts/lab/too-old"}, {Package: ".", Run: "TestScripts/lab/selectors"},
		{Package: ".", Run: "TestScripts/lab/informer"}, {Package: ".", Run: "TestScripts/real/too-old"},
		{Package: ".", Run: "TestScripts/real/selectors"}, {Package: ".", Run: "TestOnMini/kubectl-watch"},
		{Package: ".", Run: "TestOnMini/too-old"}, {Package: ".", Run: "TestOnMini/a.b+c"}, {Package: ".", Run: "TestOnMini/aXb+c"},
		{Package: "./a", Run: "TestScripts/lab/too-old"}, {Package: "./a", Run: "TestScripts/lab/selectors"},
	}
	for _, g := range testGroups(refs)[1:] {
		for _, e := range exist {
			if !slices.Contains(g.pkgs, e.Package) || !selects(g.pattern, e.Run) {
				continue
			}
			if !slices.ContainsFunc(refs, func(r TestRef) bool { return r.Package == e.Package && r.Run == e.Run }) {
				t.Errorf("-run %q in %s also runs %s, which was not asked for", g.pattern, e.Package, e.Run)
			}
		}
	}
	for _, r := range refs {
		n := 0
		for _, g := range testGroups(refs) {
			if slices.Contains(g.pkgs, r.Package) && selects(g.pattern, r.Run) {
				n++
			}
		}
		if n != 1 {
			t.Errorf("%s in %s is selected by %d runs, want 1", r.Run, r.Package, n)
		}
	}
}

// selects reports whether go test -run pattern runs the test or subtest
// name to its end: as testing does, the pattern is split at the slashes
// outside brackets and parentheses, and level i must match level i.
func selects(pattern, name string) bool {
	var levels []string
	depth, start := 0, 0
	for i, c := range pattern {
		switch c {
		case '(', '[':
			depth++
		case ')', ']':
			depth--
		case '/':
			if depth == 0 {
				levels = append(levels, pattern[start:i])
				start = i + 1
			}
		}
	}
	levels = append(levels, pattern[start:])
	parts := strings.Split(name, "/")
	if len(parts) != len(levels) {
		return false
	}
	for i, p := range parts {
		if !regexp.MustCompile(levels[i]).MatchString(p) {
			return false
		}
	}
	return true
}
