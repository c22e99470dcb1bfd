// Package citations finds the course's upstream citations and maps them
// between their two forms: the plain module path
//
//	k8s.io/MODULE@vX.Y.Z/PATH[:N[-M]]             (kind: sigs.k8s.io/kind@...)
//	go.etcd.io/etcd/MODULE/v3@vX.Y.Z/PATH[:N[-M]]
//
// that Go files, scripts and exercises keep, and the pinned GitHub link
//
//	https://github.com/ORG/REPO/(blob|tree)/TAG/PATH[#LN[-LM]]
//
// that Markdown uses (ORG kubernetes, kubernetes-sigs or etcd-io). It is
// shared by labkit/cmd/checklinks (scripts/check-links.sh), which checks
// both forms, and labkit/cmd/linkcite (scripts/link-citations.sh), which
// rewrites Markdown's plain citations as links.
package citations

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// Pattern finds the citations; the submatches are named for Find.
var Pattern = regexp.MustCompile(
	`(?:https://)?github\.com/(?P<org>kubernetes-sigs|kubernetes|etcd-io)/(?P<repo>[a-z0-9-]+)/(?:blob|tree)/(?P<tag>v\d+\.\d+\.\d+)/(?P<gpath>[A-Za-z0-9_./-]*)(?:#L(?P<gfrom>\d+)(?:-L(?P<gto>\d+))?)?` +
		`|(?P<mod>(?:sigs\.)?k8s\.io/[a-z0-9-]+|go\.etcd\.io/etcd/(?:[a-z0-9-]+/)*v\d+|go\.etcd\.io/raft/v3)@(?P<ver>v\d+\.\d+\.\d+)/(?P<mpath>[A-Za-z0-9_./-]*)(?::(?P<mfrom>\d+)(?:-(?P<mto>\d+))?(?P<more>,\s*\d+)?)?`)

// Ref is one citation, resolved to a module version and a path in it.
type Ref struct {
	Text            string // as written (a plain citation's trailing "." or "/" included)
	Module, Version string
	Path            string // in the module, without a trailing "." or "/"
	From, To        int    // cited lines; 0 if none
	MoreRanges      bool   // ":N, M": a second range, which is not allowed
	Link            bool   // a GitHub link, not a module path
	LinkText        string // a link's text, when the link is a Markdown [TEXT](URL)
	Line            int    // its line, from 0
	Start, End      int    // Text is line[Start:End]
	InCode          bool   // Markdown only: in a fenced code block, a code span or an HTML comment
	InHTML          bool   // Markdown only: in an HTML block, where Markdown's [text](url) is not read
	Where           string // FILE:LINE of the citation
	Before          string // its paragraph's text up to the citation (a citation of lines only)
}

// nameChars may stand just before a host name's dot-separated parts.
const nameChars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-"

// Find returns the citations of one file, each with the text before it in its
// paragraph.
func Find(name, body string) []Ref {
	lines := strings.Split(body, "\n")
	var code [][][2]int
	var html []bool
	if IsMarkdown(name) {
		code = MarkdownCode(lines)
		html = HTMLBlocks(lines)
	}
	var refs []Ref
	for i, line := range lines {
		for _, m := range Pattern.FindAllStringSubmatchIndex(line, -1) {
			// A citation starts a name: k8s.io inside registry.k8s.io (an
			// image, not a module) is none.
			if m[0] > 0 && strings.ContainsRune(nameChars, rune(line[m[0]-1])) {
				continue
			}
			g := func(n string) string {
				k := Pattern.SubexpIndex(n)
				if m[2*k] < 0 {
					return ""
				}
				return line[m[2*k]:m[2*k+1]]
			}
			r := Ref{Text: line[m[0]:m[1]], Line: i, Start: m[0], End: m[1], Where: fmt.Sprintf("%s:%d", name, i+1)}
			r.From, _ = strconv.Atoi(g("mfrom") + g("gfrom"))
			r.To, _ = strconv.Atoi(g("mto") + g("gto"))
			if r.From > 0 && r.To == 0 {
				r.To = r.From
			}
			if g("more") != "" {
				r.MoreRanges = true
				r.Text = strings.TrimSuffix(r.Text, g("more"))
				r.End = r.Start + len(r.Text)
			}
			if g("mod") != "" {
				r.Module, r.Version, r.Path = g("mod"), g("ver"), g("mpath")
			} else {
				r.Link = true
				r.Module, r.Version, r.Path = FromGitHub(g("org"), g("repo"), g("tag"), g("gpath"))
				r.LinkText = linkText(line[:m[0]])
			}
			r.Path = strings.TrimRight(r.Path, "./")
			if i < len(html) {
				r.InHTML = html[i]
			}
			if i < len(code) {
				for _, span := range code[i] {
					if span[0] <= r.Start && r.Start < span[1] {
						r.InCode = true
					}
				}
			}
			if r.From > 0 {
				r.Before = paragraph(name, lines, i, m[0])
			}
			refs = append(refs, r)
		}
	}
	return refs
}

