// Command checklinks is scripts/check-links.sh: it checks what every upstream
// citation in the course claims. It reads every tracked README, Markdown file,
// Go file, exercise (.txtar) and script of a checkout and finds each
//
//	module path:  k8s.io/MODULE@vX.Y.Z/PATH[:N[-M]]
//	              sigs.k8s.io/MODULE@vX.Y.Z/PATH[:N[-M]] (kind)
//	              go.etcd.io/etcd/MODULE/v3@vX.Y.Z/PATH[:N[-M]]
//	pinned link:  https://github.com/kubernetes/REPO/(blob|tree)/vX.Y.Z/PATH[#LN[-LM]]
//	              https://github.com/kubernetes-sigs/REPO/(blob|tree)/vX.Y.Z/PATH[#LN[-LM]]
//	              https://github.com/etcd-io/etcd/(blob|tree)/vX.Y.Z/PATH[#LN[-LM]]
//
// (a link into kubernetes' staging/src/k8s.io/MODULE is the k8s.io/MODULE
// module at v0.N.M for Kubernetes v1.N.M; one into etcd is the module its
// first directories name; one into kubernetes-sigs/REPO is sigs.k8s.io/REPO).
// The rules:
//
//   - In Markdown, a citation is a link: a module path outside a fenced code
//     block, a code span or an HTML comment fails, and its failure gives the
//     link to write instead (scripts/link-citations.sh writes them all). In
//     an HTML block (from a line that starts with <details>, <p>, <td>... up
//     to a blank line) Markdown is not read: a link there is <a href="...">.
//     Go files, scripts and exercises keep the module path.
//   - PATH exists in that module at that version (in the Go module cache,
//     downloaded if missing). A PACKAGE.Symbol path (tools/cache.NewIndexer)
//     names a package that declares Symbol.
//   - A citation with lines cites lines the file has, and one range only
//     (cacher.go:448-451, not cacher.go:448-451, 460: cite each range in full).
//   - Its sentence names the Go identifier those lines are about: the nearest
//     backticked identifier before the citation, on its line or earlier in
//     the same paragraph (in a Go file: the same comment paragraph), must
//     appear in the cited lines as a word. For `A.B` or `A.B()` that is B; a
//     backticked thing that is not an identifier (`kubectl get`, `"0"`,
//     `reflector.go`) is passed over, and so is a link's text
//     ([cacher.go:558-568](...)). A line citation with no identifier before
//     it fails: which identifier does it cite?
//   - A link whose text names a file (cacher.go, cacher/cacher.go, apiserver
//     cacher.go), and perhaps lines (cacher.go:558-568), names the file and
//     lines it links to.
//
// Each failure is one line: where the citation is, the citation, and what is
// wrong (for a missing identifier, the first of the cited lines). The exit
// status is 1 if any failed.
//
//	go run ./labkit/cmd/checklinks [DIR]    check the checkout at DIR (default: .)
package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/listwatch-labs/listwatch-labs/labkit/internal/citations"
)

type ref = citations.Ref

// find returns the citations of one file.
func find(name, body string) []ref { return citations.Find(name, body) }

func main() {
	root := "."
	if len(os.Args) > 1 {
		root = os.Args[1]
	}
	os.Exit(run(root, os.Stdout, os.Stderr))
}

// run checks the checkout at root, and returns the exit status: 0, 1 if a
// citation failed, 2 if it could not check.
func run(root string, stdout, stderr io.Writer) int {
	mods, err := citations.NewModules()
	if err != nil {
		fmt.Fprintln(stderr, "check-links:", err)
		return 2
	}
	c := &checker{mods: mods, pins: citations.ReadPins(root), files: map[string][]string{}, out: stdout}

	ls := exec.Command("git", "ls-files", "-z", "--", "*.md", "*.go", "*.txtar", "*.sh")
	ls.Dir = root
	out, err := ls.Output()
	if err != nil {
		fmt.Fprintf(stderr, "check-links: git ls-files in %s: %v\n", root, err)
		return 2
	}
	checked, withLines, links := 0, 0, 0
	for _, name := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		if name == "" {
			continue
		}
		body, err := os.ReadFile(filepath.Join(root, name))
		if err != nil {
			continue // listed but deleted in the work tree
		}
		for _, r := range find(name, string(body)) {
			checked++
			if r.From > 0 {
				withLines++
			}
			if r.Link {
				links++
			}
			c.check(name, r)
		}
	}
	if c.bad {
		return 1
	}
	fmt.Fprintf(stdout, "check-links: all %d upstream references (%d of them links) name files that exist at their pinned version, and the %d that cite lines hold the identifier their sentence names\n", checked, links, withLines)
	return 0
}

