package kindpath

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
)

// moduleDir is the directory of a module cluster/go.mod requires, in the
// module cache.
func moduleDir(t *testing.T, path string) string {
	t.Helper()
	return moduleDirOf(t, "go.mod", path)
}

// moduleDirOf is the directory of a module that cluster/MODFILE requires
// (go.mod, or previous/go.mod for the previous release), in the module
// cache. go mod download fetches it first if it is not there (the previous
// release's k8s.io/kubernetes is, only once something built it).
func moduleDirOf(t *testing.T, modfile, path string) string {
	t.Helper()
	cmd := exec.Command("go", "mod", "download", "-modfile="+modfile, "-json", path)
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(), "GOWORK=off")
	out, err := cmd.Output()
	var m struct{ Dir, Error string }
	if err != nil || json.Unmarshal(out, &m) != nil || m.Dir == "" {
		t.Fatalf("go mod download -modfile=%s %s: %v (%s)", modfile, path, err, out)
	}
	return m.Dir
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

// required is the version kindnode/MOD/go.mod requires of path (MOD may
// be kube/previous: the previous release's module file).
func required(t *testing.T, mod, path string) string {
	t.Helper()
	v, ok := requiredIf(t, mod, path)
	if !ok {
		t.Fatalf("kindnode/%s/go.mod does not require %s", mod, path)
	}
	return v
}

