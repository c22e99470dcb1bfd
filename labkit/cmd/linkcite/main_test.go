package main

import (
	"strings"
	"testing"

	"github.com/listwatch-labs/listwatch-labs/labkit/internal/citations"
)

// Citations are spelt with "@" + "v..." so that this file, which
// scripts/check-links.sh reads too, holds none whole.
const at = "@"

func TestConvert(t *testing.T) {
	mods, err := citations.NewModules()
	if err != nil {
		t.Fatal(err)
	}
	pins := citations.Pins{"kubernetes/kubernetes": "v1.37.0", "etcd-io/etcd": "v3.7.0", "kubernetes-sigs/kind": "v0.33.0"}
	k8s := "https://github.com/kubernetes/kubernetes/"
	cacher := "staging/src/k8s.io/apiserver/pkg/storage/cacher/"
	for _, c := range []struct{ name, in, want string }{
		{"staging module, lines, in parentheses",
			"(`Cacher.Watch`, k8s.io/apiserver" + at + "v0.37.0/pkg/storage/cacher/cacher.go:509-520).",
			"(`Cacher.Watch`, [cacher.go:509-520](" + k8s + "blob/v1.37.0/" + cacher + "cacher.go#L509-L520))."},
		{"one line",
			"`dispatchEvent` (k8s.io/apiserver" + at + "v0.37.0/pkg/storage/cacher/cacher.go:978)",
			"`dispatchEvent` ([cacher.go:978](" + k8s + "blob/v1.37.0/" + cacher + "cacher.go#L978))"},
		{"a file that ends a sentence",
			"twin k8s.io/apiserver" + at + "v0.37.0/pkg/storage/cacher/watch_cache.go. The store",
			"twin [watch_cache.go](" + k8s + "blob/v1.37.0/" + cacher + "watch_cache.go). The store"},
		{"a directory",
			"against k8s.io/client-go" + at + "v0.37.0/tools/cache/: a",
			"against [tools/cache](" + k8s + "tree/v1.37.0/staging/src/k8s.io/client-go/tools/cache): a"},
		{"kubernetes itself",
			"(`getEtcdCommand`, k8s.io/kubernetes" + at + "v1.37.0/cmd/kubeadm/app/phases/etcd/local.go:242-266)",
			"(`getEtcdCommand`, [local.go:242-266](" + k8s + "blob/v1.37.0/cmd/kubeadm/app/phases/etcd/local.go#L242-L266))"},
		{"etcd",
			"`progressReportInterval` (go.etcd.io/etcd/server/v3" + at + "v3.7.0/etcdserver/api/v3rpc/watch.go:94)",
			"`progressReportInterval` ([watch.go:94](https://github.com/etcd-io/etcd/blob/v3.7.0/server/etcdserver/api/v3rpc/watch.go#L94))"},
		{"etcd's tests, a directory",
			"its robustness suite, go.etcd.io/etcd/tests/v3" + at + "v3.7.0/robustness",
			"its robustness suite, [tests/robustness](https://github.com/etcd-io/etcd/tree/v3.7.0/tests/robustness)"},
		{"kind",
			"`Provision` (sigs.k8s.io/kind" + at + "v0.33.0/pkg/cluster/internal/create/create.go:102-142)",
			"`Provision` ([create.go:102-142](https://github.com/kubernetes-sigs/kind/blob/v0.33.0/pkg/cluster/internal/create/create.go#L102-L142))"},
		{"a package's symbol",
			"see k8s.io/client-go" + at + "v0.37.0/tools/cache.NewIndexer",
			"see [`cache.NewIndexer`](" + k8s + "blob/v1.37.0/staging/src/k8s.io/client-go/tools/cache/store.go#L"},
		{"an old release says which",
			"`identifier` field (k8s.io/apiserver" + at + "v0.21.0/pkg/storage/cacher/cacher.go:1203)",
			"`identifier` field ([cacher.go:1203 in v1.21.0](" + k8s + "blob/v1.21.0/" + cacher + "cacher.go#L1203))"},
		{"two files of one name in a paragraph",
			"`ListResource`'s store (k8s.io/apiserver" + at + "v0.37.0/pkg/registry/generic/registry/store.go:390-396)\n" +
				"and `Get` (k8s.io/apiserver" + at + "v0.37.0/pkg/storage/etcd3/store.go:704-712)",
			"`ListResource`'s store ([registry/store.go:390-396](" + k8s + "blob/v1.37.0/staging/src/k8s.io/apiserver/pkg/registry/generic/registry/store.go#L390-L396))\n" +
				"and `Get` ([etcd3/store.go:704-712](" + k8s + "blob/v1.37.0/staging/src/k8s.io/apiserver/pkg/storage/etcd3/store.go#L704-L712))"},
		{"one path in two modules",
			"`WatchList` (k8s.io/apiserver" + at + "v0.37.0/pkg/features/kube_features.go:531-534) and `WatchList` (k8s.io/kubernetes" + at + "v1.37.0/pkg/features/kube_features.go:100)",
			"`WatchList` ([apiserver kube_features.go:531-534](" + k8s + "blob/v1.37.0/staging/src/k8s.io/apiserver/pkg/features/kube_features.go#L531-L534)) and `WatchList` ([kubernetes kube_features.go:100](" + k8s + "blob/v1.37.0/pkg/features/kube_features.go#L100))"},
		{"code stays as it is",
			"```go\n// k8s.io/apiserver" + at + "v0.37.0/pkg/storage/cacher/cacher.go:509\n```\n" +
				"In a span: `k8s.io/apiserver" + at + "v0.37.0/pkg/storage/cacher/cacher.go`, ``x k8s.io/apiserver" + at + "v0.37.0/pkg/storage/cacher`` and\n" +
				"<!-- k8s.io/apiserver" + at + "v0.37.0/pkg/storage/cacher -->",
			""},
		{"in an HTML block, where Markdown is not read, an HTML link",
			"<details><summary>Answer</summary>\n<code>dispatchEvent</code> (k8s.io/apiserver" + at + "v0.37.0/pkg/storage/cacher/cacher.go:978)\n</details>\n\n" +
				"<details><summary>Answer</summary>\n\n`dispatchEvent` (k8s.io/apiserver" + at + "v0.37.0/pkg/storage/cacher/cacher.go:978)\n\n</details>",
			"<details><summary>Answer</summary>\n<code>dispatchEvent</code> (<a href=\"" + k8s + "blob/v1.37.0/" + cacher + "cacher.go#L978\">cacher.go:978</a>)\n</details>\n\n" +
				"<details><summary>Answer</summary>\n\n`dispatchEvent` ([cacher.go:978](" + k8s + "blob/v1.37.0/" + cacher + "cacher.go#L978))\n\n</details>"},
		{"an image is no module",
			"registry.k8s.io/pause" + at + "v3.10.2/pause",
			""},
	} {
		cv := &converter{mods: mods, pins: pins}
		got, _ := cv.convert("README.md", c.in)
		want := c.want
		if want == "" {
			want = c.in
		}
		if cv.bad || !strings.HasPrefix(got, want) {
			t.Errorf("%s:\n%s\nbecame\n%s\nwant\n%s", c.name, c.in, got, want)
			continue
		}
		again, n := cv.convert("README.md", got)
		if again != got || n != 0 {
			t.Errorf("%s: a second run changed %d citations:\n%s\nbecame\n%s", c.name, n, got, again)
		}
	}
}

