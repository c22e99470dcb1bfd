package labkit

// Exercise mode (go test -tags exercise): a failing check names the
// exercise it checks and the file to write, from the lab's exercises.json
// (read by internal/exercises).

import (
	"runtime/debug"
	"strings"
	"testing"

	"github.com/listwatch-labs/listwatch-labs/labkit/internal/exercises"
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
			ex, ok := exercises.Find(name)
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
	if names := exercises.Listed(t.Name()); len(names) > 0 {
		ChecksExercise(t, names...)
	}
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
