package main

import "strings"

// lineDiff returns a line diff of a and b: each line prefixed with "  "
// (both), "- " (only in a) or "+ " (only in b). It is the plain
// longest-common-subsequence diff: the files and outputs it compares are a
// few hundred lines at most.
func lineDiff(a, b string) []string {
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

// hunks keeps only the changed lines of a diff and context lines around them.
func hunks(diff []string, context int) []string {
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