// IsMarkdown says whether a file is Markdown, whose citations are links.
func IsMarkdown(name string) bool { return strings.HasSuffix(name, ".md") }

// linkText returns TEXT when before ends a Markdown link's "[TEXT](".
func linkText(before string) string {
	if !strings.HasSuffix(before, "](") {
		return ""
	}
	before = strings.TrimSuffix(before, "](")
	depth := 0
	for k := len(before) - 1; k >= 0; k-- {
		switch before[k] {
		case ']':
			depth++
		case '[':
			if depth == 0 {
				return before[k+1:]
			}
			depth--
		}
	}
	return ""
}

// etcdModules are etcd's Go modules, by the directory they live in (each is
// go.etcd.io/etcd/DIR/v3, but client/v3's directory holds the v3).
var etcdModules = []string{"client/pkg", "client/v3", "server", "api", "pkg", "etcdctl", "etcdutl", "tests"}

// staging are the modules Kubernetes publishes from its staging/src/k8s.io,
// tagged v0.N.M for Kubernetes v1.N.M.
var staging = map[string]bool{}

func init() {
	for _, m := range strings.Fields(`api apiextensions-apiserver apimachinery apiserver cli-runtime
		client-go cloud-provider cluster-bootstrap code-generator component-base component-helpers
		controller-manager cri-api cri-client cri-streaming csi-translation-lib dynamic-resource-allocation
		endpointslice externaljwt kms kube-aggregator kube-controller-manager kube-proxy kube-scheduler
		kubectl kubelet legacy-cloud-providers metrics mount-utils pod-security-admission sample-apiserver sample-cli-plugin
		sample-controller streaming`) {
		staging["k8s.io/"+m] = true
	}
}

// FromGitHub maps a pinned GitHub link to the module version that holds it.
func FromGitHub(org, repo, tag, p string) (module, ver, inModule string) {
	switch {
	case org == "etcd-io" && repo == "etcd":
		for _, dir := range etcdModules {
			if p == dir || strings.HasPrefix(p, dir+"/") {
				mod := "go.etcd.io/etcd/" + strings.TrimSuffix(dir, "/v3") + "/v3"
				return mod, tag, strings.TrimPrefix(strings.TrimPrefix(p, dir), "/")
			}
		}
		return "go.etcd.io/etcd/v3", tag, p
	case org == "etcd-io" && repo == "raft":
		return "go.etcd.io/raft/v3", tag, p
	case org == "kubernetes-sigs":
		return "sigs.k8s.io/" + repo, tag, p
	case org == "kubernetes" && repo == "kubernetes" && strings.HasPrefix(p, "staging/src/k8s.io/"):
		// Staging code is published as the k8s.io/* modules, tagged v0.N.M
		// for Kubernetes v1.N.M.
		rest := strings.TrimPrefix(p, "staging/src/k8s.io/")
		mod, sub, _ := strings.Cut(rest, "/")
		return "k8s.io/" + mod, "v0." + strings.TrimPrefix(tag, "v1."), sub
	default:
		return "k8s.io/" + repo, tag, p
	}
}

