package labkit

// Tests of the workspace's own checks in scripts/: each is shown passing on
// this checkout and failing on a deliberately broken copy, so a check that
// cannot fail would be caught here.

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// gitTree makes a git repository in a temp directory holding files.
func gitTree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	return dir
}

func runScript(t *testing.T, script string, args ...string) (string, int) {
	t.Helper()
	root, err := Root()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(root, "scripts", script), args...)
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return string(out), code
}

func TestCheckVersions(t *testing.T) {
	t.Parallel() // scripts on trees of their own
	root, err := Root()
	if err != nil {
		t.Fatal(err)
	}
	if out, code := runScript(t, "check-versions.sh", root); code != 0 {
		t.Fatalf("this checkout fails the version check:\n%s", out)
	}

	env, err := os.ReadFile(filepath.Join(root, "versions.env"))
	if err != nil {
		t.Fatal(err)
	}
	// Other patch releases, spelt in pieces so this file does not name them.
	other := func(major string, patch int) string { return fmt.Sprintf("%s.37.%d", major, patch) }
	// The release before: its pin (versions.env's PREVIOUS_KUBERNETES_VERSION)
	// is named only in versions.env, cluster/previous/, the
	// previous release's goldens and where a lab says what changed since,
	// or since when; any other 1.36 patch nowhere.
	prev := func(major string, patch int) string { return fmt.Sprintf("%s.36.%d", major, patch) }
	const pin = 4 // PREVIOUS_KUBERNETES_VERSION's patch
	if !strings.Contains(string(env), "PREVIOUS_KUBERNETES_VERSION=v"+prev("1", pin)+"\n") {
		t.Fatalf("versions.env does not pin the previous release at v%s; change pin here", prev("1", pin))
	}
	previousMod := "module x\n\nrequire (\n\tgo.etcd.io/etcd/server/v3 v3.6.8\n\tk8s.io/kubernetes v" + prev("1", pin) + "\n\tk8s.io/api v" + prev("0", pin) + "\n)\n"
	good := map[string]string{
		"versions.env":            string(env),
		"cluster/go.mod":          "module x\n\nrequire k8s.io/kubernetes v1.37.0\n",
		"cluster/previous/go.mod": previousMod,
		"README.md":               "Kubernetes v1.37.0, client-go v0.37.0\n",
		// go.sum lists every version a build resolved: not checked.
		"cluster/go.sum": "k8s.io/api v" + other("0", 3) + " h1:x\n",
	}
	if out, code := runScript(t, "check-versions.sh", gitTree(t, good)); code != 0 {
		t.Fatalf("a consistent tree fails:\n%s", out)
	}

	for name, tc := range map[string]struct{ file, body, want string }{
		"another patch in a README":             {"labs/x/README.md", "see k8s.io/apiserver@v" + other("0", 3) + "/pkg/storage\n", "labs/x/README.md:1: names " + other("0", 3)},
		"another patch in a golden":             {"labs/x/testdata/script/a.txtar", "stdout 'Server Version: v" + other("1", 2) + "'\n", "a.txtar:1: names " + other("1", 2)},
		"go.mod builds another":                 {"cluster/go.mod", "module x\n\nrequire k8s.io/kubernetes v" + other("1", 5) + "\n", "names " + other("1", 5)},
		"a protobuf 1.37 is not Kubernetes":     {"labkit/go.mod", "require google.golang.org/protobuf v" + other("1", 12) + "\n", ""},
		"the release before in prose":           {"labs/x/README.md", "# Lab\n\nKubernetes v" + prev("1", 4) + " does this.\n", "labs/x/README.md:3: names " + prev("1", 4)},
		"the release before in Go":              {"labs/x/a.go", "// k8s.io/apiserver@v" + prev("0", 3) + "/pkg/storage\n", "labs/x/a.go:1: names " + prev("0", 3)},
		"the release before in What changed":    {"labs/x/README.md", "# Lab\n\n## What changed in 1.37\n\nIn v" + prev("1", 4) + " it did this.\n\n### Detail\n\nclient-go v" + prev("0", 4) + " too.\n", ""},
		"the release before after What changed": {"labs/x/README.md", "## What changed in 1.37\n\nv" + prev("1", 4) + "\n\n## Next\n\nv" + prev("1", 4) + "\n", "labs/x/README.md:7: names " + prev("1", 4)},
		"konnectivity-client's own v0.36":       {"cluster/go.mod", "module x\n\nrequire (\n\tk8s.io/kubernetes v1.37.0\n\tsigs.k8s.io/apiserver-network-proxy/konnectivity-client v" + prev("0", 0) + " // indirect\n)\n", ""},
		"containerd's own k8s.io libraries":     {"kindnode/containerd/go.mod", "module x\n\nrequire k8s.io/cri-api v" + prev("0", 3) + " // indirect\n", ""},
		"kindnode/crictl's are not exempt":      {"kindnode/crictl/go.mod", "module x\n\nrequire k8s.io/cri-api v" + prev("0", 3) + " // indirect\n", "names " + prev("0", 3)},
		"kind image without digest":             {"versions.env", strings.Replace(string(env), "@sha256:", ":", 1), "not kindest/node:v1.37.0 pinned by @sha256 digest"},
		// The previous release (issue #30).
		"another 1.36 patch in What changed":      {"labs/x/README.md", "## What changed in 1.37\n\nIn v" + prev("1", 2) + " it did this.\n", "labs/x/README.md:3: names " + prev("1", 2)},
		"the pin in Since when":                   {"labs/x/DEEPER.md", "# Deeper\n\n## Since when\n\n| gate | v" + prev("1", pin) + " | v1.33.0 |\n\n### Rows\n\nk8s.io/apiserver@v" + prev("0", pin) + "\n", ""},
		"the pin in The previous release":         {"docs/x.md", "# X\n\n## The previous release: --release previous\n\nServer Version: v" + prev("1", pin) + "\n", ""},
		"the pin after Since when":                {"labs/x/DEEPER.md", "## Since when\n\nv" + prev("1", pin) + "\n\n## Next\n\nv" + prev("1", pin) + "\n", "labs/x/DEEPER.md:7: names " + prev("1", pin)},
		"another 1.36 patch in Since when":        {"labs/x/DEEPER.md", "## Since when\n\nv" + prev("1", 5) + "\n", "labs/x/DEEPER.md:3: names " + prev("1", 5)},
		"a citation of the pin in Go":             {"labs/x/a_test.go", "// 1.36 sends it plain: k8s.io/apiserver@v" + prev("0", pin) + "/pkg/endpoints/handlers/watch.go:241-282\n", ""},
		"a link to the pin in a txtar":            {"labs/x/testdata/script/a.txtar", "# https://github.com/kubernetes/kubernetes/blob/v" + prev("1", pin) + "/staging/src/k8s.io/apiserver/pkg/x.go#L1\n", ""},
		"the pin in Go, not cited":                {"labs/x/a_test.go", "// a server at v" + prev("1", pin) + " answers plain\n", "labs/x/a_test.go:1: names " + prev("1", pin)},
		"a citation of another 1.36 patch":        {"labs/x/a_test.go", "// k8s.io/apiserver@v" + prev("0", 3) + "/pkg/x.go:1\n", "labs/x/a_test.go:1: names " + prev("0", 3)},
		"a previous-release golden":               {"labs/x/testdata/script/a.previous.txtar", "stdout 'Server Version: v" + prev("1", pin) + "'\n", ""},
		"a 1.36 golden":                           {"labs/x/testdata/recorded/1.36/a.txt", "v" + prev("1", pin) + "\n", ""},
		"a previous golden of another patch":      {"labs/x/testdata/script/a.previous.txtar", "stdout 'Server Version: v" + prev("1", 3) + "'\n", "a.previous.txtar:1: names " + prev("1", 3)},
		"the pin in a golden of the current":      {"labs/x/testdata/script/a.txtar", "stdout 'Server Version: v" + prev("1", pin) + "'\n", "a.txtar:1: names " + prev("1", pin)},
		"the pin in a previous-named non-golden":  {"scripts/previous.sh", "# v" + prev("1", pin) + "\n", "scripts/previous.sh:1: names " + prev("1", pin)},
		"a txtar's 1.36 member":                   {"labs/x/testdata/script/a.txtar", "release\ncmp stdout want-$RELEASE.txt\n-- want-1.37.txt --\nv1.37.0\n-- want-1.36.txt --\nv" + prev("1", pin) + "\n", ""},
		"a txtar's other member":                  {"labs/x/testdata/script/a.txtar", "-- want-1.36.txt --\nv" + prev("1", pin) + "\n-- want-1.37.txt --\nv" + prev("1", pin) + "\n", "a.txtar:4: names " + prev("1", pin)},
		"previous go.mod builds another patch":    {"cluster/previous/go.mod", strings.ReplaceAll(previousMod, prev("", pin), prev("", 3)), "cluster/previous/go.mod requires k8s.io/kubernetes v" + prev("1", 3)},
		"previous go.mod's etcd":                  {"cluster/previous/go.mod", strings.Replace(previousMod, "v3.6.8", "v3.6.7", 1), "requires go.etcd.io/etcd/server/v3 v3.6.7"},
		"previous go.mod missing":                 {"cluster/previous/go.mod", "", "cluster/previous/go.mod requires k8s.io/kubernetes nothing"},
		"previous kind image without digest":      {"versions.env", strings.Replace(string(env), "v"+prev("1", pin)+"@sha256:", "v"+prev("1", pin)+":", 1), "PREVIOUS_KIND_NODE_IMAGE="},
		"previous pin of another minor":           {"versions.env", strings.Replace(string(env), "PREVIOUS_KUBERNETES_VERSION=v"+prev("1", pin), "PREVIOUS_KUBERNETES_VERSION=v1.35.2", 1), "is not a patch of 1.36"},
		"the current pin in versions.env's other": {"versions.env", string(env) + "# also v" + other("1", 1) + "\n", "versions.env:"},
	} {
		files := map[string]string{}
		for k, v := range good {
			files[k] = v
		}
		files[tc.file] = tc.body
		out, code := runScript(t, "check-versions.sh", gitTree(t, files))
		if tc.want == "" {
			if code != 0 {
				t.Errorf("%s: exit %d, output:\n%s\nwant success", name, code, out)
			}
			continue
		}
		if code == 0 || !strings.Contains(out, tc.want) {
			t.Errorf("%s: exit %d, output:\n%s\nwant a failure naming %q", name, code, out, tc.want)
		}
	}
}

