// Command linkcite is scripts/link-citations.sh: it rewrites each plain
// upstream citation in the Markdown files of a checkout,
//
//	(`triggerValue`, k8s.io/apiserver@v0.37.0/pkg/storage/cacher/cacher.go:555-565)
//
// as the short link scripts/check-links.sh wants there,
//
//	(`triggerValue`, [cacher.go:555-565](https://github.com/kubernetes/kubernetes/blob/v1.37.0/staging/src/k8s.io/apiserver/pkg/storage/cacher/cacher.go#L555-L565))
//
// The link's text is the file's base name and lines ([cacher.go] for a whole
// file, the path for a directory, `pkg.Symbol` for PACKAGE.Symbol, linked
// at the line that declares it); when a paragraph cites two files of one
// name, enough of each path (or the module's name) to tell them apart; and,
// for a tag other than the pinned one in versions.env, the tag
// ([cacher.go:1203 in v1.21.0]). The link goes to the repository and tag
// that hold the module version: k8s.io/X@v0.N.M (published from Kubernetes'
// staging) to kubernetes/kubernetes at v1.N.M, staging/src/k8s.io/X;
// k8s.io/kubernetes to kubernetes/kubernetes; sigs.k8s.io/X to
// kubernetes-sigs/X; go.etcd.io/etcd/DIR/v3 to etcd-io/etcd, DIR. Each
// link is checked before it is written: the path exists in the module
// version (in the Go module cache, downloaded if missing, so an old version
// such as k8s.io/apiserver@v0.17.0 works as the pinned one does), and the
// link reads back, as check-links reads it, as the same module version, path
// and lines.
//
// Code is left as it is: fenced code blocks, code spans (`k8s.io/...`) and
// HTML comments. In an HTML block (a line that starts with <details>,
// <summary>, <p>, <td>..., up to the next blank line), where Markdown is not
// read, the link is <a href="...">cacher.go:558-568</a>. Go files, scripts and exercises keep the plain form. A link
// is not a backticked identifier, so the identifier a citation's sentence
// names before it still counts for check-links. Running it twice changes
// nothing the second time.
//
//	go run ./labkit/cmd/linkcite [-n] [-report] [DIR]
//
//	-n        change nothing; list each citation it would rewrite
//	-report   after rewriting (or with -n, instead of it), list what still
//	          reads badly and needs a hand: a sentence or a parenthesis with
//	          more than two citations, a citation in a code span
//
// It exits 1 if a citation could not be linked (each named on a line).
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/listwatch-labs/listwatch-labs/labkit/internal/citations"
)

func main() {
	dryRun := flag.Bool("n", false, "change nothing; list each citation it would rewrite")
	report := flag.Bool("report", false, "list what still needs a hand: crowded sentences and parentheses, citations in code spans")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: linkcite [-n] [-report] [DIR]")
		flag.PrintDefaults()
	}
	flag.Parse()
	root := "."
	if flag.NArg() > 0 {
		root = flag.Arg(0)
	}
	mods, err := citations.NewModules()
	if err != nil {
		fmt.Fprintln(os.Stderr, "link-citations:", err)
		os.Exit(2)
	}
	ls := exec.Command("git", "ls-files", "-z", "--", "*.md")
	ls.Dir = root
	out, err := ls.Output()
	if err != nil {
		fmt.Fprintf(os.Stderr, "link-citations: git ls-files in %s: %v\n", root, err)
		os.Exit(2)
	}
	cv := &converter{mods: mods, pins: citations.ReadPins(root), dryRun: *dryRun}
	linked, files, notes := 0, 0, 0
	for _, name := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		if name == "" {
			continue
		}
		file := filepath.Join(root, name)
		body, err := os.ReadFile(file)
		if err != nil {
			continue // listed but deleted in the work tree
		}
		text, n := cv.convert(name, string(body))
		if n > 0 {
			linked += n
			files++
			if !*dryRun {
				if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
					fmt.Fprintln(os.Stderr, "link-citations:", err)
					os.Exit(2)
				}
			}
		}
		if *report {
			for _, note := range crowded(name, text) {
				fmt.Println(note)
				notes++
			}
		}
	}
	did := "linked"
	if *dryRun {
		did = "would link"
	}
	fmt.Printf("link-citations: %s %d citations in %d files", did, linked, files)
	if *report {
		fmt.Printf("; %d places to read and fix by hand", notes)
	}
	fmt.Println()
	if cv.bad {
		os.Exit(1)
	}
}

type converter struct {
	mods   *citations.Modules
	pins   citations.Pins
	dryRun bool
	bad    bool
}