// htmlCode turns HTML's code spans (in a page a Go file writes) into
// Markdown's, so that <code>Name</code> names an identifier as `Name` does.
// A backtick in such text is Go's (a raw string's quote), so it goes first.
var htmlCode = strings.NewReplacer("`", "", "<code>", "`", "</code>", "`")

// identifier returns the Go identifier nearest the end of text in backticks
// (or, in HTML, in <code> tags).
func identifier(text string) string {
	if strings.Contains(text, "<code>") {
		text = htmlCode.Replace(text)
	}
	spans := codeSpans(text)
	for k := len(spans) - 1; k >= 0; k-- {
		if id := goIdent(spans[k]); id != "" {
			return id
		}
	}
	return ""
}

// codeSpans returns the contents of the backticked spans in text, in order; an
// unclosed one at the end (the citation's own) is left out.
func codeSpans(text string) []string {
	var spans []string
	for {
		open := strings.IndexByte(text, '`')
		if open < 0 {
			return spans
		}
		n := open
		for n < len(text) && text[n] == '`' {
			n++
		}
		fence := text[open:n]
		end := strings.Index(text[n:], fence)
		if end < 0 {
			return spans
		}
		spans = append(spans, text[n:n+end])
		text = text[n+end+len(fence):]
	}
}

var (
	identPart = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	typeArgs  = regexp.MustCompile(`\[[^\]]*\]`)
	notIdents = map[string]bool{
		// Go's keywords and predeclared constants name nothing in a file.
		"break": true, "case": true, "chan": true, "const": true, "continue": true, "default": true,
		"defer": true, "else": true, "fallthrough": true, "for": true, "func": true, "go": true,
		"goto": true, "if": true, "import": true, "interface": true, "map": true, "package": true,
		"range": true, "return": true, "select": true, "struct": true, "switch": true, "type": true,
		"var": true, "nil": true, "true": true, "false": true, "iota": true,
	}
	fileExts = map[string]bool{"go": true, "md": true, "sh": true, "txtar": true, "json": true, "yaml": true, "mod": true, "sum": true, "proto": true}
)

// goIdent returns the identifier a backticked span names (for A.B, B), or ""
// if it is not a Go identifier.
func goIdent(s string) string {
	s = strings.TrimSpace(s)
	if s == "" || strings.ContainsAny(s, " \t\n/\"'=:,") {
		return ""
	}
	if strings.HasSuffix(s, ")") { // a call: f(), (*T).M(x)
		if k := strings.LastIndexByte(s, '('); k > 0 {
			s = s[:k]
		}
	}
	if strings.HasSuffix(s, "}") { // a composite literal: T{}
		if k := strings.IndexByte(s, '{'); k > 0 {
			s = s[:k]
		}
	}
	s = typeArgs.ReplaceAllString(s, "")
	s = strings.NewReplacer("(", "", ")", "", "*", "", "&", "").Replace(s)
	s = strings.TrimPrefix(s, ".")
	parts := strings.Split(s, ".")
	for _, p := range parts {
		if !identPart.MatchString(p) {
			return ""
		}
	}
	last := parts[len(parts)-1]
	if len(parts) > 1 && fileExts[last] || notIdents[last] {
		return ""
	}
	return last
}

type checker struct {
	mods  *citations.Modules
	pins  citations.Pins
	files map[string][]string // a cited file's lines
	bad   bool
	out   io.Writer
}

func (c *checker) fail(r ref, format string, args ...any) {
	fmt.Fprintf(c.out, "check-links: %s: %s: %s\n", r.Where, r.Text, fmt.Sprintf(format, args...))
	c.bad = true
}

func (c *checker) lines(path string) []string {
	if l, ok := c.files[path]; ok {
		return l
	}
	body, err := os.ReadFile(path)
	var l []string
	if err == nil {
		l = strings.Split(strings.TrimSuffix(string(body), "\n"), "\n")
	}
	c.files[path] = l
	return l
}