func TestCheckLinks(t *testing.T) {
	t.Parallel()
	root, err := Root()
	if err != nil {
		t.Fatal(err)
	}
	if out, code := runScript(t, "check-links.sh", root); code != 0 {
		t.Fatalf("this checkout has a broken upstream reference:\n%s", out)
	}
	const good = "// Upstream: k8s.io/apiserver@v0.37.0/pkg/storage/cacher/cacher.go.\n" +
		"// See `Reflector` at https://github.com/kubernetes/kubernetes/blob/v1.37.0/staging/src/k8s.io/client-go/tools/cache/reflector.go#L106\n" +
		"// and k8s.io/client-go@v0.37.0/tools/cache.NewSharedIndexInformer\n"
	if out, code := runScript(t, "check-links.sh", gitTree(t, map[string]string{"a.go": good})); code != 0 || !strings.Contains(out, "all 3 upstream references") {
		t.Fatalf("good references fail: exit %d\n%s", code, out)
	}
	// The broken references are put together here, so that this file, which
	// the check reads too, does not hold them whole.
	at := "@v0.37.0"
	blob := "https://github.com/kubernetes/"
	for name, tc := range map[string]struct{ body, want string }{
		"invented file":          {"// k8s.io/apiserver" + at + "/pkg/endpoints/handlers/watch_encoder.go\n", "k8s.io/apiserver@v0.37.0 has no pkg/endpoints/handlers/watch_encoder.go"},
		"line past the end":      {"`Reflector` [x](" + blob + "client-go/blob/v0.37.0/tools/cache/reflector.go#L999999)\n", "reflector.go has"},
		"unknown symbol":         {"// k8s.io/client-go" + at + "/tools/cache.NewNoSuchInformer\n", "tools/cache declares no NewNoSuchInformer"},
		"kubernetes non-staging": {"see " + blob + "kubernetes/tree/v1.37.0/pkg/registry/no-such-dir\n", "k8s.io/kubernetes@v1.37.0 has no pkg/registry/no-such-dir"},
	} {
		out, code := runScript(t, "check-links.sh", gitTree(t, map[string]string{"README.md": tc.body}))
		if code == 0 || !strings.Contains(out, tc.want) {
			t.Errorf("%s: exit %d, output:\n%s\nwant a failure naming %q", name, code, out, tc.want)
		}
	}
}

