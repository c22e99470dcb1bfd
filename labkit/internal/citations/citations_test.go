package citations

import (
	"strings"
	"testing"
)

// TestMarkdownCode: what is code in Markdown, where a plain citation may
// stay: fenced blocks (with their fences), code spans of any number of
// backticks, over a line end too, and HTML comments; not an unclosed
// backtick, nor a span's backticks across a blank line.
func TestMarkdownCode(t *testing.T) {
	lines := strings.Split("a `b` c ``d ` e`` f\n"+
		"g `h\n"+
		"i` j <!-- k -->\n"+
		"\n"+
		"```go\n"+
		"code\n"+
		"```\n"+
		"an ` alone\n"+
		"\n"+
		"x`", "\n")
	code := MarkdownCode(lines)
	var got []string
	for i, spans := range code {
		for _, s := range spans {
			got = append(got, lines[i][s[0]:s[1]])
		}
	}
	want := []string{"`b`", "``d ` e``", "`h", "i`", "<!-- k -->", "```go", "code", "```"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("code: %q\nwant %q", got, want)
	}
}

// TestURLReadsBack: every module form maps to a link that reads back as it.
func TestURLReadsBack(t *testing.T) {
	for _, c := range []struct{ module, ver, path, want string }{
		{"k8s.io/client-go", "v0.17.0", "tools/cache/reflector.go", "https://github.com/kubernetes/kubernetes/blob/v1.17.0/staging/src/k8s.io/client-go/tools/cache/reflector.go"},
		{"k8s.io/kubernetes", "v1.37.0", "pkg/features/kube_features.go", "https://github.com/kubernetes/kubernetes/blob/v1.37.0/pkg/features/kube_features.go"},
		{"sigs.k8s.io/kind", "v0.33.0", "pkg/cluster/provider.go", "https://github.com/kubernetes-sigs/kind/blob/v0.33.0/pkg/cluster/provider.go"},
		{"go.etcd.io/etcd/server/v3", "v3.7.0", "etcdserver/server.go", "https://github.com/etcd-io/etcd/blob/v3.7.0/server/etcdserver/server.go"},
		{"go.etcd.io/etcd/client/v3", "v3.7.0", "watch.go", "https://github.com/etcd-io/etcd/blob/v3.7.0/client/v3/watch.go"},
		{"go.etcd.io/etcd/client/pkg/v3", "v3.7.0", "types/id.go", "https://github.com/etcd-io/etcd/blob/v3.7.0/client/pkg/types/id.go"},
		{"go.etcd.io/etcd/tests/v3", "v3.7.0", "robustness/main_test.go", "https://github.com/etcd-io/etcd/blob/v3.7.0/tests/robustness/main_test.go"},
		{"go.etcd.io/raft/v3", "v3.7.0", "raft.go", "https://github.com/etcd-io/raft/blob/v3.7.0/raft.go"},
	} {
		// (The files exist: check-links, which reads this file, says so.)
		got, err := URL(c.module, c.ver, c.path, false, 3, 4)
		if err != nil || got != c.want+"#L3-L4" {
			t.Errorf("%s@%s/%s: %s, %v; want %s", c.module, c.ver, c.path, got, err, c.want)
		}
	}
}
