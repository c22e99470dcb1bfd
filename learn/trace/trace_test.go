package main

import (
	"bufio"
	"bytes"
	"context"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// traceWrites keeps the tests' runs short; the command's default is 100.
const traceWrites = 5

// labTrace runs the course stack once for the test binary, the first time
// a test needs a trace, and gives every test that summary (which they only
// read): three tests, one etcd, API server and informer started.
func labTrace(t *testing.T) StackTrace {
	t.Helper()
	courseTrace.once.Do(func() {
		run, err := runLabStack(context.Background(), traceWrites)
		if err != nil {
			courseTrace.err = err
			return
		}
		courseTrace.st, courseTrace.err = summarize(run, func(h PathHop) string { return h.Course })
	})
	if courseTrace.err != nil {
		t.Fatal(courseTrace.err)
	}
	return courseTrace.st
}

var courseTrace struct {
	once sync.Once
	st   StackTrace
	err  error
}

// TestTraceEveryHopInOrder: every write through the course stack reaches
// every step, and the summary has one hop per step, in the order of
// the data path; the percentiles are ordered; the mermaid diagram is one
// unbroken chain of arrows, writer to handler.
func TestTraceEveryHopInOrder(t *testing.T) {
	t.Parallel()
	st := labTrace(t)
	var names, want []string
	for _, h := range st.Hops {
		names = append(names, h.Name)
	}
	for _, h := range steps {
		want = append(want, h.Name)
	}
	if strings.Join(names, "\n") != strings.Join(want, "\n") {
		t.Fatalf("hops:\n%s\nwant, in this order:\n%s", strings.Join(names, "\n"), strings.Join(want, "\n"))
	}
	if st.Writes != traceWrites || len(st.Samples) != traceWrites {
		t.Errorf("%d writes, %d samples; want %d", st.Writes, len(st.Samples), traceWrites)
	}
	for _, h := range st.Hops {
		if h.Latency.P50 > h.Latency.P99 || h.At.P50 > h.At.P99 {
			t.Errorf("hop %s: p50 above p99: latency %+v, at %+v", h.Name, h.Latency, h.At)
		}
		if len(h.Covers) != 1 || h.Where == "" {
			t.Errorf("hop %s: covers %v, observed at %q; the course stack is seen at every step", h.Name, h.Covers, h.Where)
		}
	}
	checkChain(t, mermaid(st), len(steps))
}

// checkChain: the diagram has n arrows and each starts where the one before
// it ended (no hop left out between two participants).
func checkChain(t *testing.T, diagram string, n int) {
	t.Helper()
	arrow := regexp.MustCompile(`(?m)^\s*(P\d+)->>(P\d+):`)
	arrows := arrow.FindAllStringSubmatch(diagram, -1)
	if len(arrows) != n {
		t.Errorf("the diagram has %d arrows, want %d:\n%s", len(arrows), n, diagram)
	}
	for i := 1; i < len(arrows); i++ {
		if arrows[i][1] != arrows[i-1][2] {
			t.Errorf("arrow %d starts at %s, but arrow %d ended at %s: a hop is missing:\n%s", i+1, arrows[i][1], i, arrows[i-1][2], diagram)
		}
	}
}

// TestTraceHiddenHops: a stack seen only from outside (the real one) has
// one hop covering the steps it hides, and the page and the diagram say so.
func TestTraceHiddenHops(t *testing.T) {
	samples := make([]map[string]Mark, 3)
	for i := range samples {
		samples[i] = map[string]Mark{replyMark: {At: time.Duration(5+i) * time.Millisecond}}
		for j, h := range steps[4:] {
			samples[i][h.Name] = Mark{At: time.Duration(6+i+j) * time.Millisecond}
		}
	}
	st, err := summarize(&stackRun{Stack: "kube-apiserver + client-go", Samples: samples}, func(h PathHop) string { return h.Real })
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Hops) != 5 || len(st.Hops[0].Covers) != 5 || st.Hops[0].Name != "WatchServer -> ListWatch" {
		t.Fatalf("hops %+v; want the first to cover steps 1-5", st.Hops)
	}
	if got := st.Hops[0].Latency; got.P50 != 7*time.Millisecond || got.P99 != 8*time.Millisecond {
		t.Errorf("steps 1-5: %+v, want p50 7ms p99 8ms (from the POST)", got)
	}
	if got := st.Hops[1].Latency; got.P50 != time.Millisecond {
		t.Errorf("step 6: %+v, want 1ms (from step 5)", got)
	}
	checkChain(t, mermaid(st), 6)
	html := page([]StackTrace{st}, time.Now(), func(p string) string { return p })
	if !strings.Contains(html, "<b>Hidden</b>") {
		t.Errorf("the key does not explain the hidden steps")
	}
	if n := strings.Count(html, `<td class="hidden"`); n != 1 {
		t.Errorf("the page says %d times that steps are hidden, want once (one cell spanning them)", n)
	}
}