// TestCheckLinksLines: a citation of lines must cite lines that hold the
// identifier its sentence names (the nearest backticked one before it in its
// paragraph), in every citation form.
func TestCheckLinksLines(t *testing.T) {
	t.Parallel()
	// Spelt in pieces, so that this file, which the check reads too, holds
	// no citation of lines whole.
	reflector := "k8s.io/client-go" + "@v0.37.0/tools/cache/reflector.go:"
	etcdWatch := "go.etcd.io/etcd/server/v3" + "@v3.7.0/etcdserver/api/v3rpc/watch.go:"
	blob := "https://github.com/kubernetes/kubernetes/blob/v1.37.0/staging/src/k8s.io/client-go/tools/cache/reflector.go#L"
	// A README cites by links (a plain citation there fails: see
	// labkit/cmd/checklinks' tests), checked as the plain form is.
	etcdBlob := "https://github.com/etcd-io/etcd/blob/v3.7.0/server/etcdserver/api/v3rpc/watch.go#L"
	good := map[string]string{
		"README.md": "After a watch's 410 the Reflector's `isExpiredError` case does not\n" +
			"mark the version unavailable ([reflector.go:646-651](" + blob + "646-L651)), and etcd sends a\n" +
			"progress notification every `progressReportInterval` ([watch.go:94](" + etcdBlob + "94)),\n" +
			"as the link shows: `watch.go` ([watch.go:94](" + etcdBlob + "94)).\n" +
			"\n" +
			"- `cache.Reflector` is a type ([link](" + blob + "106-L106)); `kubectl get` passes over\n" +
			"  commands to the identifier before them (" + blob + "106).\n",
		"x.go": "package x\n\n" +
			"// The Reflector (`(*Reflector).ListAndWatch()`'s loop) relists after\n" +
			"// a 410 only when the list itself is refused:\n" +
			"// `isExpiredError(err)` is checked again at " + reflector + "720.\n",
		"page.go": "package x\n\n" +
			"const page = `<p><code>isExpiredError</code> is checked again (<a>" + reflector + "720</a>).</p>`\n",
	}
	out, code := runScript(t, "check-links.sh", gitTree(t, good))
	if code != 0 || !strings.Contains(out, "the 7 that cite lines hold the identifier") {
		t.Fatalf("good citations fail: exit %d\n%s", code, out)
	}

	for name, tc := range map[string]struct{ body, want string }{
		"range without the identifier": {"`progressReportInterval` is 10 minutes (" + reflector + "646-651).\n",
			"reflector.go:646-651: lines 646-651 do not hold `progressReportInterval`: \"switch {\""},
		"line past the end": {"the `Reflector` (" + reflector + "99999).\n",
			"reflector.go:99999: reflector.go has"},
		"no identifier": {"Upstream relists after a 410 (" + reflector + "646-651).\n",
			"cite which identifier?"},
		"not an identifier": {"with `resourceVersion=\"0\"` and `kubectl get`\nit relists (" + blob + "720).\n",
			"cite which identifier?"},
		"identifier in another paragraph": {"`isExpiredError` is there.\n\nUpstream relists (" + reflector + "720).\n",
			"cite which identifier?"},
		"missing etcd file": {"`progressReportInterval` (" + strings.Replace(etcdWatch, "watch.go", "watcher.go", 1) + "87)\n",
			"go.etcd.io/etcd/server/v3@v3.7.0 has no etcdserver/api/v3rpc/watcher.go"},
		"missing etcd module": {"`progressReportInterval` (" + strings.Replace(etcdWatch, "server/v3", "servers/v3", 1) + "87)\n",
			"go.etcd.io/etcd/servers/v3@v3.7.0 is not a module version"},
		"two ranges": {"`isExpiredError` (" + reflector + "720-721, 820-821)\n",
			"one range per citation"},
		"range backwards": {"`isExpiredError` (" + reflector + "721-720)\n",
			"ends before it starts"},
		"html without a code span": {"package x\n\nconst page = `<p>Upstream relists (<a>" + reflector + "720</a>).</p>`\n",
			"cite which identifier?"},
		"go comment, other paragraph": {"package x\n\n// `isExpiredError` is there.\n//\n// Upstream relists (" + reflector + "720).\n",
			"cite which identifier?"},
	} {
		file := "README.md"
		if strings.HasPrefix(tc.body, "package") {
			file = "x.go"
		}
		out, code := runScript(t, "check-links.sh", gitTree(t, map[string]string{file: tc.body}))
		if code == 0 || !strings.Contains(out, tc.want) {
			t.Errorf("%s: exit %d, output:\n%s\nwant a failure naming %q", name, code, out, tc.want)
		}
	}
}