// TestConvertFailsOnWhatDoesNotExist: a citation of a file the module does
// not have, of a version there is not, or of two ranges is left as it is,
// and the run fails.
func TestConvertFailsOnWhatDoesNotExist(t *testing.T) {
	mods, err := citations.NewModules()
	if err != nil {
		t.Fatal(err)
	}
	cv := &converter{mods: mods}
	for _, in := range []string{
		"`x` (k8s.io/apiserver" + at + "v0.37.0/pkg/endpoints/handlers/watch_encoder.go:1)",
		"`x` (k8s.io/apiserver" + at + "v0.37.0/pkg/storage/cacher/cacher.go:1, 5)",
		"`x` (k8s.io/apiserver" + at + "v0.99.0/pkg/storage/cacher/cacher.go:1)",
	} {
		cv.bad = false
		if got, n := cv.convert("README.md", in); got != in || n != 0 || !cv.bad {
			t.Errorf("%s: %q, %d linked, failed %v; want it unchanged and a failure", in, got, n, cv.bad)
		}
	}
}

// TestCrowded: what is left for a hand is listed.
func TestCrowded(t *testing.T) {
	l := "[a.go:1](https://github.com/kubernetes/kubernetes/blob/" + "v1.37.0/a.go#L1)"
	body := "One sentence (" + l + ", " + l + "; " + l + "). Another " + l + ".\n\n" +
		"A span: `k8s.io/client-go" + at + "v0.37.0/tools/cache`.\n"
	got := strings.Join(crowded("R.md", body), "\n")
	for _, want := range []string{"R.md:1: 3 citations in one sentence", "R.md:1: 3 citations in one parenthesis", "R.md:3: a citation in a code span"} {
		if !strings.Contains(got, want) {
			t.Errorf("crowded:\n%s\nwant %q", got, want)
		}
	}
	if strings.Contains(got, "4 citations") {
		t.Errorf("crowded:\n%s\ncounts the next sentence in", got)
	}
}
