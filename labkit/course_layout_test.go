package labkit

// The course's form (issue #28): a learner meets little prose before the
// command that starts the cluster, and every lab README has one layout, task
// first, with a main path short enough to follow in one sitting. The depth
// stays, below "Going deeper" or in the lab's DEEPER.md.

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

const (
	// topProseBudget is how many words of prose README.md may put before
	// the first console block that runs scripts/cluster-up.sh.
	topProseBudget = 400
	// labMainPathBudget is how many words of prose a lab README's main
	// path (everything before "## Going deeper") may hold.
	labMainPathBudget = 4000
)

// labSections are a lab README's second-level headings, in this order; the
// main path may have no others (its subsections are ### and below). After
// "Going deeper" a README may add more.
var labSections = []string{
	"What you will learn",
	"Contents",
	"Run it",
	"Write it yourself",
	"Break it",
	"How it works",
	"Check yourself",
	"Going deeper",
}

var (
	fenceRE   = regexp.MustCompile("^\\s*(```|~~~)")
	commentRE = regexp.MustCompile(`(?s)<!--.*?-->`)
	linkRE    = regexp.MustCompile(`\]\([^)\s]*\)`)
	tagRE     = regexp.MustCompile(`</?[a-zA-Z][^>]*>`)
	wordRE    = regexp.MustCompile(`[\p{L}\p{N}]`)
)

// proseLines returns the README's lines with fenced code blocks and HTML
// comments (the README check's directives) blanked, so that line i of the
// result is line i of the file.
func proseLines(text string) []string {
	text = commentRE.ReplaceAllStringFunc(text, func(c string) string {
		return strings.Repeat("\n", strings.Count(c, "\n"))
	})
	lines := strings.Split(text, "\n")
	in := false
	for i, l := range lines {
		if fenceRE.MatchString(l) {
			in = !in
			lines[i] = ""
			continue
		}
		if in {
			lines[i] = ""
		}
	}
	return lines
}

// proseWords counts the words a reader reads: a link's text counts, its
// target does not; HTML tags and Markdown punctuation do not; a token counts
// if it holds a letter or a digit.
func proseWords(lines []string) int {
	n := 0
	for _, l := range lines {
		l = linkRE.ReplaceAllString(l, "]")
		l = tagRE.ReplaceAllString(l, " ")
		for _, w := range strings.Fields(l) {
			if wordRE.MatchString(w) {
				n++
			}
		}
	}
	return n
}

// topProseBeforeClusterUp returns the words of prose README.md puts before
// the console block that runs scripts/cluster-up.sh, and that block's line.
func topProseBeforeClusterUp(text string) (words, line int, err error) {
	lines := strings.Split(text, "\n")
	in := false
	for i, l := range lines {
		if fenceRE.MatchString(l) {
			in = !in
			continue
		}
		if in && strings.Contains(l, "scripts/cluster-up.sh") {
			return proseWords(proseLines(strings.Join(lines[:i], "\n"))), i + 1, nil
		}
	}
	return 0, 0, fmt.Errorf("no code block runs scripts/cluster-up.sh")
}

// labLayout checks one lab README's headings and returns its main path's
// words.
func labLayout(text string) (int, error) {
	lines := proseLines(text)
	var got []string
	deeper := -1
	for i, l := range lines {
		h, ok := strings.CutPrefix(l, "## ")
		if !ok {
			continue
		}
		h = strings.TrimSpace(h)
		got = append(got, h)
		if h == "Going deeper" {
			deeper = i
			break
		}
	}
	if strings.Join(got, "\n") != strings.Join(labSections, "\n") {
		return 0, fmt.Errorf("its ## headings up to Going deeper are\n\t%s\nwant, in this order and no others (use ### inside them)\n\t%s",
			strings.Join(got, " · "), strings.Join(labSections, " · "))
	}
	main := lines[:deeper]
	// Check yourself folds its answers: <details> in that section.
	start := -1
	for i, l := range main {
		if strings.TrimSpace(l) == "## Check yourself" {
			start = i
		}
	}
	if !strings.Contains(strings.Join(main[start:], "\n"), "<details>") {
		return 0, fmt.Errorf("Check yourself shows its answers beside the questions: fold each in <details>")
	}
	// Contents links to every section.
	contents := ""
	for i, l := range main {
		if strings.TrimSpace(l) == "## Contents" {
			for _, c := range main[i+1:] {
				if strings.HasPrefix(c, "## ") {
					break
				}
				contents += c + "\n"
			}
		}
	}
	for _, s := range labSections[2:] {
		anchor := "(#" + strings.ReplaceAll(strings.ToLower(s), " ", "-") + ")"
		if !strings.Contains(contents, anchor) {
			return 0, fmt.Errorf("Contents has no link to %q (%s)", s, anchor)
		}
	}
	return proseWords(main), nil
}