// TestKubectlWithNoCluster: scripts/kubectl in a checkout with no cluster up
// says so and how to start one, in one line, instead of letting kubectl try
// localhost:8080 five times. (A copy of the script in an empty checkout: this
// one may have a cluster up.)
func TestKubectlWithNoCluster(t *testing.T) {
	root, err := Root()
	if err != nil {
		t.Fatal(err)
	}
	script, err := os.ReadFile(filepath.Join(root, "scripts", "kubectl"))
	if err != nil {
		t.Fatal(err)
	}
	empty := t.TempDir()
	os.MkdirAll(filepath.Join(empty, "scripts"), 0o755)
	if err := os.WriteFile(filepath.Join(empty, "scripts", "kubectl"), script, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(empty, "scripts", "kubectl"), "get", "nodes")
	out, err := cmd.CombinedOutput()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 1 {
		t.Fatalf("exit %v, want status 1\n%s", err, out)
	}
	if want := "kubectl: no cluster is up (no .cluster/kubeconfig); start one with scripts/cluster-up.sh\n"; string(out) != want {
		t.Errorf("output %q, want %q", out, want)
	}
}

// copyScript copies scripts/NAME of this checkout into root's scripts/ (a
// checkout of its own, where nothing is built or started) and returns its path.
func copyScript(t *testing.T, root, name string) string {
	t.Helper()
	repo, err := Root()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(repo, "scripts", name))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(root, "scripts", name)
	os.MkdirAll(filepath.Dir(path), 0o755)
	if err := os.WriteFile(path, data, 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestClusterUpNamesAnUnknownFlag: a mistyped flag of scripts/cluster-up.sh
// is named in the script's own terms, with the flags it takes, before
// anything is built (labcluster, which reads the flags, is not what the
// learner typed, nor on PATH).
func TestClusterUpNamesAnUnknownFlag(t *testing.T) {
	root := t.TempDir()
	script := copyScript(t, root, "cluster-up.sh")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--etcd-member", "3"}, `cluster-up: unknown flag or argument "--etcd-member"; cluster-up.sh takes --etcd-members 1|3|5`},
		{[]string{"--release"}, "cluster-up: --release needs current or previous"},
		{[]string{"kind", "--release", "old"}, `cluster-up: unknown release "old" (current, the course's, or previous, the release before)`},
		{[]string{"--release=previous", "--etcd-member", "3"}, `cluster-up: unknown flag or argument "--etcd-member"`},
		{[]string{"--etcd-members"}, "cluster-up: --etcd-members needs a number: 1, 3 or 5"},
		{[]string{"kinf"}, `cluster-up: unknown kind of cluster "kinf" (embedded or kind)`},
	} {
		cmd := exec.Command(script, tc.args...)
		cmd.Env = append(os.Environ(), "LAB_CLUSTER=", "LAB_RELEASE=")
		out, err := cmd.CombinedOutput()
		ee, ok := err.(*exec.ExitError)
		if !ok || ee.ExitCode() != 2 || !strings.HasPrefix(string(out), tc.want) || strings.Contains(string(out), "labcluster") {
			t.Errorf("cluster-up.sh %s: exit %v, output:\n%s\nwant status 2 and first %q, no word of labcluster", strings.Join(tc.args, " "), err, out, tc.want)
		}
	}
}

