package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestFindReadsModulesByTheirWholeName: a citation is read by the module's
// whole name: kind's sigs.k8s.io modules are checked as themselves, and a
// k8s.io that ends a longer host (an image of registry.k8s.io) is no
// citation at all.
func TestFindReadsModulesByTheirWholeName(t *testing.T) {
	for _, c := range []struct {
		line           string
		module, path   string
		from, to, refs int
	}{
		{"`Provision` (sigs.k8s.io/kind@v0.33.0/pkg/cluster/internal/create/create.go:102-142)", "sigs.k8s.io/kind", "pkg/cluster/internal/create/create.go", 102, 142, 1},
		{"`Anonymous`, k8s.io/apiserver@v0.37.0/pkg/authentication/user/user.go:77", "k8s.io/apiserver", "pkg/authentication/user/user.go", 77, 77, 1},
		{"the image registry.k8s.io/pause@v3.10.2/pause is no module", "", "", 0, 0, 0},
		{"`defaultBookmarkFrequency` in https://github.com/kubernetes/kubernetes/blob/v1.37.0/staging/src/k8s.io/apiserver/pkg/storage/cacher/cacher.go#L76-L78", "k8s.io/apiserver", "pkg/storage/cacher/cacher.go", 76, 78, 1},
	} {
		refs := find("x.md", c.line)
		if len(refs) != c.refs {
			t.Errorf("%q: %d citations %+v, want %d", c.line, len(refs), refs, c.refs)
			continue
		}
		if c.refs == 0 {
			continue
		}
		r := refs[0]
		if r.Module != c.module || r.Path != c.path || r.From != c.from || r.To != c.to {
			t.Errorf("%q: read as %s %s:%d-%d, want %s %s:%d-%d", c.line, r.Module, r.Path, r.From, r.To, c.module, c.path, c.from, c.to)
		}
	}
}

// Citations are spelt in pieces below, so that this file, which the check
// reads too, holds none whole.
const (
	plainReflector = "k8s.io/client-go" + "@v0.37.0/tools/cache/reflector.go"
	linkReflector  = "https://github.com/kubernetes/kubernetes/blob" + "/v1.37.0/staging/src/k8s.io/client-go/tools/cache/reflector.go"
)

// checkTree writes files into a new git checkout and checks it.
func checkTree(t *testing.T, files map[string]string) (string, int) {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "."}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	var out, errs strings.Builder
	code := run(dir, &out, &errs)
	return out.String() + errs.String(), code
}

// TestBareCitationInMarkdownFails: in a README a citation is a link. A
// plain one in its prose fails, on one line that gives the link to write;
// written as that link, it passes. In code (a fenced block, a code span, an
// HTML comment) and in Go files it stays plain, checked as before.
func TestBareCitationInMarkdownFails(t *testing.T) {
	prose := "After a 410 the Reflector's `isExpiredError` case does not\nmark the version unavailable ("
	out, code := checkTree(t, map[string]string{"labs/01-x/README.md": prose + plainReflector + ":646-651).\n"})
	link := "[reflector.go:646-651](" + linkReflector + "#L646-L651)"
	want := "check-links: labs/01-x/README.md:2: " + plainReflector + ":646-651: write it as a link: " + link + "\n"
	if code != 1 || out != want {
		t.Fatalf("a plain citation in a README: exit %d, output:\n%s\nwant exit 1 and\n%s", code, out, want)
	}
	// The same without lines, and a directory: links too.
	out, code = checkTree(t, map[string]string{"README.md": "See " + plainReflector + ". And " + strings.TrimSuffix(plainReflector, "/reflector.go") + "/ too.\n"})
	for _, want := range []string{
		"README.md:1: " + plainReflector + ".: write it as a link: [reflector.go](" + linkReflector + ")",
		"write it as a link: [tools/cache](https://github.com/kubernetes/kubernetes/tree" + "/v1.37.0/staging/src/k8s.io/client-go/tools/cache)",
	} {
		if code != 1 || !strings.Contains(out, want) {
			t.Errorf("plain citations of a file and a directory: exit %d, output:\n%s\nwant a failure naming %q", code, out, want)
		}
	}

	fixed := map[string]string{
		"labs/01-x/README.md": prose + link + ").\n\n" +
			"```go\n// `isExpiredError` (" + plainReflector + ":646-651)\n```\n\n" +
			"In a code span, `isExpiredError` `" + plainReflector + ":646-651` stays.\n" +
			"<!-- `isExpiredError` " + plainReflector + ":646-651 -->\n",
		"x.go": "package x\n\n// `isExpiredError` (" + plainReflector + ":646-651)\n",
	}
	if out, code := checkTree(t, fixed); code != 0 || !strings.Contains(out, "all 5 upstream references (1 of them links)") {
		t.Fatalf("the link it gives, and plain citations in code: exit %d, output:\n%s\nwant success", code, out)
	}
}

