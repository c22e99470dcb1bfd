package main

import "github.com/listwatch-labs/listwatch-labs/labkit/textdiff"

// lineDiff returns a line diff of a and b: each line prefixed with "  "
// (both), "- " (only in a) or "+ " (only in b). It is labkit/textdiff's,
// the diff the labs' tests print too.
func lineDiff(a, b string) []string { return textdiff.Lines(a, b) }

// hunks keeps only the changed lines of a diff and context lines around them.
func hunks(diff []string, context int) []string { return textdiff.Hunks(diff, context) }