// link is one rewrite: line[start:end] becomes "[text](url)".
type link struct {
	ref        citations.Ref
	end        int
	text, url  string
	file, repo string // the file in its module, and its repository path
	html       bool   // in an HTML block: <a href="url">text</a>
}

// convert returns body with its plain citations linked, and how many.
func (cv *converter) convert(name, body string) (string, int) {
	lines := strings.Split(body, "\n")
	para := paragraphs(lines)
	html := citations.HTMLBlocks(lines)
	var links []*link
	byPara := map[int][]*link{} // every file citation, linked already or not
	for _, r := range citations.Find(name, body) {
		if r.InCode {
			continue
		}
		line := lines[r.Line]
		if strings.HasSuffix(line[:r.Start], "](") || strings.HasSuffix(line[:r.Start], "<") {
			continue // a link's target, or an autolink: check-links says what is wrong
		}
		dir := cv.mods.Dir(r.Module, r.Version)
		if dir == "" {
			fmt.Printf("link-citations: %s: %s: %s@%s is not a module version the Go proxy has\n", r.Where, r.Text, r.Module, r.Version)
			cv.bad = true
			continue
		}
		l := &link{ref: r}
		repo, _, base, _ := citations.Repo(r.Module, r.Version)
		l.repo = repo + "/" + path.Join(base, r.Path)
		if fi, err := os.Stat(filepath.Join(dir, r.Path)); err == nil && !fi.IsDir() {
			l.file = r.Path
		}
		if r.Link {
			if l.file != "" {
				byPara[para[r.Line]] = append(byPara[para[r.Line]], l)
			}
			continue
		}
		if r.MoreRanges {
			fmt.Printf("link-citations: %s: %s: one range per citation: cite the next range in full, with the identifier it holds before it\n", r.Where, r.Text)
			cv.bad = true
			continue
		}
		text, url, err := citations.Link(r, dir, cv.pins)
		if err != nil {
			fmt.Printf("link-citations: %s: %s: %v\n", r.Where, r.Text, err)
			cv.bad = true
			continue
		}
		l.text, l.url, l.html = text, url, html[r.Line]
		// What the citation takes: a file's trailing "." ends the sentence.
		t := r.Text
		if r.From == 0 {
			t = strings.TrimRight(t, ".")
		}
		l.end = r.Start + len(t)
		links = append(links, l)
		if l.file != "" {
			byPara[para[r.Line]] = append(byPara[para[r.Line]], l)
		}
	}
	for _, ls := range byPara {
		disambiguate(ls)
	}
	// Rewrite from the end of each line, so that the offsets hold.
	sort.Slice(links, func(i, j int) bool {
		a, b := links[i].ref, links[j].ref
		return a.Line > b.Line || a.Line == b.Line && a.Start > b.Start
	})
	for _, l := range links {
		line := lines[l.ref.Line]
		a := "[" + l.text + "](" + l.url + ")"
		if l.html {
			a = `<a href="` + l.url + `">` + htmlText(l.text) + "</a>"
		}
		if cv.dryRun {
			fmt.Printf("%s: %s -> %s\n", l.ref.Where, line[l.ref.Start:l.end], a)
		}
		lines[l.ref.Line] = line[:l.ref.Start] + a + line[l.end:]
	}
	return strings.Join(lines, "\n"), len(links)
}

// disambiguate gives the links of one paragraph that cite different files
// of one name texts that tell them apart: the module's name before it, if
// the files are in different modules (apiserver kube_features.go,
// kubernetes kube_features.go), or else the last directories of each path
// that differ (etcd3/store.go, registry/store.go). Links already written
// keep their text.
func disambiguate(ls []*link) {
	byBase := map[string][]*link{}
	for _, l := range ls {
		if !l.ref.Link {
			byBase[path.Base(l.file)] = append(byBase[path.Base(l.file)], l)
		}
	}
	for base, group := range byBase {
		tail := func(l *link) string { return strings.TrimPrefix(l.text, base) }
		unique := func(name func(*link) string) bool {
			seen := map[string]string{}
			for _, l := range group {
				t := lineNumbers.ReplaceAllString(name(l), "") // the file, not its lines
				if r, ok := seen[t]; ok && r != l.repo {
					return false
				}
				seen[t] = l.repo
			}
			return true
		}
		apply := func(name func(*link) string) {
			for _, l := range group {
				l.text = name(l)
			}
		}
		if unique(func(l *link) string { return l.text }) {
			continue // the tags tell them apart
		}
		byModule := func(l *link) string { return moduleName(l.ref.Module) + " " + l.text }
		if unique(byModule) {
			apply(byModule)
			continue
		}
		for k := 2; k < 20; k++ {
			byDir := func(l *link) string { return suffix(l.file, k) + tail(l) }
			if unique(byDir) {
				apply(byDir)
				break
			}
		}
	}
}

