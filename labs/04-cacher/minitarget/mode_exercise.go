//go:build exercise

// Which code the miniapiserver runs: built with -tags exercise, labs 03's
// and 04's exercise stubs (their *_exercise.go files) replace their
// solutions, in every module of the workspace at once. Its twin is
// mode_solution.go. Not an exercise: nothing here is for a learner to write.

package minitarget

// ExerciseMode is true when this binary was built with -tags exercise: the
// miniapiserver then runs labs 03's and 04's stubs, and fails where they do.
// Another lab's tests (lab 05's) check their own exercises on the real
// cluster in that mode, not on "mini", so that only their own exercises fail.
const ExerciseMode = true
