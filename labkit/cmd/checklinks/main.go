// Command checklinks is scripts/check-links.sh: it checks what every upstream
// citation in the course claims. It reads every tracked README, Markdown file,
// Go file, exercise (.txtar) and script of a checkout and finds each
//
//	module path:  k8s.io/MODULE@vX.Y.Z/PATH[:N[-M]]
//	              sigs.k8s.io/MODULE@vX.Y.Z/PATH[:N[-M]] (kind)
//	              go.etcd.io/etcd/MODULE/v3@vX.Y.Z/PATH[:N[-M]]
//	pinned link:  https://github.com/kubernetes/REPO/(blob|tree)/vX.Y.Z/PATH[#LN[-LM]]
//	              https://github.com/etcd-io/etcd/(blob|tree)/vX.Y.Z/PATH[#LN[-LM]]
//
// (a link into kubernetes' staging/src/k8s.io/MODULE is the k8s.io/MODULE
// module at v0.N.M for Kubernetes v1.N.M; one into etcd is the module its
// first directories name). The rules:
//
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
//     `reflector.go`) is passed over. A line citation with no identifier
//     before it fails: which identifier does it cite?
//
// Each failure is one line: where the citation is, the citation, and what is
// wrong (for a missing identifier, the first of the cited lines). The exit
// status is 1 if any failed.
//
//	go run ./labkit/cmd/checklinks [DIR]    check the checkout at DIR (default: .)
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// citation finds the citations; the submatches are named for cite().
var citation = regexp.MustCompile(
	`(?:https://)?github\.com/(?P<org>kubernetes|etcd-io)/(?P<repo>[a-z0-9-]+)/(?:blob|tree)/(?P<tag>v\d+\.\d+\.\d+)/(?P<gpath>[A-Za-z0-9_./-]*)(?:#L(?P<gfrom>\d+)(?:-L(?P<gto>\d+))?)?` +
		`|(?P<mod>(?:sigs\.)?k8s\.io/[a-z0-9-]+|go\.etcd\.io/etcd/(?:[a-z0-9-]+/)*v\d+)@(?P<ver>v\d+\.\d+\.\d+)/(?P<mpath>[A-Za-z0-9_./-]*)(?::(?P<mfrom>\d+)(?:-(?P<mto>\d+))?(?P<more>,\s*\d+)?)?`)

// ref is one citation, resolved to a module version and a path in it.
type ref struct {
	text        string // as written
	module, ver string
	path        string
	from, to    int // cited lines; 0 if none
	moreRanges  bool
	where       string // FILE:LINE of the citation
	before      string // its paragraph's text up to the citation
}

func main() {
	root := "."
	if len(os.Args) > 1 {
		root = os.Args[1]
	}
	c := &checker{modDirs: map[string]string{}, files: map[string][]string{}}
	out, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		fmt.Fprintln(os.Stderr, "check-links: go env GOMODCACHE:", err)
		os.Exit(2)
	}
	c.modCache = strings.TrimSpace(string(out))

	ls := exec.Command("git", "ls-files", "-z", "--", "*.md", "*.go", "*.txtar", "*.sh")
	ls.Dir = root
	out, err = ls.Output()
	if err != nil {
		fmt.Fprintf(os.Stderr, "check-links: git ls-files in %s: %v\n", root, err)
		os.Exit(2)
	}
	checked, withLines := 0, 0
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
			if r.from > 0 {
				withLines++
			}
			c.check(r)
		}
	}
	if c.bad {
		os.Exit(1)
	}
	fmt.Printf("check-links: all %d upstream references name files that exist at their pinned version, and the %d that cite lines hold the identifier their sentence names\n", checked, withLines)
}

// nameChars may stand just before a host name's dot-separated parts.
const nameChars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-"

