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

// ChecksExercise marks t as a check of the named exercises of this lab
// (exercises.json at the lab's root). When t fails, its last lines say which
// exercise it checks and which file to edit: a learner in exercise mode
// (go test -tags exercise) sees what to write, not only what broke.
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

type exerciseEntry struct {
	Lab      string
	Name     string `json:"name"`
	Summary  string `json:"summary"`
	File     string `json:"file"`
	Solution string `json:"solution"`
	Readme   string `json:"readme"`
}

// findExercise reads exercises.json from the nearest directory at or above
// the test's working directory (its package's) that has one.
func findExercise(name string) (exerciseEntry, bool) {
	dir, _ := os.Getwd()
	for {
		data, err := os.ReadFile(filepath.Join(dir, "exercises.json"))
		if err == nil {
			var list struct {
				Lab       string          `json:"lab"`
				Exercises []exerciseEntry `json:"exercises"`
			}
			if json.Unmarshal(data, &list) != nil {
				return exerciseEntry{}, false
			}
			for _, ex := range list.Exercises {
				if ex.Name == name {
					ex.Lab = list.Lab
					return ex, true
				}
			}
			return exerciseEntry{}, false
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return exerciseEntry{}, false
		}
		dir = parent
	}
}