// TestTracePercentiles: nearest rank, so p50 and p99 are measured values
// and p50 <= p99.
func TestTracePercentiles(t *testing.T) {
	var v []time.Duration
	for i := 100; i >= 1; i-- {
		v = append(v, time.Duration(i))
	}
	if got := percentiles(v); got.P50 != 50 || got.P99 != 99 {
		t.Errorf("1..100: %+v, want p50 50 p99 99", got)
	}
	if got := percentiles(v[99:]); got.P50 != 1 || got.P99 != 1 {
		t.Errorf("one value: %+v", got)
	}
	if got := percentiles([]time.Duration{3, 1, 2}); got.P50 != 2 || got.P99 != 3 {
		t.Errorf("1,2,3: %+v, want p50 2 p99 3", got)
	}
}

// repoRoot is the repository's root: learn/trace is two levels down.
func repoRoot(t *testing.T) string {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

func modCache(t *testing.T) string {
	out, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}

// readLines reads a file's lines (1-based: lines[0] is "").
func readLines(t *testing.T, file string) []string {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	lines := []string{""}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	return lines
}

// TestTraceCodeRefs: every lab reference is a file of the repository with
// the function in it; every upstream reference's lines, in the module
// cache at the pinned version, are the whole function.
func TestTraceCodeRefs(t *testing.T) {
	root, cache := repoRoot(t), modCache(t)
	for _, h := range steps {
		if len(h.Lab) == 0 || len(h.Upstream) == 0 {
			t.Errorf("step %s: %d lab and %d upstream references, want both", h.Name, len(h.Lab), len(h.Upstream))
		}
		for _, r := range h.Lab {
			data, err := os.ReadFile(filepath.Join(root, r.File))
			if err != nil {
				t.Errorf("step %s: %v", h.Name, err)
			} else if !bytes.Contains(data, []byte("\n"+r.Decl)) {
				t.Errorf("step %s: %s has no %q", h.Name, r.File, r.Decl)
			}
		}
		for _, r := range h.Upstream {
			lines := readLines(t, filepath.Join(cache, r.Module+"@"+stagingVersion, r.File))
			if r.End >= len(lines) || !strings.HasPrefix(lines[r.Start], r.Decl) || lines[r.End] != "}" {
				t.Errorf("step %s: %s: line %d is not %q or line %d does not close it", h.Name, r.Cite(), r.Start, r.Decl, r.End)
				continue
			}
			for i := r.Start + 1; i < r.End; i++ {
				if lines[i] == "}" {
					t.Errorf("step %s: %s: the function ends at line %d, before %d", h.Name, r.Cite(), i, r.End)
					break
				}
			}
		}
	}
}

// TestTracePageContent: the page has the key, every step in order with its
// links, both stacks' numbers, and why they differ; every link resolves: a
// relative one to a file of the repository (from the directory the page is
// written to), an upstream one to lines, in the module cache, that hold the
// identifier named before it.
func TestTracePageContent(t *testing.T) {
	t.Parallel()
	root, cache := repoRoot(t), modCache(t)
	out := filepath.Join(root, ".cluster", "trace")
	st := labTrace(t)
	doc := page([]StackTrace{st}, time.Now(), repoLink(out))
	for _, want := range []string{"<h2>Key</h2>", "median latency", "99th percentile", "<h2>Hop by hop</h2>", "<h2>Why the two stacks differ</h2>",
		"The filter chain", "Admission", "Protobuf in etcd", "TLS and HTTP/2", "<h2>Where the time goes</h2>", "the event reached the Cacher first"} {
		if !strings.Contains(doc, want) {
			t.Errorf("the page has no %q", want)
		}
	}
	last := -1
	for _, h := range steps {
		i := strings.Index(doc, "<b>"+strings.ReplaceAll(h.Name, ">", "&gt;")+"</b>")
		if i < last {
			t.Errorf("step %s is missing or out of order", h.Name)
		}
		last = i
	}
	href := regexp.MustCompile(`href="([^"]+)"`)
	github := regexp.MustCompile(`^https://github\.com/kubernetes/kubernetes/blob/` + regexp.QuoteMeta(k8sVersion) + `/(staging/src/(k8s\.io/[a-z-]+)/)?([^#]+)#L(\d+)(?:-L(\d+))?$`)
	etcd := regexp.MustCompile(`^https://github\.com/etcd-io/etcd/blob/` + regexp.QuoteMeta(etcdVersion) + `/()()server/([^#]+)#L(\d+)(?:-L(\d+))?$`)
	code := regexp.MustCompile(`<code>([A-Za-z_][A-Za-z0-9_.]*)</code>`)
	links := href.FindAllStringSubmatchIndex(doc, -1)
	if len(links) < 2*len(steps) {
		t.Errorf("%d links on the page, want at least %d (a lab and an upstream one per step)", len(links), 2*len(steps))
	}
	for _, l := range links {
		target := doc[l[2]:l[3]]
		if !strings.HasPrefix(target, "https://") {
			file := filepath.Join(out, filepath.FromSlash(target))
			if _, err := os.Stat(file); err != nil || !strings.HasPrefix(file, root+string(filepath.Separator)) {
				t.Errorf("link %s: %s is no file of the repository (%v)", target, file, err)
			}
			continue
		}
		var module, version string
		m := github.FindStringSubmatch(target)
		switch {
		case m != nil && m[2] != "":
			module, version = m[2], stagingVersion
		case m != nil:
			module, version = "k8s.io/kubernetes", k8sVersion
		default:
			if m = etcd.FindStringSubmatch(target); m == nil {
				t.Errorf("link %s is not a pinned kubernetes %s or etcd %s line link", target, k8sVersion, etcdVersion)
				continue
			}
			module, version = "go.etcd.io/etcd/server/v3", etcdVersion
		}
		lines := readLines(t, filepath.Join(cache, module+"@"+version, m[3]))
		start, _ := strconv.Atoi(m[4])
		end := start
		if m[5] != "" {
			end, _ = strconv.Atoi(m[5])
		}
		if end >= len(lines) || start > end {
			t.Errorf("link %s: lines %d-%d, the file has %d", target, start, end, len(lines)-1)
			continue
		}
		// The identifier named nearest before the link (in the same
		// sentence or cell) must be in the lines.
		ids := code.FindAllStringSubmatch(doc[max(0, l[0]-600):l[0]], -1)
		if len(ids) == 0 {
			t.Errorf("link %s names no identifier before it", target)
			continue
		}
		id := ids[len(ids)-1][1]
		id = id[strings.LastIndex(id, ".")+1:]
		if !strings.Contains(strings.Join(lines[start:end+1], "\n"), id) {
			t.Errorf("link %s: lines %d-%d do not contain %s", target, start, end, id)
		}
	}
}

// TestTracePageIsNotBlank: the HTML page, screenshotted by headless
// Chromium, has ink on it (bars, text), not a white page.
func TestTracePageIsNotBlank(t *testing.T) {
	t.Parallel()
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("no chromium here (Debian: apt-get install chromium)")
	}
	st := labTrace(t)
	dir := t.TempDir()
	pagePath := filepath.Join(dir, "trace.html")
	if err := os.WriteFile(pagePath, []byte(page([]StackTrace{st}, timeNow(), repoLink(dir))), 0o644); err != nil {
		t.Fatal(err)
	}
	shot := filepath.Join(dir, "trace.png")
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars",
		"--user-data-dir="+filepath.Join(dir, "profile"), "--window-size=1200,900", "--screenshot="+shot, "file://"+pagePath).CombinedOutput()
	if err != nil {
		t.Fatalf("chromium: %v\n%s", err, out)
	}
	data, err := os.ReadFile(shot)
	if err != nil {
		t.Fatalf("no screenshot: %v\n%s", err, out)
	}
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	b := img.Bounds()
	ink, blue := 0, 0
	for y := b.Min.Y; y < b.Max.Y; y += 2 {
		for x := b.Min.X; x < b.Max.X; x += 2 {
			r, g, bl, _ := img.At(x, y).RGBA()
			if r < 0xe000 || g < 0xe000 || bl < 0xe000 {
				ink++
			}
			if bl > 0xa000 && r < 0x6000 { // the bars' blue
				blue++
			}
		}
	}
	total := (b.Dx() / 2) * (b.Dy() / 2)
	if ink < total/100 || blue == 0 {
		t.Fatalf("the screenshot looks blank: %d of %d sampled pixels not white, %d blue", ink, total, blue)
	}
}