// Repo returns the GitHub repository (ORG/REPO), the tag and the directory
// in it that hold a module version: the inverse of FromGitHub.
func Repo(module, ver string) (repo, tag, dir string, ok bool) {
	switch {
	case staging[module] && strings.HasPrefix(ver, "v0."):
		return "kubernetes/kubernetes", "v1." + strings.TrimPrefix(ver, "v0."), "staging/src/" + module, true
	case strings.HasPrefix(module, "k8s.io/") && !strings.Contains(strings.TrimPrefix(module, "k8s.io/"), "/"):
		return "kubernetes/" + strings.TrimPrefix(module, "k8s.io/"), ver, "", true
	case strings.HasPrefix(module, "sigs.k8s.io/") && !strings.Contains(strings.TrimPrefix(module, "sigs.k8s.io/"), "/"):
		return "kubernetes-sigs/" + strings.TrimPrefix(module, "sigs.k8s.io/"), ver, "", true
	case module == "go.etcd.io/raft/v3":
		return "etcd-io/raft", ver, "", true
	case module == "go.etcd.io/etcd/v3":
		return "etcd-io/etcd", ver, "", true
	case strings.HasPrefix(module, "go.etcd.io/etcd/") && strings.HasSuffix(module, "/v3"):
		dir := strings.TrimSuffix(strings.TrimPrefix(module, "go.etcd.io/etcd/"), "/v3")
		if dir == "client" {
			dir = "client/v3"
		}
		return "etcd-io/etcd", ver, dir, true
	}
	return "", "", "", false
}

