package labkit

// Exercise mode (go test -tags exercise): a failing check names the
// exercise it checks and the file to write, from the lab's exercises.json.

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
)

// ChecksExercise marks t as a check of the named exercises ("NN/NAME": lab
// NN's) of this lab (exercises.json at the lab's root). When t fails, its last
// lines say which exercise it checks and which file to edit: a learner in
// exercise mode (go test -tags exercise) sees what to write, not only what broke.
func ChecksExercise(t *testing.T, names ...string) {
	t.Helper()
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		for _, name := range names {
			ex, ok := findExercise(name)
			switch {
			case !ok:
				t.Logf("this test checks exercise %s (not found in exercises.json)", name)
			case exerciseMode():
				t.Logf("this test checks exercise %s: %s\n    write it in %s (the TODO there); README: %s\n    a hint: scripts/labs hint %s %s",
					ex.Name, ex.Summary, ex.File, ex.Readme, ex.Lab, ex.Name)
			default:
				t.Logf("this test checks exercise %s: %s (solution: %s)", ex.Name, ex.Summary, ex.Solution)
			}
		}
	})
}

// checksListedExercises marks t, a subtest of a scenario, with the exercises
// whose tests in exercises.json name it (TestScripts/relist_after_apiserver_restart
// in package "."), and with what a "combined" test needs. A subtest that
// exercises.json does not name checks no exercise: its failure is not blamed
// on one. So a lab's TestScripts does not call ChecksExercise itself: mark
// only a test that the exercise breaks.
func checksListedExercises(t *testing.T) {
	t.Helper()
	if names := listedExercises(t.Name()); len(names) > 0 {
		ChecksExercise(t, names...)
	}
}

// listedExercises returns the exercises that exercises.json lists test (a
// full test name, as t.Name() gives it) for, in the package of the working
// directory.
func listedExercises(test string) []string {
	dir, list, ok := readExercises()
	if !ok {
		return nil
	}
	cwd, _ := os.Getwd()
	rel, err := filepath.Rel(dir, cwd)
	if err != nil {
		return nil
	}
	pkg := "./" + filepath.ToSlash(rel)
	if rel == "." {
		pkg = "."
	}
	var names []string
	seen := map[string]bool{}
	add := func(name string) {
		if !seen[name] {
			seen[name] = true
			names = append(names, name)
		}
	}
	for _, ex := range list.Exercises {
		for _, ref := range ex.Tests {
			if ref.Package == pkg && ref.Run == test {
				add(ex.Name)
			}
		}
	}
	for _, c := range list.Combined {
		if c.Package == pkg && c.Run == test {
			for _, n := range c.Needs {
				add(n)
			}
		}
	}
	return names
}

// exerciseMode reports whether this test binary was built with -tags exercise,
// that is with the exercises' stubs instead of their solutions.
func exerciseMode() bool {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return false
	}
	for _, s := range info.Settings {
		if s.Key == "-tags" {
			for _, tag := range strings.Split(s.Value, ",") {
				if tag == "exercise" {
					return true
				}
			}
		}
	}
	return false
}

type testRef struct {
	Package string   `json:"package"`
	Run     string   `json:"run"`
	Needs   []string `json:"needs"`
}

type exerciseEntry struct {
	Lab      string
	Name     string    `json:"name"`
	Summary  string    `json:"summary"`
	File     string    `json:"file"`
	Solution string    `json:"solution"`
	Readme   string    `json:"readme"`
	Tests    []testRef `json:"tests"`
}

type exerciseList struct {
	Lab       string          `json:"lab"`
	Exercises []exerciseEntry `json:"exercises"`
	Combined  []testRef       `json:"combined"`
}

// readExercises reads exercises.json from the nearest directory at or above
// the test's working directory (its package's) that has one.
func readExercises() (string, exerciseList, bool) {
	dir, _ := os.Getwd()
	for {
		if list, ok := readExerciseFile(dir); ok {
			return dir, list, true
		}
		if _, err := os.Stat(filepath.Join(dir, "exercises.json")); err == nil {
			return "", exerciseList{}, false // there, but not valid
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", exerciseList{}, false
		}
		dir = parent
	}
}

func readExerciseFile(dir string) (exerciseList, bool) {
	var list exerciseList
	data, err := os.ReadFile(filepath.Join(dir, "exercises.json"))
	if err != nil || json.Unmarshal(data, &list) != nil {
		return exerciseList{}, false
	}
	return list, true
}

// findExercise finds name in this lab's exercises.json or, for "NN/NAME",
// in lab NN's (a directory NN-* beside this lab's).
func findExercise(name string) (exerciseEntry, bool) {
	dir, list, ok := readExercises()
	if !ok {
		return exerciseEntry{}, false
	}
	other := "" // another lab's directory, for "NN/NAME"
	if lab, short, found := strings.Cut(name, "/"); found {
		dirs, _ := filepath.Glob(filepath.Join(filepath.Dir(dir), lab+"-*"))
		if len(dirs) != 1 {
			return exerciseEntry{}, false
		}
		if list, ok = readExerciseFile(dirs[0]); !ok {
			return exerciseEntry{}, false
		}
		name, other = short, filepath.Base(dirs[0])
	}
	for _, ex := range list.Exercises {
		if ex.Name == name {
			ex.Lab = list.Lab
			if other != "" {
				ex.File = "../" + other + "/" + ex.File
				ex.Solution = "../" + other + "/" + ex.Solution
			}
			return ex, true
		}
	}
	return exerciseEntry{}, false
}
