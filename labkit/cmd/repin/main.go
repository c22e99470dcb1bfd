// Command repin moves the course's upstream citations from one pinned release
// to the next: every citation scripts/check-links.sh reads (a module path
// MODULE@VERSION/PATH:N-M (k8s.io/apiserver, say), or a pinned GitHub link, with its link
// text) that names an old version gets the new one, and its line numbers are
// carried across by a diff of the file between the two versions, the way
// `git blame` follows a line. A line the diff leaves unchanged moves exactly;
// one inside a changed hunk is placed in the new hunk at the same offset
// and listed as "edited" so that a person reads it again; a file that is
// gone is listed and left as it was.
//
// It changes only the versions and numbers. Whether the sentence is still
// true at the new release is for a person to read (the identifier rule of
// check-links catches a renamed function, not a changed behaviour).
//
//	go run ./labkit/cmd/repin [-n] -map OLD=NEW[,OLD=NEW...] [DIR]
//
//	-map  module versions to move, e.g.
//	      v0.37.0=v0.38.0,v1.37.0=v1.38.0,v3.7.0=v3.8.0
//	      (a GitHub link's tag maps the same way)
//	-n    change nothing; print what it would do
//
// Output: one line per citation it could not move exactly (edited, gone),
// then counts.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/listwatch-labs/listwatch-labs/labkit/internal/citations"
)

func main() {
	dry := flag.Bool("n", false, "change nothing")
	maps := flag.String("map", "", "OLD=NEW version pairs, comma-separated")
	flag.Parse()
	root := "."
	if flag.NArg() > 0 {
		root = flag.Arg(0)
	}
	vmap := map[string]string{}
	for _, kv := range strings.Split(*maps, ",") {
		o, n, ok := strings.Cut(kv, "=")
		if !ok {
			fmt.Fprintln(os.Stderr, "repin: -map wants OLD=NEW pairs")
			os.Exit(2)
		}
		vmap[o] = n
	}
	mods, err := citations.NewModules()
	if err != nil {
		fmt.Fprintln(os.Stderr, "repin:", err)
		os.Exit(2)
	}
	out, err := exec.Command("git", "-C", root, "ls-files").Output()
	if err != nil {
		fmt.Fprintln(os.Stderr, "repin: git ls-files:", err)
		os.Exit(2)
	}
	r := &repinner{mods: mods, vmap: vmap, maps: map[string]*lineMap{}}
	var files []string
	for _, f := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		switch {
		case strings.HasSuffix(f, ".sum"), strings.HasPrefix(f, "testdata/") && strings.Contains(f, "seeds"):
			continue
		}
		files = append(files, f)
	}
	for _, f := range files {
		p := filepath.Join(root, f)
		body, err := os.ReadFile(p)
		if err != nil || strings.IndexByte(string(body), 0) >= 0 {
			continue
		}
		nb := r.file(f, string(body))
		if nb != string(body) && !*dry {
			if err := os.WriteFile(p, []byte(nb), 0o644); err != nil {
				fmt.Fprintln(os.Stderr, "repin:", err)
				os.Exit(2)
			}
		}
	}
	sort.Strings(r.notes)
	for _, n := range r.notes {
		fmt.Println(n)
	}
	fmt.Printf("repin: %d citations moved exactly, %d edited (read again), %d gone (left as they were)\n", r.exact, r.edited, r.gone)
}

type repinner struct {
	mods                *citations.Modules
	vmap                map[string]string
	maps                map[string]*lineMap
	notes               []string
	exact, edited, gone int
}

// file returns body with its citations moved.
func (r *repinner) file(name, body string) string {
	refs := citations.Find(name, body)
	if len(refs) == 0 {
		return body
	}
	lines := strings.Split(body, "\n")
	// Right to left on each line, so that earlier offsets stay valid.
	sort.SliceStable(refs, func(i, j int) bool {
		if refs[i].Line != refs[j].Line {
			return refs[i].Line < refs[j].Line
		}
		return refs[i].Start > refs[j].Start
	})
	for _, ref := range refs {
		nv, ok := r.vmap[ref.Version]
		if !ok {
			continue
		}
		line := lines[ref.Line]
		if line[ref.Start:ref.End] != ref.Text {
			continue
		}
		from, to := ref.From, ref.To
		var state string
		if from > 0 {
			m := r.lineMap(ref.Module, ref.Version, nv, ref.Path)
			if m == nil {
				r.gone++
				r.notes = append(r.notes, fmt.Sprintf("%s: gone: %s (no %s at %s)", ref.Where, ref.Text, ref.Path, nv))
				continue
			}
			var e1, e2 bool
			from, e1 = m.at(ref.From)
			to, e2 = m.at(ref.To)
			if to < from {
				to = from
			}
			if e1 || e2 {
				state = "edited"
			}
		} else if r.lineMap(ref.Module, ref.Version, nv, ref.Path) == nil && !r.exists(ref.Module, nv, ref.Path) {
			r.gone++
			r.notes = append(r.notes, fmt.Sprintf("%s: gone: %s (no %s at %s)", ref.Where, ref.Text, ref.Path, nv))
			continue
		}
		nt := rewrite(ref, nv, from, to)
		line = line[:ref.Start] + nt + line[ref.End:]
		// A link's text names its lines: [cacher.go:558-568](URL) or
		// <a href="URL">cacher.go:558-568</a>.
		if ref.Link && ref.From > 0 {
			oldNums := nums(ref.From, ref.To)
			newNums := nums(from, to)
			pre := line[:ref.Start]
			if i := strings.LastIndex(pre, "]("); i >= 0 && i == len(pre)-2 {
				if j := strings.LastIndex(pre[:i], "["); j >= 0 {
					text := pre[j+1 : i]
					text = strings.Replace(text, ":"+oldNums, ":"+newNums, 1)
					line = pre[:j+1] + text + line[i:]
				}
			} else {
				rest := line[ref.Start+len(nt):]
				if k := strings.Index(rest, "</a>"); k >= 0 {
					seg := strings.Replace(rest[:k], ":"+oldNums, ":"+newNums, 1)
					line = line[:ref.Start+len(nt)] + seg + rest[k:]
				}
			}
		}
		lines[ref.Line] = line
		switch state {
		case "edited":
			r.edited++
			r.notes = append(r.notes, fmt.Sprintf("%s: edited: %s -> %s", ref.Where, ref.Text, nt))
		default:
			r.exact++
		}
	}
	return strings.Join(lines, "\n")
}