// URL returns the pinned GitHub link to a path in a module version (a
// directory's with tree/, a file's with blob/ and its lines, if any). It
// checks that the link reads back, with Pattern and FromGitHub, as the same
// module version, path and lines.
func URL(module, ver, p string, dir bool, from, to int) (string, error) {
	repo, tag, base, ok := Repo(module, ver)
	if !ok {
		return "", fmt.Errorf("no GitHub repository known for %s", module)
	}
	kind := "blob"
	if dir {
		kind = "tree"
	}
	full := strings.Trim(path.Join(base, p), "/")
	u := fmt.Sprintf("https://github.com/%s/%s/%s/%s", repo, kind, tag, full)
	if from > 0 {
		u += fmt.Sprintf("#L%d", from)
		if to > from {
			u += fmt.Sprintf("-L%d", to)
		}
	}
	back := Find("x.go", u)
	if len(back) != 1 || back[0].Module != module || back[0].Version != ver || back[0].Path != strings.Trim(p, "/") ||
		back[0].From != from || (from > 0 && back[0].To != to) || back[0].Text != u {
		return "", fmt.Errorf("%s does not read back as %s@%s/%s", u, module, ver, p)
	}
	return u, nil
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

// fence opens or closes a fenced code block: ``` or ~~~, indented or not.
var fence = regexp.MustCompile("^\\s*(`{3,}|~{3,})")

// MarkdownCode returns, for each line of a Markdown file, the byte ranges
// of it that are code: a fenced code block's lines (its fences too), code
// spans (`x`, “ x “, which may run over a line end but not a blank line)
// and HTML comments (<!-- check: ... -->).
func MarkdownCode(lines []string) [][][2]int {
	code := make([][][2]int, len(lines))
	open := ""      // the fence of the code block we are in
	var block []int // the lines of the paragraph being gathered
	flush := func() {
		if len(block) > 0 {
			inlineCode(lines, block, code)
		}
		block = block[:0]
	}
	for i, line := range lines {
		if open != "" {
			code[i] = [][2]int{{0, len(line)}}
			if m := fence.FindStringSubmatch(line); m != nil && m[1][0] == open[0] && len(m[1]) >= len(open) &&
				strings.TrimSpace(line[len(m[0]):]) == "" {
				open = ""
			}
			continue
		}
		if m := fence.FindStringSubmatch(line); m != nil {
			flush()
			open = m[1]
			code[i] = [][2]int{{0, len(line)}}
			continue
		}
		if strings.TrimSpace(line) == "" {
			flush()
			continue
		}
		block = append(block, i)
	}
	flush()
	return code
}

// Fenced says, for each line of a Markdown file, whether it is a fenced
// code block's (or one of its fences).
func Fenced(lines []string) []bool {
	f := make([]bool, len(lines))
	open := ""
	for i, line := range lines {
		m := fence.FindStringSubmatch(line)
		switch {
		case open != "":
			f[i] = true
			if m != nil && m[1][0] == open[0] && len(m[1]) >= len(open) && strings.TrimSpace(line[len(m[0]):]) == "" {
				open = ""
			}
		case m != nil:
			f[i] = true
			open = m[1]
		}
	}
	return f
}

// htmlStart starts a CommonMark HTML block of type 6 (a block-level tag),
// in which Markdown is not read until a blank line: a link there must be
// <a href="...">.
var htmlStart = regexp.MustCompile(`(?i)^ {0,3}</?(address|article|aside|blockquote|body|caption|center|col|colgroup|dd|details|dialog|dir|div|dl|dt|fieldset|figcaption|figure|footer|form|h[1-6]|head|header|hr|html|legend|li|main|menu|nav|ol|p|section|summary|table|tbody|td|tfoot|th|thead|title|tr|ul)(\s|/?>|$)`)

// HTMLBlocks says, for each line of a Markdown file, whether it is in an
// HTML block (outside fenced code), where Markdown's links and code spans
// are not read.
func HTMLBlocks(lines []string) []bool {
	fenced := Fenced(lines)
	html := make([]bool, len(lines))
	in := false
	for i, line := range lines {
		switch {
		case fenced[i] || strings.TrimSpace(line) == "":
			in = false
		case in || htmlStart.MatchString(line):
			in = true
			html[i] = true
		}
	}
	return html
}

// inlineCode marks the code spans and HTML comments of one paragraph (its
// lines, consecutive) in code.
func inlineCode(lines []string, block []int, code [][][2]int) {
	text := strings.Join(lines[block[0]:block[len(block)-1]+1], "\n")
	mark := func(from, to int) { // text[from:to] is code
		off := 0
		for _, i := range block {
			end := off + len(lines[i])
			if from < end+1 && to > off {
				code[i] = append(code[i], [2]int{max(from, off) - off, min(to, end) - off})
			}
			off = end + 1
		}
	}
	for k := 0; k < len(text); {
		switch {
		case strings.HasPrefix(text[k:], "<!--"):
			end := strings.Index(text[k:], "-->")
			if end < 0 {
				end = len(text) - k
			} else {
				end += 3
			}
			mark(k, k+end)
			k += end
		case text[k] == '\\' && k+1 < len(text):
			k += 2
		case text[k] == '`':
			n := k
			for n < len(text) && text[n] == '`' {
				n++
			}
			run := text[k:n]
			// The closing run is one of exactly the same length.
			closing := -1
			for s := n; s < len(text); {
				j := strings.Index(text[s:], run)
				if j < 0 {
					break
				}
				j += s
				e := j + len(run)
				if e < len(text) && text[e] == '`' {
					for e < len(text) && text[e] == '`' {
						e++
					}
					s = e
					continue
				}
				closing = j
				break
			}
			if closing < 0 {
				k = n
				continue
			}
			mark(k, closing+len(run))
			k = closing + len(run)
		default:
			k++
		}
	}
}

// Modules finds module versions in the Go module cache, downloading those
// it lacks (go mod download, as the go command would).
type Modules struct {
	cache string
	dirs  map[string]string // MODULE@VERSION -> its directory, "" if none
}

// NewModules returns a Modules for the cache `go env GOMODCACHE` names.
func NewModules() (*Modules, error) {
	out, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		return nil, fmt.Errorf("go env GOMODCACHE: %v", err)
	}
	return &Modules{cache: strings.TrimSpace(string(out)), dirs: map[string]string{}}, nil
}

// Dir returns the module version's directory in the cache, downloading it
// the first time; "" if the Go proxy has no such version.
func (ms *Modules) Dir(module, ver string) string {
	key := module + "@" + ver
	if dir, ok := ms.dirs[key]; ok {
		return dir
	}
	dir := filepath.Join(ms.cache, key)
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
	ms.dirs[key] = dir
	return dir
}

// Declares matches a Go file's declaration of the symbol it is formatted
// with (regexp.QuoteMeta'd).
const Declares = `(?m)^(func( \([^)]*\))?|type|var|const) %[1]s\b|^\s+%[1]s\s*(=|[A-Za-z*])`

// Symbol splits a PACKAGE.Symbol path (tools/cache.NewIndexer); ok is false
// for any other path.
func Symbol(p string) (pkg, sym string, ok bool) {
	m := symbolPath.FindStringSubmatch(p)
	if m == nil {
		return "", "", false
	}
	return m[1], m[2], true
}

