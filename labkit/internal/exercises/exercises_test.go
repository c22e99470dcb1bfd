package exercises

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestListed: a scenario's subtest is blamed on the exercises that
// exercises.json lists for it (its own tests, or a combined test's needs),
// in its own package only, and on no exercise when it is not listed; an
// exercise of another lab ("03/NAME") is found in that lab's file.
func TestListed(t *testing.T) {
	root := t.TempDir()
	write := func(rel, body string) {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("labs/02-a/exercises.json", `{"lab": "02", "exercises": [
	  {"name": "relist", "file": "w/relist_exercise.go", "solution": "w/relist.go",
	   "tests": [{"package": "./w", "run": "TestRelist"}, {"package": ".", "run": "TestScripts/relist", "cluster": true}]},
	  {"name": "resume", "file": "w/resume_exercise.go", "solution": "w/resume.go",
	   "tests": [{"package": "./w", "run": "TestResume"}]}],
	 "combined": [{"package": ".", "run": "TestScripts/both", "needs": ["relist", "03/flush"]}]}`)
	write("labs/03-b/exercises.json", `{"lab": "03", "exercises": [
	  {"name": "flush", "file": "s/flush_exercise.go", "solution": "s/flush.go", "tests": []}]}`)
	if err := os.MkdirAll(filepath.Join(root, "labs/02-a/w"), 0o755); err != nil {
		t.Fatal(err)
	}

	t.Chdir(filepath.Join(root, "labs/02-a"))
	for test, want := range map[string][]string{
		"TestScripts/relist":    {"relist"},
		"TestScripts/both":      {"relist", "03/flush"},
		"TestScripts/bookmarks": nil, // a script no exercise breaks
		"TestScripts":           nil, // the parent: not listed
		"TestRelist":            nil, // listed, but in ./w
	} {
		if got := Listed(test); !slices.Equal(got, want) {
			t.Errorf("in the lab's root, Listed(%q) = %q, want %q", test, got, want)
		}
	}
	ex, ok := Find("03/flush")
	if !ok || ex.Lab != "03" || ex.File != "../03-b/s/flush_exercise.go" || ex.Solution != "../03-b/s/flush.go" {
		t.Errorf("Find(03/flush) = %+v, %v; want lab 03's, its files relative to lab 02", ex, ok)
	}

	t.Chdir(filepath.Join(root, "labs/02-a/w"))
	if got := Listed("TestRelist"); !slices.Equal(got, []string{"relist"}) {
		t.Errorf("in ./w, Listed(TestRelist) = %q, want [relist]", got)
	}
	if got := Listed("TestScripts/relist"); got != nil {
		t.Errorf("in ./w, Listed(TestScripts/relist) = %q, want none: that test is package .'s", got)
	}
}