func TestCourseLayout(t *testing.T) {
	root, err := Root()
	if err != nil {
		t.Fatal(err)
	}
	top, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	words, line, err := topProseBeforeClusterUp(string(top))
	switch {
	case err != nil:
		t.Errorf("README.md: %v", err)
	case words > topProseBudget:
		t.Errorf("README.md: %d words of prose before scripts/cluster-up.sh (line %d); the budget is %d", words, line, topProseBudget)
	default:
		t.Logf("README.md: %d words of prose before scripts/cluster-up.sh (line %d; budget %d)", words, line, topProseBudget)
	}
	labs, err := filepath.Glob(filepath.Join(root, "labs", "*", "README.md"))
	if err != nil || len(labs) == 0 {
		t.Fatalf("no lab READMEs: %v", err)
	}
	for _, f := range labs {
		rel, _ := filepath.Rel(root, f)
		text, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		words, err := labLayout(string(text))
		switch {
		case err != nil:
			t.Errorf("%s: %v", rel, err)
		case words > labMainPathBudget:
			t.Errorf("%s: its main path (before ## Going deeper) has %d words of prose; the budget is %d: move depth to Going deeper or DEEPER.md", rel, words, labMainPathBudget)
		default:
			t.Logf("%s: main path %d words (budget %d)", rel, words, labMainPathBudget)
		}
	}
}

// The checks can fail: a README over budget, out of order, or with its
// answers in the open.
func TestCourseLayoutCatches(t *testing.T) {
	good := "# Lab\n\nIntro.\n\n## What you will learn\n\n- a\n\n## Contents\n\n" +
		"- [Run it](#run-it)\n- [Write it yourself](#write-it-yourself)\n- [Break it](#break-it)\n" +
		"- [How it works](#how-it-works)\n- [Check yourself](#check-yourself)\n- [Going deeper](#going-deeper)\n\n" +
		"## Run it\n\n```console\n$ go test ./...\n```\n\n## Write it yourself\n\n## Break it\n\n## How it works\n\n" +
		"See [cacher.go:5](https://example.com/x#L5).\n\n## Check yourself\n\n1. Why?\n<details><summary>Answer</summary>\n\nBecause.\n</details>\n\n## Going deeper\n\nLong text.\n"
	n, err := labLayout(good)
	if err != nil {
		t.Fatalf("a good layout: %v", err)
	}
	// Intro. a Run it ×2, Write it yourself ×2 ... counted without code or link targets.
	if n < 20 || n > 60 {
		t.Errorf("a good layout counted %d words", n)
	}
	for name, tc := range map[string]struct{ from, to, want string }{
		"order":     {"## Break it\n\n## How it works", "## How it works\n\n## Break it", "its ## headings"},
		"extra":     {"## How it works\n", "## Background\n\n## How it works\n", "its ## headings"},
		"answers":   {"<details><summary>Answer</summary>", "Answer:", "<details>"},
		"contents":  {"- [Break it](#break-it)\n", "", "no link to \"Break it\""},
		"no deeper": {"## Going deeper", "## More", "its ## headings"},
	} {
		bad := strings.Replace(good, tc.from, tc.to, 1)
		if bad == good {
			t.Fatalf("%s: the change did not apply", name)
		}
		if _, err := labLayout(bad); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an error containing %q", name, err, tc.want)
		}
	}
	long := strings.Replace(good, "Long text.", "", 1)
	long = strings.Replace(long, "Intro.", strings.Repeat("word ", labMainPathBudget+1), 1)
	if n, _ := labLayout(long); n <= labMainPathBudget {
		t.Errorf("a main path of %d+ words counted %d", labMainPathBudget+1, n)
	}
	top := strings.Repeat("word ", 10) + "\n```console\n$ echo " + strings.Repeat("x ", 500) + "\n```\n<!-- check: a b c -->\n```console\n$ scripts/cluster-up.sh\n```\n"
	if w, line, err := topProseBeforeClusterUp(top); err != nil || w != 10 || line != 7 {
		t.Errorf("top README: %d words before line %d (%v), want 10 before line 7", w, line, err)
	}
}
