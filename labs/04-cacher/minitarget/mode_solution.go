//go:build !exercise

// Which code the miniapiserver runs: without -tags exercise, labs 03's and
// 04's solutions. Its twin is mode_exercise.go.

package minitarget

// ExerciseMode is false: the miniapiserver runs the labs' solutions (see
// mode_exercise.go).
const ExerciseMode = false