func nums(from, to int) string {
	if to > from {
		return fmt.Sprintf("%d-%d", from, to)
	}
	return strconv.Itoa(from)
}

var (
	linkLines = regexp.MustCompile(`#L\d+(-L\d+)?$`)
	modLines  = regexp.MustCompile(`:\d+(-\d+)?$`)
)

// rewrite returns ref's text at version nv and lines from-to.
func rewrite(ref citations.Ref, nv string, from, to int) string {
	t := ref.Text
	if ref.Link {
		// The tag: v1.N.M for staging (module v0.N.M) and kubernetes, the module's own
		// for etcd and kind.
		old := ref.Version
		tag := nv
		if strings.HasPrefix(old, "v0.") && strings.Contains(t, "/kubernetes/kubernetes/") {
			old = "v1." + strings.TrimPrefix(old, "v0.")
			tag = "v1." + strings.TrimPrefix(nv, "v0.")
		}
		t = strings.Replace(t, "/"+old+"/", "/"+tag+"/", 1)
		if ref.From > 0 {
			n := fmt.Sprintf("#L%d", from)
			if to > from {
				n += fmt.Sprintf("-L%d", to)
			}
			t = linkLines.ReplaceAllLiteralString(t, n)
		}
		return t
	}
	t = strings.Replace(t, "@"+ref.Version+"/", "@"+nv+"/", 1)
	if ref.From > 0 {
		trail := ""
		if strings.HasSuffix(t, ".") {
			trail, t = ".", strings.TrimSuffix(t, ".")
		}
		t = modLines.ReplaceAllLiteralString(t, ":"+nums(from, to)) + trail
	}
	return t
}

func (r *repinner) exists(module, ver, p string) bool {
	dir := r.mods.Dir(module, ver)
	if dir == "" {
		return false
	}
	if pkg, _, ok := citations.Symbol(p); ok {
		p = pkg
	}
	_, err := os.Stat(filepath.Join(dir, p))
	return err == nil
}

// lineMap follows the lines of one file from the old version to the new.
type lineMap struct {
	// For each old line (1-based), its new line and whether it was edited.
	to     []int
	edited []bool
}

func (m *lineMap) at(n int) (int, bool) {
	if n < 1 {
		return n, false
	}
	if n >= len(m.to) {
		// Past the end: keep the distance from the end.
		last := len(m.to) - 1
		return m.to[last] + (n - last), true
	}
	return m.to[n], m.edited[n]
}

func (r *repinner) lineMap(module, ov, nv, p string) *lineMap {
	key := module + "@" + ov + ">" + nv + "/" + p
	if m, ok := r.maps[key]; ok {
		return m
	}
	var m *lineMap
	od, nd := r.mods.Dir(module, ov), r.mods.Dir(module, nv)
	if od != "" && nd != "" {
		of, nf := filepath.Join(od, p), filepath.Join(nd, p)
		if st, err := os.Stat(nf); err == nil && !st.IsDir() {
			m = diffMap(of, nf)
		}
	}
	r.maps[key] = m
	return m
}

var hunk = regexp.MustCompile(`^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@`)

// diffMap maps old lines to new ones with diff -U0's hunks.
func diffMap(oldFile, newFile string) *lineMap {
	n := countLines(oldFile)
	m := &lineMap{to: make([]int, n+2), edited: make([]bool, n+2)}
	out, _ := exec.Command("diff", "-U0", oldFile, newFile).Output()
	type h struct{ os, oc, ns, nc int }
	var hs []h
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		g := hunk.FindStringSubmatch(sc.Text())
		if g == nil {
			continue
		}
		a := func(s string, def int) int {
			if s == "" {
				return def
			}
			v, _ := strconv.Atoi(s)
			return v
		}
		hs = append(hs, h{a(g[1], 0), a(g[2], 1), a(g[3], 0), a(g[4], 1)})
	}
	off := 0
	k := 0
	for i := 1; i < len(m.to); i++ {
		for k < len(hs) && hs[k].oc == 0 && hs[k].os < i {
			// Pure insertion after old line hs[k].os.
			off += hs[k].nc
			k++
		}
		if k < len(hs) && hs[k].oc > 0 && i >= hs[k].os && i < hs[k].os+hs[k].oc {
			x := hs[k]
			pos := x.ns + (i - x.os)
			if x.nc == 0 {
				pos = x.ns + 1
			} else if pos >= x.ns+x.nc {
				pos = x.ns + x.nc - 1
			}
			m.to[i], m.edited[i] = pos, true
			if i == x.os+x.oc-1 {
				off += x.nc - x.oc
				k++
			}
			continue
		}
		m.to[i] = i + off
	}
	return m
}

func countLines(p string) int {
	b, err := os.ReadFile(p)
	if err != nil {
		return 0
	}
	return strings.Count(string(b), "\n") + 1
}
