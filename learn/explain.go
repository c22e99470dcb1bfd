package main

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/listwatch-labs/listwatch-labs/labkit/textdiff"
)

// How `labs check` shows a failing test: the first failing test of an
// exercise, in at most briefLines lines, is what a learner needs; the rest
// (the other failing tests, a goroutine dump, a differential test's long
// scenario list) is one --verbose away.

// briefLines bounds the lines of a failing test's output that check shows
// without --verbose; briefWidth the characters of one line.
const (
	briefLines = 12
	briefWidth = 240
)

var (
	noiseLine = regexp.MustCompile(`^\s*(=== (RUN|PAUSE|CONT|NAME)|--- (FAIL|PASS|SKIP):|FAIL$|PASS$|ok\s)`)
	gotLine   = regexp.MustCompile(`^\s*(\S+\.go:\d+: )?(got|body)\b:?\s*(.*)$`)
	wantLine  = regexp.MustCompile(`^\s*(want|expected)\b:?\s*(.*)$`)
	// labkit.ChecksExercise's note: the exercise and its hint command, which
	// check prints under every failing exercise anyway.
	exerciseNote = regexp.MustCompile(`^\s*\S+\.go:\d+: this test checks exercise `)
	// goleak's report; its dump ends with a line that is "]".
	goroutineDump = regexp.MustCompile(`found unexpected goroutines:`)
)

// indentOf is the number of leading spaces and tabs of l.
func indentOf(l string) int { return len(l) - len(strings.TrimLeft(l, " \t")) }

// briefOutput is a failing test's output as check shows it: go test's
// framing lines dropped, and so are the exercise note and goroutine dumps;
// a line longer than briefWidth keeps its start and its end, and at most
// briefLines lines are kept. It returns the
// lines, and how many it left out (lines, or parts of lines).
func briefOutput(output string) (lines []string, cut int) {
	raw := strings.Split(strings.TrimRight(output, "\n"), "\n")
	for i := 0; i < len(raw); i++ {
		l := raw[i]
		if noiseLine.MatchString(l) || strings.TrimSpace(l) == "" {
			continue
		}
		switch {
		case exerciseNote.MatchString(l):
			// Its continuation lines are indented deeper.
			for i+1 < len(raw) && indentOf(raw[i+1]) > indentOf(l) {
				i++
			}
			continue
		case goroutineDump.MatchString(l):
			j := i + 1
			for j < len(raw) && strings.TrimSpace(raw[j]) != "]" {
				j++
			}
			if j == len(raw) { // no end seen: drop its indented lines only
				for j = i + 1; j < len(raw) && indentOf(raw[j]) > indentOf(l); j++ {
				}
				j--
			}
			l = l[:strings.Index(l, "found unexpected goroutines:")] + "goroutines left running after the test (a leak): --verbose shows their stacks"
			cut += j - i
			i = j
		}
		if r := []rune(l); len(r) > briefWidth {
			// Its start and its end: the end of a quoted value is where a
			// stray newline or space shows.
			head, tail := briefWidth*3/4, briefWidth/4
			l = string(r[:head]) + fmt.Sprintf(" …(%d characters)… ", len(r)-head-tail) + string(r[len(r)-tail:])
			cut++
		}
		lines = append(lines, l)
	}
	if len(lines) > briefLines {
		cut += len(lines) - briefLines
		lines = lines[:briefLines]
	}
	return lines, cut
}

// explain prints a failing test's output at a glance (briefOutput's lines),
// indented, and with a coloured diff where the output holds a "got ...
// want ..." pair over several lines, or a diff of its own (labkit.Diff's,
// or testscript's cmp: "-" the golden line, "+" what came out).
func explain(u *ui, lines []string) {
	// A multi-line got/want pair: diff it.
	gi, wi := -1, -1
	for i, l := range lines {
		if gi < 0 && gotLine.MatchString(l) {
			gi = i
		} else if gi >= 0 && wi < 0 && wantLine.MatchString(l) {
			wi = i
		}
	}
	if gi >= 0 && wi > gi+1 {
		got := strings.Join(trimAll(lines[gi+1:wi]), "\n")
		end := wi + 1
		for end < len(lines) && !strings.Contains(lines[end], ".go:") {
			end++
		}
		want := strings.Join(trimAll(lines[wi+1:end]), "\n")
		if got != "" && want != "" {
			u.printf("      %s\n", u.dim(strings.TrimSpace(lines[gi])))
			u.printf("      expected %s, got %s:\n", u.red("-"), u.green("+"))
			for _, d := range lineDiff(want, got) {
				u.printf("        %s\n", colourDiff(u, d[:2]+textdiff.VisibleLine(d[2:])))
			}
			lines = append(lines[:gi:gi], lines[end:]...)
		}
	}
	// A one-line got/want pair: say which is which, in colour.
	if gi >= 0 && wi == gi+1 {
		got := gotLine.FindStringSubmatch(lines[gi])
		want := wantLine.FindStringSubmatch(lines[wi])
		if got[3] != "" && want[2] != "" {
			u.printf("      %s\n", u.dim(strings.TrimSpace(got[1])))
			u.printf("      expected: %s\n      got:      %s\n", u.red(textdiff.VisibleLine(want[2])), u.green(textdiff.VisibleLine(got[3])))
			lines = append(lines[:gi:gi], lines[wi+1:]...)
		}
	}
	for _, l := range lines {
		u.printf("      %s\n", colourDiff(u, strings.TrimPrefix(l, "    ")))
	}
}

func trimAll(ls []string) []string {
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = strings.TrimSpace(l)
	}
	return out
}