// linkTextLines reads a link text that names a file and its lines:
// cacher.go:558-568, cacher/cacher.go:558, apiserver kube_features.go:459,
// cacher.go:1203 in v1.21.0.
var linkTextLines = regexp.MustCompile(`^(?:[a-z0-9-]+ )?([A-Za-z0-9_./-]+\.[a-z]+)(?::(\d+)(?:-(\d+))?)?(?: in v\d+\.\d+\.\d+)?$`)

func (c *checker) check(name string, r ref) {
	dir := c.mods.Dir(r.Module, r.Version)
	if dir == "" {
		c.fail(r, "%s@%s is not a module version the Go proxy has", r.Module, r.Version)
		return
	}
	at := r.Module + "@" + r.Version
	full := filepath.Join(dir, r.Path)
	if _, err := os.Stat(full); err != nil {
		// PACKAGE.Symbol (tools/cache.NewSharedIndexInformer): the package
		// must exist and declare the symbol.
		if pkg, sym, ok := citations.Symbol(r.Path); ok && r.From == 0 {
			gofiles, _ := filepath.Glob(filepath.Join(dir, pkg, "*.go"))
			if len(gofiles) == 0 {
				c.fail(r, "%s has no package %s", at, pkg)
				return
			}
			decl := regexp.MustCompile(fmt.Sprintf(citations.Declares, regexp.QuoteMeta(sym)))
			for _, f := range gofiles {
				if body, err := os.ReadFile(f); err == nil && decl.Match(body) {
					c.bare(name, r, dir)
					return
				}
			}
			c.fail(r, "%s/%s declares no %s", at, pkg, sym)
			return
		}
		c.fail(r, "%s has no %s", at, r.Path)
		return
	}
	c.bare(name, r, dir)
	if r.Link && r.LinkText != "" && r.InHTML && !r.InCode {
		c.fail(r, "in an HTML block (up to a blank line) Markdown's [%s](...) is not read: write <a href=\"...\">%s</a>, or put a blank line before it", r.LinkText, r.LinkText)
	}
	if r.Link && r.LinkText != "" {
		if m := linkTextLines.FindStringSubmatch(r.LinkText); m != nil {
			from, _ := strconv.Atoi(m[2])
			to, _ := strconv.Atoi(m[3])
			if to == 0 {
				to = from
			}
			if !strings.HasSuffix("/"+r.Path, "/"+m[1]) || from > 0 && (from != r.From || to != r.To) {
				c.fail(r, "its text [%s] names another file or other lines than it links to (%s)", r.LinkText, citations.Text(r.Path, r.From, r.To))
			}
		}
	}
	if r.From == 0 {
		return
	}
	if r.MoreRanges {
		c.fail(r, "one range per citation: cite the next range in full, with the identifier it holds before it")
		return
	}
	lines := c.lines(full)
	switch {
	case r.To < r.From:
		c.fail(r, "the range %d-%d ends before it starts", r.From, r.To)
		return
	case r.To > len(lines):
		c.fail(r, "%s has %d lines, not %d", filepath.Base(r.Path), len(lines), r.To)
		return
	}
	id := identifier(r.Before)
	if id == "" {
		c.fail(r, "cite which identifier? no backticked Go identifier before it in its paragraph")
		return
	}
	word := regexp.MustCompile(`(^|[^A-Za-z0-9_])` + regexp.QuoteMeta(id) + `([^A-Za-z0-9_]|$)`)
	cited := lines[r.From-1 : r.To]
	if word.MatchString(strings.Join(cited, "\n")) {
		return
	}
	span := fmt.Sprintf("line %d does", r.From)
	if r.To > r.From {
		span = fmt.Sprintf("lines %d-%d do", r.From, r.To)
	}
	first := strings.TrimSpace(cited[0])
	for _, l := range cited { // the first line that says something
		if t := strings.TrimSpace(l); t != "" {
			first = t
			break
		}
	}
	c.fail(r, "%s not hold `%s`: %q", span, id, first)
}

// bare fails a module path in Markdown prose, giving the link to write.
func (c *checker) bare(name string, r ref, modDir string) {
	if !citations.IsMarkdown(name) || r.Link || r.InCode {
		return
	}
	text, url, err := citations.Link(r, modDir, c.pins)
	if err != nil {
		c.fail(r, "write it as a link (%v)", err)
		return
	}
	if r.InHTML {
		c.fail(r, "write it as a link: <a href=\"%s\">%s</a> (in an HTML block, where Markdown's links are not read)", url, text)
		return
	}
	c.fail(r, "write it as a link: [%s](%s)", text, url)
}