// find returns the citations of one file, each with the text before it in its
// paragraph.
func find(name, body string) []ref {
	lines := strings.Split(body, "\n")
	var refs []ref
	for i, line := range lines {
		for _, m := range citation.FindAllStringSubmatchIndex(line, -1) {
			// A citation starts a name: k8s.io inside registry.k8s.io (an
			// image, not a module) is none.
			if m[0] > 0 && strings.ContainsRune(nameChars, rune(line[m[0]-1])) {
				continue
			}
			g := func(n string) string {
				k := citation.SubexpIndex(n)
				if m[2*k] < 0 {
					return ""
				}
				return line[m[2*k]:m[2*k+1]]
			}
			r := ref{text: line[m[0]:m[1]], where: fmt.Sprintf("%s:%d", name, i+1)}
			r.from, _ = strconv.Atoi(g("mfrom") + g("gfrom"))
			r.to, _ = strconv.Atoi(g("mto") + g("gto"))
			if r.from > 0 && r.to == 0 {
				r.to = r.from
			}
			if g("more") != "" {
				r.moreRanges = true
				r.text = strings.TrimSuffix(r.text, g("more"))
			}
			if g("mod") != "" {
				r.module, r.ver, r.path = g("mod"), g("ver"), g("mpath")
			} else {
				r.path = g("gpath")
				r.module, r.ver, r.path = fromGitHub(g("org"), g("repo"), g("tag"), g("gpath"))
			}
			r.path = strings.TrimRight(r.path, "./")
			if r.from > 0 {
				r.before = paragraph(name, lines, i, m[0])
			}
			refs = append(refs, r)
		}
	}
	return refs
}

// etcdModules are etcd's Go modules, by the directory they live in.
var etcdModules = []string{"client/pkg", "client/v3", "server", "api", "pkg", "etcdctl", "etcdutl"}

// fromGitHub maps a pinned GitHub link to the module version that holds it.
func fromGitHub(org, repo, tag, path string) (module, ver, p string) {
	switch {
	case org == "etcd-io" && repo == "etcd":
		for _, dir := range etcdModules {
			if path == dir || strings.HasPrefix(path, dir+"/") {
				mod := "go.etcd.io/etcd/" + strings.TrimSuffix(dir, "/v3") + "/v3"
				return mod, tag, strings.TrimPrefix(strings.TrimPrefix(path, dir), "/")
			}
		}
		return "go.etcd.io/etcd/v3", tag, path
	case org == "kubernetes" && repo == "kubernetes" && strings.HasPrefix(path, "staging/src/k8s.io/"):
		// Staging code is published as the k8s.io/* modules, tagged v0.N.M
		// for Kubernetes v1.N.M.
		rest := strings.TrimPrefix(path, "staging/src/k8s.io/")
		mod, sub, _ := strings.Cut(rest, "/")
		return "k8s.io/" + mod, "v0." + strings.TrimPrefix(tag, "v1."), sub
	default:
		return "k8s.io/" + repo, tag, path
	}
}

var (
	goComment  = regexp.MustCompile(`(^|\s)//`)
	blockStart = regexp.MustCompile(`^\s*([-*+]|\d+[.)])\s`) // a Markdown list item
	blockAlone = regexp.MustCompile("^\\s*(#{1,6}\\s|\\||```|~~~|<!--)")
)

// paragraph returns the text before column col of line i that belongs to the
// same paragraph: in a Go file the comment (and the earlier lines of its
// comment paragraph), elsewhere the earlier lines up to a blank one, a
// heading, a table row or a list item's first line.
func paragraph(name string, lines []string, i, col int) string {
	if strings.HasSuffix(name, ".go") {
		loc := goComment.FindStringIndex(lines[i][:col])
		if loc == nil {
			return lines[i][:col] // code or a string: the line is all there is
		}
		text := []string{lines[i][loc[1]:col]}
		if strings.TrimSpace(lines[i][:loc[1]]) == "//" { // a comment line of its own
			for j := i - 1; j >= 0; j-- {
				t := strings.TrimSpace(lines[j])
				if !strings.HasPrefix(t, "//") || strings.TrimSpace(t[2:]) == "" {
					break
				}
				text = append([]string{t[2:]}, text...)
			}
		}
		return strings.Join(text, "\n")
	}
	blank := func(s string) bool {
		t := strings.TrimSpace(s)
		return t == "" || t == "#" || t == "//"
	}
	text := []string{lines[i][:col]}
	for j := i; j > 0; j-- {
		if blockStart.MatchString(lines[j]) || blockAlone.MatchString(lines[j]) {
			break
		}
		if blank(lines[j-1]) || blockAlone.MatchString(lines[j-1]) {
			break
		}
		text = append([]string{lines[j-1]}, text...)
	}
	return strings.Join(text, "\n")
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
	modCache string
	modDirs  map[string]string   // MODULE@VERSION -> its directory, "" if none
	files    map[string][]string // a cited file's lines
	bad      bool
}