// TestDriftedLinkFails: a link is checked as a plain citation is: its lines
// must hold the identifier its sentence names, and its text must name the
// lines it links to.
func TestDriftedLinkFails(t *testing.T) {
	for name, tc := range map[string]struct{ body, want string }{
		"lines that no longer hold the identifier": {
			"The `isExpiredError` case ([reflector.go:600-601](" + linkReflector + "#L600-L601)).\n",
			"lines 600-601 do not hold `isExpiredError`"},
		"text that names other lines": {
			"The `isExpiredError` case ([reflector.go:646-651](" + linkReflector + "#L640-L651)).\n",
			"its text [reflector.go:646-651] names another file or other lines than it links to (reflector.go:640-651)"},
		"text that names another file": {
			"The `isExpiredError` case ([watch.go:646-651](" + linkReflector + "#L646-L651)).\n",
			"its text [watch.go:646-651] names another file"},
		"a Markdown link in an HTML block": {
			"<details><summary>Answer</summary>\n<code>isExpiredError</code> ([reflector.go:646-651](" + linkReflector + "#L646-L651))\n</details>\n",
			"in an HTML block (up to a blank line) Markdown's [reflector.go:646-651](...) is not read"},
		"a plain citation in an HTML block": {
			"<p><code>isExpiredError</code> (" + plainReflector + ":646-651)</p>\n",
			"write it as a link: <a href=\"" + linkReflector + "#L646-L651\">reflector.go:646-651</a>"},
		"a link into kind": {
			"`Provision` ([create.go:102-142](https://github.com/kubernetes-sigs/kind/blob" + "/v0.33.0/pkg/cluster/internal/create/create.go#L10-L12)).\n",
			"lines 10-12 do not hold `Provision`"},
		"a link into etcd": {
			"`progressReportInterval` ([watch.go:94](https://github.com/etcd-io/etcd/blob" + "/v3.7.0/server/etcdserver/api/v3rpc/watch.go#L20)).\n",
			"line 20 does not hold `progressReportInterval`"},
	} {
		out, code := checkTree(t, map[string]string{"README.md": tc.body})
		if code != 1 || !strings.Contains(out, tc.want) {
			t.Errorf("%s: exit %d, output:\n%s\nwant a failure naming %q", name, code, out, tc.want)
		}
	}
	good := "`Provision` ([create.go:102-142](https://github.com/kubernetes-sigs/kind/blob" + "/v0.33.0/pkg/cluster/internal/create/create.go#L102-L142)),\n" +
		"`progressReportInterval` ([watch.go:94](https://github.com/etcd-io/etcd/blob" + "/v3.7.0/server/etcdserver/api/v3rpc/watch.go#L94)),\n" +
		"`isExpiredError` ([client-go reflector.go:646-651](" + linkReflector + "#L646-L651)).\n" +
		"<details><summary>Answer</summary>\n<code>isExpiredError</code> (<a href=\"" + linkReflector + "#L646-L651\">reflector.go:646-651</a>)\n</details>\n"
	if out, code := checkTree(t, map[string]string{"README.md": good}); code != 0 {
		t.Errorf("good links: exit %d, output:\n%s", code, out)
	}
}
