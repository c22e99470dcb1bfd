package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestRenderDiagramsFailsOnParseError: scripts/render-diagrams.sh renders a
// good block, and fails, naming the file and the parse error, on a bad one.
// Where the machine has no npm or chromium the script says SKIP, and so does
// this test.
func TestRenderDiagramsFailsOnParseError(t *testing.T) {
	t.Parallel() // a script driving chromium, in a directory of its own
	root, err := workspaceRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	good := filepath.Join(dir, "good.md")
	bad := filepath.Join(dir, "bad.md")
	os.WriteFile(good, []byte("# ok\n\n```mermaid\nsequenceDiagram\n    A->>B: hello\n```\n"), 0o644)
	os.WriteFile(bad, []byte("# broken\n\n```mermaid\nsequenceDiagram\n    A->>B: one; B->>A\n```\n"), 0o644)
	render := func(file string) (string, error) {
		cmd := exec.Command(filepath.Join(root, "scripts", "render-diagrams.sh"), file)
		cmd.Env = append(os.Environ(), "DIAGRAMS_OUT="+filepath.Join(dir, "out"))
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := render(good)
	if strings.Contains(out, "SKIP") {
		t.Skip(strings.TrimSpace(out))
	}
	if err != nil || !strings.Contains(out, "1 diagram(s) rendered") {
		t.Fatalf("good block: %v\n%s", err, out)
	}
	svg, err := os.ReadFile(filepath.Join(dir, "out", "good-1.svg"))
	if err != nil {
		entries, _ := os.ReadDir(filepath.Join(dir, "out"))
		t.Fatalf("no SVG for the good block: %v (out has %v)", err, entries)
	}
	if !strings.Contains(string(svg), "<svg") || !strings.Contains(string(svg), "hello") {
		t.Fatalf("the SVG does not hold the diagram's message")
	}
	out, err = render(bad)
	if err == nil {
		t.Fatalf("a block that does not parse rendered without error:\n%s", out)
	}
	if !strings.Contains(out, "FAIL") || !strings.Contains(out, "bad.md") || !strings.Contains(out, "Parse error") {
		t.Fatalf("the failure does not name the file and the parse error:\n%s", out)
	}
}