// TestClusterDownSaysTheNextClusterIsEmpty: when scripts/cluster-down.sh
// stops the embedded cluster, it says that the objects are gone and the next
// cluster has a new port; when nothing ran, it does not. (A fake labcluster
// in a checkout of its own; also one where only the previous release's
// labcluster-1.N was built, which stops either release's cluster.)
func TestClusterDownSaysTheNextClusterIsEmpty(t *testing.T) {
	const next = "cluster-down: its objects are gone; the next scripts/cluster-up.sh starts an empty cluster on a new port"
	for i, said := range []string{"labcluster: stopped (logs kept in .cluster/logs)", "labcluster: nothing running in .cluster", "labcluster: stopped (logs kept in .cluster/logs)"} {
		root := t.TempDir()
		script := copyScript(t, root, "cluster-down.sh")
		name := "labcluster"
		if i == 2 {
			name = "labcluster-1.36"
		}
		fake := filepath.Join(root, ".cluster", "bin", name)
		os.MkdirAll(filepath.Dir(fake), 0o755)
		if err := os.WriteFile(fake, []byte("#!/bin/sh\necho '"+said+"'\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(script).CombinedOutput()
		if err != nil {
			t.Fatalf("cluster-down.sh: %v\n%s", err, out)
		}
		stopped := strings.HasSuffix(said, "logs)")
		if got := strings.Contains(string(out), next); got != stopped || !strings.HasPrefix(string(out), said+"\n") {
			t.Errorf("labcluster said %q; cluster-down.sh printed:\n%s\nwant labcluster's line, then the line about the next cluster: %v", said, out, stopped)
		}
	}
}

// TestKindE2ESkipSummary: scripts/kind-e2e.sh's summary names each skipped
// test with the reason it printed: a scenario's `skip 'REASON'` line (two
// quotes in it read as one), or a Go test's t.Skip message; a skip with
// neither says so.
// (Its --skips mode reads one `go test -v` log as the summary does, with no
// Docker and no cluster.)
func TestKindE2ESkipSummary(t *testing.T) {
	log := filepath.Join(t.TempDir(), "lab.log")
	const goTestLog = `=== RUN   TestScripts
=== RUN   TestScripts/too-old
=== PAUSE TestScripts/too-old
=== RUN   TestScripts/credentials
=== PAUSE TestScripts/credentials
=== RUN   TestScripts/watch
=== PAUSE TestScripts/watch
=== CONT  TestScripts/too-old
    testscript.go:584: # An RV etcd compacted away. (0.000s)
        > [!labcluster] skip 'needs the embedded cluster: it compacts etcd and restarts the apiserver'
=== CONT  TestScripts/credentials
    testscript.go:584: # The token. (0.000s)
        > [!labcluster] skip 'needs labcluster''s kubeconfig, which holds a bearer token'
=== CONT  TestScripts/watch
    testscript.go:584: # A watch. (0.000s)
        > [target:mini] skip 'only on mini'
        > exec curl -s $URL
=== RUN   TestRecordFixtures
    record_test.go:20: records only with -record
--- SKIP: TestRecordFixtures (0.00s)
=== RUN   TestQuiet
--- SKIP: TestQuiet (0.00s)
--- PASS: TestScripts (0.02s)
    --- SKIP: TestScripts/too-old (0.00s)
    --- SKIP: TestScripts/credentials (0.00s)
    --- PASS: TestScripts/watch (0.01s)
PASS
`
	if err := os.WriteFile(log, []byte(goTestLog), 0o644); err != nil {
		t.Fatal(err)
	}
	out, code := runScript(t, "kind-e2e.sh", "--skips", log)
	want := `TestRecordFixtures: records only with -record
TestQuiet: (no reason printed; see the log)
TestScripts/too-old: needs the embedded cluster: it compacts etcd and restarts the apiserver
TestScripts/credentials: needs labcluster's kubeconfig, which holds a bearer token
`
	if code != 0 || out != want {
		t.Errorf("kind-e2e.sh --skips: exit %d, output:\n%s\nwant:\n%s", code, out, want)
	}
}
