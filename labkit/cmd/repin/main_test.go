package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/listwatch-labs/listwatch-labs/labkit/internal/citations"
)

// TestDiffMapFollowsLines checks the line map on a file where lines were
// inserted, deleted and edited between two versions.
func TestDiffMapFollowsLines(t *testing.T) {
	dir := t.TempDir()
	old := "a\nb\nc\nd\ne\nf\n"
	// b deleted; x, y inserted after c; e edited into E.
	new := "a\nc\nx\ny\nd\nE\nf\n"
	of, nf := filepath.Join(dir, "old"), filepath.Join(dir, "new")
	os.WriteFile(of, []byte(old), 0o644)
	os.WriteFile(nf, []byte(new), 0o644)
	m := diffMap(of, nf)
	for _, c := range []struct {
		line, want int
		edited     bool
	}{
		{1, 1, false}, // a
		{2, 2, true},  // b: gone, placed where it was
		{3, 2, false}, // c
		{4, 5, false}, // d, after the two inserted lines
		{5, 6, true},  // e -> E
		{6, 7, false}, // f
	} {
		got, edited := m.at(c.line)
		if got != c.want || edited != c.edited {
			t.Errorf("old line %d: got %d (edited %v), want %d (edited %v)", c.line, got, edited, c.want, c.edited)
		}
	}
}

// TestRewriteKeepsTheForm checks a plain citation and a link, with their
// lines and the link's text.
func TestRewriteKeepsTheForm(t *testing.T) {
	plain := "k8s.io/apiserver" + "@v0." + "36.4/pkg/storage/cacher/cacher.go:10-12."
	link := "[cacher.go:10-12](https://github.com/kubernetes/kubernetes/blob" + "/v1." + "36.4/staging/src/k8s.io/apiserver/pkg/storage/cacher/cacher.go#L10-L12)"
	refs := citations.Find("a.md", "`x` "+link+"\n")
	if len(refs) != 1 {
		t.Fatalf("found %d citations in %q", len(refs), link)
	}
	got := rewrite(refs[0], "v0.37.0", 20, 23)
	if want := "https://github.com/kubernetes/kubernetes/blob/" + "v1.37.0/staging/src/k8s.io/apiserver/pkg/storage/cacher/cacher.go#L20-L23"; got != want {
		t.Errorf("link: got %s, want %s", got, want)
	}
	refs = citations.Find("a.go", "// `x` "+plain+"\n")
	if len(refs) != 1 {
		t.Fatalf("found %d citations in %q", len(refs), plain)
	}
	got = rewrite(refs[0], "v0.37.0", 20, 20)
	if want := "k8s.io/apiserver@" + "v0.37.0/pkg/storage/cacher/cacher.go:20"; !strings.HasPrefix(got, want) {
		t.Errorf("plain: got %s, want %s", got, want)
	}
}