// htmlText writes a link text's code span (`cache.NewIndexer`) as HTML's,
// for a link in an HTML block.
func htmlText(t string) string {
	t = strings.Replace(t, "`", "<code>", 1)
	return strings.Replace(t, "`", "</code>", 1)
}

var lineNumbers = regexp.MustCompile(`:\d+(-\d+)?`)

// suffix returns the last k elements of a slash-separated path.
func suffix(p string, k int) string {
	parts := strings.Split(p, "/")
	if k >= len(parts) {
		return p
	}
	return strings.Join(parts[len(parts)-k:], "/")
}

// moduleName is what a module is called in prose: apiserver, client-go,
// kubernetes, kind, etcd.
func moduleName(module string) string {
	if strings.HasPrefix(module, "go.etcd.io/") {
		return "etcd"
	}
	return path.Base(module)
}

// paragraphs numbers the lines of a Markdown file by paragraph: a blank line,
// a heading or a list item starts a new one.
func paragraphs(lines []string) []int {
	para := make([]int, len(lines))
	n := 0
	for i, line := range lines {
		if strings.TrimSpace(line) == "" || listItem.MatchString(line) || strings.HasPrefix(strings.TrimSpace(line), "#") ||
			strings.HasPrefix(strings.TrimSpace(line), "|") {
			n++
		}
		para[i] = n
	}
	return para
}

var (
	listItem = regexp.MustCompile(`^\s*([-*+]|\d+[.)])\s`)
	mdLink   = regexp.MustCompile(`\[([^\]]*)\]\(https://github\.com/[^)\s]*\)`)
	// sentenceEnd ends a sentence: . ! or ? and a space, before a capital,
	// a backtick or an opening parenthesis (or the paragraph's end).
	sentenceEnd = regexp.MustCompile("[.!?]\\s+[A-Z`(*\"]")
)

// crowded returns, for a Markdown file, the places a reader stumbles over
// citations: a sentence or a parenthesis with more than two links to
// upstream code, and a plain citation left in a code span.
func crowded(name, body string) []string {
	lines := strings.Split(body, "\n")
	fenced := citations.Fenced(lines)
	var notes []string
	for _, r := range citations.Find(name, body) {
		if r.InCode && !r.Link && !fenced[r.Line] && !strings.HasPrefix(lines[r.Line][r.Start:], "<!--") {
			notes = append(notes, fmt.Sprintf("%s: a citation in a code span, left plain: %s", r.Where, r.Text))
		}
	}
	para := paragraphs(lines)
	for start := 0; start < len(lines); {
		end := start
		for end < len(lines) && para[end] == para[start] {
			end++
		}
		notes = append(notes, crowdedParagraph(name, lines, fenced, start, end)...)
		start = end
	}
	return notes
}

// crowdedParagraph finds the crowded sentences and parentheses of lines
// [start, end).
func crowdedParagraph(name string, lines []string, fenced []bool, start, end int) []string {
	// Each link becomes one marker rune, so that the text can be split
	// into sentences and parentheses; at[k] is the line of text[k].
	var text []rune
	var at []int
	for i := start; i < end; i++ {
		if fenced[i] {
			continue
		}
		line := mdLink.ReplaceAllString(lines[i], "\x00")
		for _, c := range line + " " {
			text = append(text, c)
			at = append(at, i)
		}
	}
	var notes []string
	if len(text) == 0 {
		return nil
	}
	count := func(from, to int) int { return strings.Count(string(text[from:to]), "\x00") }
	// Sentences.
	s := string(text)
	begin := 0
	ends := sentenceEnd.FindAllStringIndex(s, -1)
	ends = append(ends, []int{len(s), len(s)})
	for _, e := range ends {
		b, f := runeIndex(s, begin), runeIndex(s, e[0]+1)
		if n := count(b, f); n > 2 {
			notes = append(notes, fmt.Sprintf("%s:%d: %d citations in one sentence", name, at[min(b, len(at)-1)]+1, n))
		}
		begin = e[0] + 1
	}
	// Parentheses.
	var open []int
	for k, c := range text {
		switch c {
		case '(':
			open = append(open, k)
		case ')':
			if len(open) == 0 {
				continue
			}
			o := open[len(open)-1]
			open = open[:len(open)-1]
			if n := count(o, k); n > 2 {
				notes = append(notes, fmt.Sprintf("%s:%d: %d citations in one parenthesis", name, at[o]+1, n))
			}
		}
	}
	return notes
}

// runeIndex turns a byte offset in s into a rune offset.
func runeIndex(s string, b int) int { return len([]rune(s[:min(b, len(s))])) }
