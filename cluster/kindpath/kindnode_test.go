package kindpath

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// moduleDir is the directory of a module cluster/go.mod requires, in the
// module cache.
func moduleDir(t *testing.T, path string) string {
	t.Helper()
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", path)
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(), "GOWORK=off")
	out, err := cmd.Output()
	if err != nil || strings.TrimSpace(string(out)) == "" {
		t.Fatalf("go list -m %s: %v (%s)", path, err, out)
	}
	return strings.TrimSpace(string(out))
}

// quoted is the first string constant or ARG assigned to name in a file:
// `name = "v"` (Go) or `ARG name="v"` (a Dockerfile).
func quoted(t *testing.T, file, name string) string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\s*(?:ARG\s+)?` + regexp.QuoteMeta(name) + `\s*=\s*"([^"]+)"`).FindSubmatch(b)
	if m == nil {
		t.Fatalf("%s: no %s = \"...\"", file, name)
	}
	return string(m[1])
}

// required is the version kindnode/MOD/go.mod requires of path.
func required(t *testing.T, mod, path string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "kindnode", mod, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\s*(?:require\s+)?` + regexp.QuoteMeta(path) + ` (v\S+)`).FindSubmatch(b)
	if m == nil {
		t.Fatalf("kindnode/%s/go.mod does not require %s", mod, path)
	}
	return string(m[1])
}

// TestKindNodeModulesPinWhatTheyClaim: the node image built here
// (scripts/kind-node-image.sh) holds the programs at the versions the pinned
// sources name, as kindnode/README.md says: Kubernetes at
// KUBERNETES_VERSION; etcd and CoreDNS at the versions kubeadm v1.37.0 asks
// for (DefaultEtcdVersion, CoreDNSVersion in cmd/kubeadm/app/constants);
// containerd and crictl at the versions kind's own base image builds
// (CONTAINERD_VERSION, CRICTL_VERSION in images/base/Dockerfile of the kind
// module at KIND_VERSION). A `go get` that moves one of them fails here.
func TestKindNodeModulesPinWhatTheyClaim(t *testing.T) {
	v := versions(t)
	kubeadm := filepath.Join(moduleDir(t, "k8s.io/kubernetes"), "cmd", "kubeadm", "app", "constants", "constants.go")
	dockerfile := filepath.Join(moduleDir(t, "sigs.k8s.io/kind"), "images", "base", "Dockerfile")
	etcd, _, _ := strings.Cut(quoted(t, kubeadm, "DefaultEtcdVersion"), "-") // "3.7.0-0": the image's revision after the dash
	for _, c := range []struct{ mod, path, want, from string }{
		{"kube", "k8s.io/kubernetes", v["KUBERNETES_VERSION"], "versions.env KUBERNETES_VERSION"},
		{"etcd", "go.etcd.io/etcd/server/v3", "v" + etcd, "kubeadm's DefaultEtcdVersion"},
		{"coredns", "github.com/coredns/coredns", quoted(t, kubeadm, "CoreDNSVersion"), "kubeadm's CoreDNSVersion"},
		{"containerd", "github.com/containerd/containerd/v2", quoted(t, dockerfile, "CONTAINERD_VERSION"), "kind's base image CONTAINERD_VERSION"},
		{"crictl", "sigs.k8s.io/cri-tools", quoted(t, dockerfile, "CRICTL_VERSION"), "kind's base image CRICTL_VERSION"},
	} {
		if got := required(t, c.mod, c.path); got != c.want {
			t.Errorf("kindnode/%s requires %s %s; %s is %s", c.mod, c.path, got, c.from, c.want)
		}
	}
}
