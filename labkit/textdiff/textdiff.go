// Package textdiff is the line diff of the course's tools and tests: what
// `scripts/labs` shows (its solution command, its reading of a failure) and
// what a lab's test prints when got and want differ (labkit.Diff). It
// imports only the standard library, so learn/ can use it without linking
// labkit's Kubernetes clients.
package textdiff

import (
	"fmt"
	"strings"
)

// Lines returns a line diff of a and b: each line prefixed with "  "
// (both), "- " (only in a) or "+ " (only in b). It is the plain
// longest-common-subsequence diff: the files and outputs it compares are a
// few hundred lines at most.
func Lines(a, b string) []string {
	x := strings.Split(strings.TrimSuffix(a, "\n"), "\n")
	y := strings.Split(strings.TrimSuffix(b, "\n"), "\n")
	// lcs[i][j]: length of the LCS of x[i:] and y[j:].
	lcs := make([][]int, len(x)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(y)+1)
	}
	for i := len(x) - 1; i >= 0; i-- {
		for j := len(y) - 1; j >= 0; j-- {
			if x[i] == y[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out []string
	i, j := 0, 0
	for i < len(x) || j < len(y) {
		switch {
		case i < len(x) && j < len(y) && x[i] == y[j]:
			out = append(out, "  "+x[i])
			i++
			j++
		case i < len(x) && (j == len(y) || lcs[i+1][j] >= lcs[i][j+1]):
			out = append(out, "- "+x[i])
			i++
		default:
			out = append(out, "+ "+y[j])
			j++
		}
	}
	return out
}

// Hunks keeps only the changed lines of a diff and context lines around
// them; "  ..." stands for the lines left out between two hunks.
func Hunks(diff []string, context int) []string {
	keep := make([]bool, len(diff))
	for i, l := range diff {
		if !strings.HasPrefix(l, "  ") {
			for k := max(0, i-context); k <= min(len(diff)-1, i+context); k++ {
				keep[k] = true
			}
		}
	}
	var out []string
	for i, l := range diff {
		if keep[i] {
			if i > 0 && !keep[i-1] && len(out) > 0 {
				out = append(out, "  ...")
			}
			out = append(out, l)
		}
	}
	return out
}

// Show returns "" when want and got are equal, and otherwise the lines that
// differ, with two lines of context: "-" what was wanted, "+" what came
// instead, under a heading that gives the line of the first difference and
// marks it with "<- first difference". Within that line the first differing
// character is marked too, when the two lines are long enough for it to be
// hard to find.
func Show(want, got string) string {
	if want == got {
		return ""
	}
	diff := Lines(want, got)
	first, line := -1, 0 // index in diff, line number in want
	for i, l := range diff {
		if !strings.HasPrefix(l, "  ") {
			first = i
			break
		}
		line++
	}
	if first < 0 { // only a trailing newline differs
		return fmt.Sprintf("the only difference is the final newline: want %q, got %q\n", tail(want), tail(got))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "first difference at line %d (- want, + got):\n", line+1)
	marked := false
	for _, l := range Hunks(diff, 2) {
		b.WriteString(l[:2] + VisibleLine(l[2:]))
		if !marked && !strings.HasPrefix(l, "  ") {
			b.WriteString("   <- first difference")
			marked = true
		}
		b.WriteString("\n")
	}
	if wn, gn := strings.HasSuffix(want, "\n"), strings.HasSuffix(got, "\n"); wn != gn {
		fmt.Fprintf(&b, "and the final newline differs: want ends %q, got ends %q\n", tail(want), tail(got))
	}
	// The first "-" line and the "+" line that replaced it: mark where they part.
	if first+1 < len(diff) && strings.HasPrefix(diff[first], "- ") {
		for _, l := range diff[first+1:] {
			if strings.HasPrefix(l, "+ ") {
				if col := firstDifferentByte(diff[first][2:], l[2:]); col >= 20 {
					fmt.Fprintf(&b, "at character %d of line %d: want %q, got %q\n", col+1, line+1, snippet(diff[first][2:], col), snippet(l[2:], col))
				}
				break
			}
			if !strings.HasPrefix(l, "- ") {
				break
			}
		}
	}
	return b.String()
}

func firstDifferentByte(a, b string) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

// snippet is s from a few characters before col, at most 40 long.
func snippet(s string, col int) string {
	from := max(0, col-10)
	to := min(len(s), from+40)
	out := s[from:to]
	if from > 0 {
		out = "..." + out
	}
	if to < len(s) {
		out += "..."
	}
	return out
}

func tail(s string) string {
	if len(s) > 20 {
		return "..." + s[len(s)-20:]
	}
	return s
}

// VisibleLine returns one line of text with the white space a terminal does
// not show made visible: each space or tab at its end as "·" or "→", a tab
// inside it as "→", a carriage return as "\r" and any other control
// character in Go's \x form. A diff line that differs from another only by
// a trailing space then shows where.
func VisibleLine(l string) string {
	end := len(strings.TrimRight(l, " \t"))
	var b strings.Builder
	for i, r := range l {
		switch {
		case r == ' ' && i >= end:
			b.WriteString("·")
		case r == '\t':
			b.WriteString("→")
		case r == '\r':
			b.WriteString(`\r`)
		case r < ' ' || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// Quote returns s between backquotes with its white space made visible, for
// a message that shows a value a learner must compare with another: a
// newline as \n (a trailing one too, which %v would print as a line break
// no one sees), the rest as VisibleLine does. Unlike %q it leaves double
// quotes alone, so JSON stays readable.
func Quote(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = VisibleLine(l)
	}
	return "`" + strings.Join(lines, `\n`) + "`"
}