func (c *checker) fail(r ref, format string, args ...any) {
	fmt.Printf("check-links: %s: %s: %s\n", r.where, r.text, fmt.Sprintf(format, args...))
	c.bad = true
}

// moduleDir returns the module's directory in the cache, downloading it the
// first time.
func (c *checker) moduleDir(module, ver string) string {
	key := module + "@" + ver
	if dir, ok := c.modDirs[key]; ok {
		return dir
	}
	dir := filepath.Join(c.modCache, key)
	if _, err := os.Stat(dir); err != nil {
		dir = ""
		tmp, err := os.MkdirTemp("", "check-links")
		if err == nil {
			cmd := exec.Command("go", "mod", "download", "-json", key)
			cmd.Dir = tmp
			cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
			out, _ := cmd.Output()
			var info struct{ Dir string }
			if json.Unmarshal(out, &info) == nil {
				dir = info.Dir
			}
			os.RemoveAll(tmp)
		}
	}
	c.modDirs[key] = dir
	return dir
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

var declares = `(?m)^(func( \([^)]*\))?|type|var|const) %[1]s\b|^\s+%[1]s\s*(=|[A-Za-z*])`

func (c *checker) check(r ref) {
	dir := c.moduleDir(r.module, r.ver)
	if dir == "" {
		c.fail(r, "%s@%s is not a module version the Go proxy has", r.module, r.ver)
		return
	}
	at := r.module + "@" + r.ver
	full := filepath.Join(dir, r.path)
	if _, err := os.Stat(full); err != nil {
		// PACKAGE.Symbol (tools/cache.NewSharedIndexInformer): the package
		// must exist and declare the symbol.
		if m := regexp.MustCompile(`^(.*)\.([A-Z][A-Za-z0-9_]*)$`).FindStringSubmatch(r.path); m != nil && r.from == 0 {
			pkg, sym := m[1], m[2]
			gofiles, _ := filepath.Glob(filepath.Join(dir, pkg, "*.go"))
			if len(gofiles) == 0 {
				c.fail(r, "%s has no package %s", at, pkg)
				return
			}
			decl := regexp.MustCompile(fmt.Sprintf(declares, regexp.QuoteMeta(sym)))
			for _, f := range gofiles {
				if body, err := os.ReadFile(f); err == nil && decl.Match(body) {
					return
				}
			}
			c.fail(r, "%s/%s declares no %s", at, pkg, sym)
			return
		}
		c.fail(r, "%s has no %s", at, r.path)
		return
	}
	if r.from == 0 {
		return
	}
	if r.moreRanges {
		c.fail(r, "one range per citation: cite the next range in full, with the identifier it holds before it")
		return
	}
	lines := c.lines(full)
	switch {
	case r.to < r.from:
		c.fail(r, "the range %d-%d ends before it starts", r.from, r.to)
		return
	case r.to > len(lines):
		c.fail(r, "%s has %d lines, not %d", filepath.Base(r.path), len(lines), r.to)
		return
	}
	id := identifier(r.before)
	if id == "" {
		c.fail(r, "cite which identifier? no backticked Go identifier before it in its paragraph")
		return
	}
	word := regexp.MustCompile(`(^|[^A-Za-z0-9_])` + regexp.QuoteMeta(id) + `([^A-Za-z0-9_]|$)`)
	cited := lines[r.from-1 : r.to]
	if word.MatchString(strings.Join(cited, "\n")) {
		return
	}
	span := fmt.Sprintf("line %d does", r.from)
	if r.to > r.from {
		span = fmt.Sprintf("lines %d-%d do", r.from, r.to)
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
