package labkit

import "github.com/listwatch-labs/listwatch-labs/labkit/textdiff"

// Diff is what a test prints when got is not want: "" when they are equal;
// otherwise the lines that differ ("-" want, "+" got) with a little context,
// the line of the first difference named and marked. Tests of the
// exercises use it so that `scripts/labs check` shows where the output
// goes wrong, not two listings to compare by eye.
func Diff(want, got string) string { return textdiff.Show(want, got) }

// Quote returns s between backquotes with its white space made visible (a
// newline as \n, a trailing space as ·): for a message that shows a want
// and a got a learner must tell apart.
func Quote(s string) string { return textdiff.Quote(s) }