// requiredIf is the version kindnode/MOD/go.mod requires of path, if any.
func requiredIf(t *testing.T, mod, path string) (string, bool) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "kindnode", mod, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\s*(?:require\s+)?` + regexp.QuoteMeta(path) + ` (v\S+)`).FindSubmatch(b)
	if m == nil {
		return "", false
	}
	return string(m[1]), true
}

// TestKindNodeModulesPinWhatTheyClaim: the node image built here
// (scripts/kind-node-image.sh) holds the programs at the versions the pinned
// sources name, as kindnode/README.md says: Kubernetes at
// KUBERNETES_VERSION; etcd and CoreDNS at the versions kubeadm v1.37.0 asks
// for (DefaultEtcdVersion, CoreDNSVersion in cmd/kubeadm/app/constants);
// containerd and crictl at the versions kind's own base image builds
// (CONTAINERD_VERSION, CRICTL_VERSION in images/base/Dockerfile of the kind
// module at KIND_VERSION), containerd with the Kubernetes libraries its own
// go.mod takes. The same for the previous release's image
// (kindnode/*/previous/go.mod, at PREVIOUS_KUBERNETES_VERSION and what
// kubeadm of it asks for). A `go get` that moves one of them fails here.
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

	// The previous release's image (scripts/kind-node-image.sh --release
	// previous): kube, etcd and coredns from their previous/go.mod, at what
	// kubeadm of that release asks for (its constants.go, in the module
	// cluster/previous/go.mod pins); containerd and crictl from the same
	// modules as above, kind's base image being the same.
	prevKubeadm := filepath.Join(moduleDirOf(t, "previous/go.mod", "k8s.io/kubernetes"), "cmd", "kubeadm", "app", "constants", "constants.go")
	prevEtcd, _, _ := strings.Cut(quoted(t, prevKubeadm, "DefaultEtcdVersion"), "-")
	for _, c := range []struct{ mod, path, want, from string }{
		{"kube/previous", "k8s.io/kubernetes", v["PREVIOUS_KUBERNETES_VERSION"], "versions.env PREVIOUS_KUBERNETES_VERSION"},
		{"etcd/previous", "go.etcd.io/etcd/server/v3", "v" + prevEtcd, "the previous kubeadm's DefaultEtcdVersion"},
		{"coredns/previous", "github.com/coredns/coredns", quoted(t, prevKubeadm, "CoreDNSVersion"), "the previous kubeadm's CoreDNSVersion"},
	} {
		if got := required(t, c.mod, c.path); got != c.want {
			t.Errorf("kindnode/%s requires %s %s; %s is %s", c.mod, c.path, got, c.from, c.want)
		}
	}

	// containerd is built with the Kubernetes libraries its own go.mod
	// takes, as kind's base image builds it: k8s.io/cri-api v0.37.0 renamed
	// the Signal values containerd v2.3.4 uses, so 1.37's do not build.
	cmd := exec.Command("go", "list", "-m", "-f", "{{.GoMod}}", "github.com/containerd/containerd/v2")
	cmd.Dir = filepath.Join(repoRoot(t), "kindnode", "containerd")
	cmd.Env = append(os.Environ(), "GOWORK=off")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -m containerd: %v", err)
	}
	own, err := os.ReadFile(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, m := range regexp.MustCompile(`(?m)^\s*(k8s\.io/\S+) (v\S+)`).FindAllSubmatch(own, -1) {
		path, want := string(m[1]), string(m[2])
		if got, ok := requiredIf(t, "containerd", path); ok {
			n++
			if got != want {
				t.Errorf("kindnode/containerd requires %s %s; containerd's own go.mod takes %s", path, got, want)
			}
		}
	}
	if n == 0 {
		t.Errorf("kindnode/containerd requires none of the k8s.io modules containerd's go.mod takes")
	}
}

// TestKindNodeImageChecksFirst: scripts/kind-node-image.sh names everything
// a build lacks (root, mmdebstrap, jq, gcc with a static C library) at once,
// with the Debian packages to install, and stops before it compiles
// anything: a fake go on PATH records any call, and none comes. PATH holds
// only the tools the script uses before its check, and a fake docker whose
// engine answers and has no image.
func TestKindNodeImageChecksFirst(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("runs a bash script with Linux tools")
	}
	root := t.TempDir()
	for _, f := range []string{"scripts/kind-node-image.sh", "scripts/release.sh", "versions.env"} {
		b, err := os.ReadFile(filepath.Join(repoRoot(t), f))
		if err != nil {
			t.Fatal(err)
		}
		os.MkdirAll(filepath.Dir(filepath.Join(root, f)), 0o755)
		if err := os.WriteFile(filepath.Join(root, f), b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// The module files the image's input hash reads: each release's.
	os.MkdirAll(filepath.Join(root, "kindnode", "kube", "previous"), 0o755)
	for _, f := range []string{"go.mod", "go.sum", "previous/go.mod", "previous/go.sum"} {
		os.WriteFile(filepath.Join(root, "kindnode", "kube", f), nil, 0o644)
	}
	calls := filepath.Join(t.TempDir(), "go-calls")
	bare := t.TempDir()
	for _, tool := range []string{"dirname", "mkdir", "date", "cat", "grep", "sha256sum", "cut", "id"} {
		path, err := exec.LookPath(tool)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(path, filepath.Join(bare, tool)); err != nil {
			t.Fatal(err)
		}
	}
	writeFake(t, bare, "docker", `[ "$1" = info ] && exit 0; exit 1 # an engine with no images`)
	writeFake(t, bare, "go", `echo "go $*" >> '`+calls+`'; exit 1`)
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (string, int) {
		cmd := exec.Command(bash, append([]string{filepath.Join(root, "scripts", "kind-node-image.sh")}, args...)...)
		cmd.Env = append(os.Environ(), "PATH="+bare)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		var exit *exec.ExitError
		if err != nil && !errors.As(err, &exit) {
			t.Fatal(err)
		}
		return out.String(), cmd.ProcessState.ExitCode()
	}
	asRoot := ""
	if os.Getuid() != 0 {
		asRoot = "root (mmdebstrap --mode=root and chroot), "
	}

	out, code := run()
	want := "kind-node-image: needs " + asRoot + "mmdebstrap, jq, gcc (Debian: apt-get install mmdebstrap jq gcc libc6-dev); nothing was built\n"
	if code != 1 || out != want {
		t.Errorf("with none of them: exit %d, output\n%s\nwant exit 1 and\n%s", code, out, want)
	}
	// The previous release's image checks the same, first.
	if out, code := run("--release", "previous"); code != 1 || out != want {
		t.Errorf("--release previous with none of them: exit %d, output\n%s\nwant exit 1 and\n%s", code, out, want)
	}
	// A release it does not know: refused before anything else.
	wantRelease := "kind-node-image: unknown release \"next\" (current or previous)\n"
	if out, code := run("--release", "next"); code != 2 || out != wantRelease {
		t.Errorf("--release next: exit %d, output\n%s\nwant exit 2 and\n%s", code, out, wantRelease)
	}

	// mmdebstrap and jq there, and a gcc that cannot link static.
	writeFake(t, bare, "mmdebstrap", "exit 0")
	writeFake(t, bare, "jq", "exit 0")
	writeFake(t, bare, "gcc", `echo "/usr/bin/ld: cannot find -lc" >&2; exit 1`)
	out, code = run()
	want = "kind-node-image: needs " + asRoot + "a static C library for gcc -static (Debian: apt-get install libc6-dev); nothing was built\n"
	if code != 1 || out != want {
		t.Errorf("with gcc but no libc.a: exit %d, output\n%s\nwant exit 1 and\n%s", code, out, want)
	}
	if b, err := os.ReadFile(calls); err == nil {
		t.Errorf("go ran before the check failed:\n%s", b)
	}
}