var symbolPath = regexp.MustCompile(`^(.*)\.([A-Z][A-Za-z0-9_]*)$`)

// Pins are the course's pinned tags, by GitHub repository (ORG/REPO), as
// versions.env names them. A link to another tag says which in its text.
type Pins map[string]string

// ReadPins reads root/versions.env; it returns no pins if there is none.
func ReadPins(root string) Pins {
	pins := Pins{}
	body, err := os.ReadFile(filepath.Join(root, "versions.env"))
	if err != nil {
		return pins
	}
	for _, line := range strings.Split(string(body), "\n") {
		k, v, _ := strings.Cut(strings.TrimSpace(line), "=")
		switch k {
		case "KUBERNETES_VERSION":
			pins["kubernetes/kubernetes"] = v
		case "KIND_VERSION":
			pins["kubernetes-sigs/kind"] = v
		case "ETCD_VERSION":
			pins["etcd-io/etcd"] = v
		}
	}
	return pins
}

// Text returns a link's text for a file and its lines: its base name and
// lines, cacher.go:558-568.
func Text(p string, from, to int) string {
	t := path.Base(p)
	switch {
	case from > 0 && to > from:
		t += fmt.Sprintf(":%d-%d", from, to)
	case from > 0:
		t += fmt.Sprintf(":%d", from)
	}
	return t
}

// Link returns the text and the target of the Markdown link that says what
// a plain citation says: for a file, its base name and lines
// ([cacher.go:558-568](https://github.com/.../cacher.go#L558-L568)); for a
// directory, its path (in the repository; in a k8s.io/* module, in the
// module); for PACKAGE.Symbol, `pkg.Symbol` and the
// line that declares it. A link to a tag that is not the pinned one says
// which (cacher.go:1203 in v1.21.0). modDir is the module's directory.
func Link(r Ref, modDir string, pins Pins) (text, url string, err error) {
	full := filepath.Join(modDir, r.Path)
	p, from, to := r.Path, r.From, r.To
	info, err := os.Stat(full)
	isDir := err == nil && info.IsDir()
	switch {
	case isDir:
		if from > 0 {
			return "", "", fmt.Errorf("%s is a directory: it has no lines", r.Path)
		}
		// Its path in the repository, but in the k8s.io/* modules (in
		// Kubernetes' staging/src/k8s.io/X) its path in the module.
		repoPath := r.Path
		if _, _, base, _ := Repo(r.Module, r.Version); !strings.HasPrefix(base, "staging/") {
			repoPath = path.Join(base, r.Path)
		}
		text = repoPath
		if text == "" {
			text = r.Module
		}
	case err == nil:
		text = Text(p, from, to)
	default:
		pkg, sym, ok := Symbol(r.Path)
		if !ok || from > 0 {
			return "", "", fmt.Errorf("%s@%s has no %s", r.Module, r.Version, r.Path)
		}
		p, from, to = declaration(modDir, pkg, sym)
		if p == "" {
			return "", "", fmt.Errorf("%s@%s/%s declares no %s", r.Module, r.Version, pkg, sym)
		}
		text = "`" + path.Base(pkg) + "." + sym + "`"
	}
	url, err = URL(r.Module, r.Version, p, isDir, from, to)
	if err != nil {
		return "", "", err
	}
	repo, tag, _, _ := Repo(r.Module, r.Version)
	if pin, ok := pins[repo]; ok && pin != tag {
		text += " in " + tag
	}
	return text, url, nil
}

// declaration returns the file (its path in the module) and the line that
// declare sym in package pkg of the module in modDir.
func declaration(modDir, pkg, sym string) (file string, from, to int) {
	gofiles, _ := filepath.Glob(filepath.Join(modDir, pkg, "*.go"))
	decl := regexp.MustCompile(fmt.Sprintf(Declares, regexp.QuoteMeta(sym)))
	for _, f := range gofiles {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		body, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		if loc := decl.FindIndex(body); loc != nil {
			// The match may start with the newline before an indented name.
			n := strings.Count(string(body[:loc[0]]), "\n") + 1
			if body[loc[0]] == '\n' {
				n++
			}
			return path.Join(pkg, filepath.Base(f)), n, n
		}
	}
	return "", 0, 0
}
