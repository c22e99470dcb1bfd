package kindpath

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	yaml "go.yaml.in/yaml/v3"
	"sigs.k8s.io/kind/pkg/apis/config/v1alpha4"
	"sigs.k8s.io/kind/pkg/cluster"
	"sigs.k8s.io/kind/pkg/log"
)

// repoRoot is the repository root: two directories above this package.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "versions.env")); err != nil {
		t.Fatalf("no versions.env at %s: %v", root, err)
	}
	return root
}

// versions reads versions.env's KEY=VALUE lines (comments skipped).
func versions(t *testing.T) map[string]string {
	t.Helper()
	f, err := os.Open(filepath.Join(repoRoot(t), "versions.env"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	v := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if k, val, ok := strings.Cut(line, "="); ok && !strings.HasPrefix(line, "#") {
			v[k] = val
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestVersionsPinKindImageByDigest: kind publishes node images per kind
// release and says to use them by digest; the image must be the Kubernetes
// version the course pins, with a sha256 digest.
func TestVersionsPinKindImageByDigest(t *testing.T) {
	v := versions(t)
	want := regexp.MustCompile(`^kindest/node:` + regexp.QuoteMeta(v["KUBERNETES_VERSION"]) + `@sha256:[0-9a-f]{64}$`)
	if !want.MatchString(v["KIND_NODE_IMAGE"]) {
		t.Errorf("KIND_NODE_IMAGE=%q: want kindest/node:%s@sha256:<64 hex digits>", v["KIND_NODE_IMAGE"], v["KUBERNETES_VERSION"])
	}
	// The previous release's, the same way (scripts/cluster-up.sh kind --release previous).
	prev := regexp.MustCompile(`^kindest/node:` + regexp.QuoteMeta(v["PREVIOUS_KUBERNETES_VERSION"]) + `@sha256:[0-9a-f]{64}$`)
	if v["PREVIOUS_KUBERNETES_VERSION"] == "" || !prev.MatchString(v["PREVIOUS_KIND_NODE_IMAGE"]) {
		t.Errorf("PREVIOUS_KIND_NODE_IMAGE=%q: want kindest/node:%s@sha256:<64 hex digits>", v["PREVIOUS_KIND_NODE_IMAGE"], v["PREVIOUS_KUBERNETES_VERSION"])
	}
	// The kind module this test compiles against is the one the script installs.
	if got := kindModuleVersion(t); got != v["KIND_VERSION"] {
		t.Errorf("cluster/go.mod requires sigs.k8s.io/kind %s, versions.env says KIND_VERSION=%s", got, v["KIND_VERSION"])
	}
}

func kindModuleVersion(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\s*sigs\.k8s\.io/kind (v\S+)`).FindSubmatch(b)
	if m == nil {
		t.Fatal("cluster/go.mod does not require sigs.k8s.io/kind")
	}
	return string(m[1])
}

// writeFake writes an executable shell script named name into dir.
func writeFake(t *testing.T, dir, name, script string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"+script), 0o755); err != nil {
		t.Fatal(err)
	}
}

// fakeDockerEngine is a fake docker CLI whose engine answers just enough for
// kind to get past its checks: `info` reports a cgroup v2 engine, `ps` lists
// no containers, `inspect --type=image` says the image is present. Everything
// after that (creating the network, the first real work) fails, so kind stops
// before it would need a real engine. Every call is appended to $FAKE_DOCKER_LOG.
const fakeDockerEngine = `echo "$*" >> "$FAKE_DOCKER_LOG"
case "$1" in
info) echo '{"CgroupDriver":"systemd","CgroupVersion":"2","MemoryLimit":true,"PidsLimit":true,"CPUShares":true}' ;;
ps) ;;
inspect) [ "$2" = "--type=image" ] || { echo "fake docker: no engine behind this fake" >&2; exit 1; } ;;
*) echo "fake docker: no engine behind this fake" >&2; exit 1 ;;
esac
`

// createWithFakeEngine runs kind's own cluster creation on a config file,
// against fakeDockerEngine, and returns kind's error and the docker calls.
func createWithFakeEngine(t *testing.T, config, image string) (error, []string) {
	t.Helper()
	bin := t.TempDir()
	writeFake(t, bin, "docker", fakeDockerEngine)
	calls := filepath.Join(t.TempDir(), "docker-calls")
	t.Setenv("PATH", bin)
	t.Setenv("FAKE_DOCKER_LOG", calls)
	t.Setenv("HOME", t.TempDir()) // kind must not touch the user's ~/.kube
	p := cluster.NewProvider(cluster.ProviderWithDocker(), cluster.ProviderWithLogger(log.NoopLogger{}))
	err := p.Create("listwatch-labs",
		cluster.CreateWithConfigFile(config),
		cluster.CreateWithNodeImage(image),
		cluster.CreateWithKubeconfigPath(filepath.Join(t.TempDir(), "kubeconfig")),
		cluster.CreateWithDisplayUsage(false),
		cluster.CreateWithDisplaySalutation(false),
	)
	b, _ := os.ReadFile(calls)
	return err, strings.Split(strings.TrimSpace(string(b)), "\n")
}

// TestKindConfigLoadsAndValidates: testdata/kind-config.yaml goes through
// kind's loader (strict YAML: an unknown field is an error), its defaulting,
// and its validation (pkg/internal/apis/config/validate.go at v0.33.0, which
// kind runs in Provider.Create before it provisions anything). kind's
// validation is internal, so the test runs the public Create against a fake
// engine and shows that kind got past validation to the node image: with the
// image versions.env pins.
func TestKindConfigLoadsAndValidates(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the fake docker is a shell script")
	}
	for _, name := range []string{"kind-config.yaml", "kind-config-sandbox.yaml"} {
		t.Run(name, func(t *testing.T) {
			c := loadAndValidate(t, filepath.Join(repoRoot(t), "testdata", name))
			if name == "kind-config-sandbox.yaml" {
				// The sandbox's node image brings its own CNI config, and its
				// kernel is cgroup v1 (the file says why).
				if !c.Networking.DisableDefaultCNI {
					t.Errorf("networking.disableDefaultCNI is false: kindnetd's image cannot be pulled on the sandbox")
				}
				if len(c.KubeadmConfigPatches) != 1 || !strings.Contains(c.KubeadmConfigPatches[0], "kind: KubeletConfiguration") || !strings.Contains(c.KubeadmConfigPatches[0], "failCgroupV1: false") {
					t.Errorf("kubeadmConfigPatches %q: want one KubeletConfiguration patch with failCgroupV1: false", c.KubeadmConfigPatches)
				}
			} else if c.Networking.DisableDefaultCNI || len(c.KubeadmConfigPatches) != 0 {
				t.Errorf("the learners' config has disableDefaultCNI %v and patches %q: the sandbox's settings belong in kind-config-sandbox.yaml", c.Networking.DisableDefaultCNI, c.KubeadmConfigPatches)
			}
		})
	}
}

// loadAndValidate runs config through kind's loader and validation (a
// fake engine: kind stops at the network, after validation) and returns it
// as kind's public v1alpha4 types decode it, as strictly as kind's loader.
func loadAndValidate(t *testing.T, config string) v1alpha4.Cluster {
	t.Helper()
	image := versions(t)["KIND_NODE_IMAGE"]

	err, calls := createWithFakeEngine(t, config, image)
	t.Logf("kind create: %v; docker calls: %q", err, calls)
	if err == nil || !strings.Contains(err.Error(), "failed to ensure docker network") {
		t.Fatalf("kind create: %v; want it to stop at the network, after validation (docker calls: %q)", err, calls)
	}
	if !slicesContain(calls, "inspect --type=image "+image) {
		t.Errorf("kind did not look for the node image %s; docker calls: %q", image, calls)
	}

	// What kind loaded: the same file through kind's public v1alpha4 types,
	// decoded as strictly as kind's loader does.
	raw, err := os.ReadFile(config)
	if err != nil {
		t.Fatal(err)
	}
	var c v1alpha4.Cluster
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil {
		t.Fatal(err)
	}
	if c.Networking.APIServerAddress != "127.0.0.1" {
		t.Errorf("apiServerAddress %q: the kind cluster's apiserver must listen on loopback only", c.Networking.APIServerAddress)
	}
	if len(c.Nodes) != 1 || c.Nodes[0].Role != v1alpha4.ControlPlaneRole || c.Nodes[0].Image != "" {
		t.Errorf("nodes %+v: want one control-plane node whose image comes from --image (versions.env)", c.Nodes)
	}
	return c
}

// TestKindRejectsBrokenConfig: the same path fails, before any image is
// looked for, on configs kind's loader or validation rejects; so the test
// above would notice a broken testdata/kind-config.yaml.
func TestKindRejectsBrokenConfig(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the fake docker is a shell script")
	}
	good, err := os.ReadFile(filepath.Join(repoRoot(t), "testdata", "kind-config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, from, to, want string }{
		{"no control plane", "role: control-plane", "role: worker", "must have at least one control-plane node"},
		{"unknown field", "apiServerAddress:", "apiServerAdress:", "unable to decode config"},
		{"bad pod subnet", "networking:\n", "networking:\n  podSubnet: not-a-cidr\n", "invalid pod subnet"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			broken := strings.Replace(string(good), tc.from, tc.to, 1)
			if broken == string(good) {
				t.Fatalf("%q is not in testdata/kind-config.yaml", tc.from)
			}
			file := filepath.Join(t.TempDir(), "kind-config.yaml")
			if err := os.WriteFile(file, []byte(broken), 0o600); err != nil {
				t.Fatal(err)
			}
			err, calls := createWithFakeEngine(t, file, versions(t)["KIND_NODE_IMAGE"])
			if err == nil || !strings.Contains(errorText(err), tc.want) {
				t.Errorf("kind create: %v; want an error containing %q", err, tc.want)
			}
			for _, c := range calls {
				if strings.HasPrefix(c, "inspect") {
					t.Errorf("kind looked for the image despite the broken config: %q", calls)
				}
			}
		})
	}
}

// errorText flattens kind's aggregate errors (one per problem found).
func errorText(err error) string {
	var b strings.Builder
	for err != nil {
		b.WriteString(err.Error() + "\n")
		err = errors.Unwrap(err)
	}
	return b.String()
}

func slicesContain(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// scriptRoot copies scripts/cluster-up.sh and cluster-down.sh, versions.env and the kind configs
// into a fresh directory laid out like the repository, so the script runs
// there and never touches the real .cluster/.
func scriptRoot(t *testing.T) string {
	t.Helper()
	src, dst := repoRoot(t), t.TempDir()
	for _, f := range []string{"scripts/cluster-up.sh", "scripts/cluster-down.sh", "versions.env", "testdata/kind-config.yaml", "testdata/kind-config-sandbox.yaml"} {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dst, f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, f), b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// runClusterUp runs scripts/cluster-up.sh kind in root with fakes first on
// PATH (the system's tools after them: the script needs mkdir, chmod, touch).
func runClusterUp(t *testing.T, root, fakes string, env ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(filepath.Join(root, "scripts", "cluster-up.sh"), "kind")
	cmd.Env = append(os.Environ(), "PATH="+fakes+string(os.PathListSeparator)+os.Getenv("PATH"), "LAB_CLUSTER=", "LAB_RELEASE=", "KIND_NODE_IMAGE=", "KIND_CONFIG=")
	cmd.Env = append(cmd.Env, env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit):
		code = exit.ExitCode()
	default:
		t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

// TestClusterUpKindWithoutDocker: where no Docker engine answers (here a fake
// docker CLI whose `info` fails the way the real client does with no
// daemon), the script stops with exactly one line, on stderr, and status 1,
// before it installs or creates anything.
func TestClusterUpKindWithoutDocker(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("runs a bash script")
	}
	root := scriptRoot(t)
	fakes := t.TempDir()
	writeFake(t, fakes, "docker", `echo "Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running? (fake docker)" >&2
exit 1
`)
	stdout, stderr, code := runClusterUp(t, root, fakes)
	const want = "cluster-up: kind needs a Docker engine and none answers here (docker info failed); use the embedded cluster instead: scripts/cluster-up.sh\n"
	if code != 1 || stderr != want || stdout != "" {
		t.Errorf("exit %d\nstderr %q\nstdout %q\nwant exit 1, stderr %q, no stdout", code, stderr, stdout, want)
	}
	for _, f := range []string{".cluster/kind", ".cluster/kubeconfig", ".cluster/bin/kind"} {
		if _, err := os.Stat(filepath.Join(root, f)); err == nil {
			t.Errorf("%s exists after a refused start", f)
		}
	}

	// No docker on PATH at all (only the tools the script needs before it
	// asks for one): the same line.
	bare := t.TempDir()
	for _, tool := range []string{"dirname", "mkdir"} {
		path, err := exec.LookPath(tool)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(path, filepath.Join(bare, tool)); err != nil {
			t.Fatal(err)
		}
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bash, filepath.Join(root, "scripts", "cluster-up.sh"), "kind")
	cmd.Env = append(os.Environ(), "PATH="+bare, "LAB_CLUSTER=")
	var errb bytes.Buffer
	cmd.Stderr = &errb
	err = cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 || errb.String() != want {
		t.Errorf("with no docker on PATH: %v, stderr %q; want status 1 and %q", err, errb.String(), want)
	}
}

// TestClusterUpKindNamesPinnedImage: with an engine answering (a fake docker
// whose `info` succeeds) the script runs kind with the node image of
// versions.env, pinned by digest, and testdata/kind-config.yaml; with
// KIND_NODE_IMAGE and KIND_CONFIG set (as scripts/kind-e2e.sh sets them on
// the course's sandbox) it runs kind with those. The kind binary is a fake
// that records its arguments and writes the kubeconfig kind would.
func TestClusterUpKindNamesPinnedImage(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("runs a bash script")
	}
	t.Run("pinned", func(t *testing.T) {
		root := scriptRoot(t)
		clusterUpRunsKind(t, root, versions(t)["KIND_NODE_IMAGE"], filepath.Join(root, "testdata", "kind-config.yaml"))
	})
	t.Run("overridden", func(t *testing.T) {
		root := scriptRoot(t)
		config := filepath.Join(root, "testdata", "kind-config.yaml")
		clusterUpRunsKind(t, root, "listwatch-labs/kind-node:"+versions(t)["KUBERNETES_VERSION"], config,
			"KIND_NODE_IMAGE=listwatch-labs/kind-node:"+versions(t)["KUBERNETES_VERSION"], "KIND_CONFIG="+config)
	})
	// The previous release (scripts/cluster-up.sh kind --release previous,
	// or LAB_RELEASE=previous): kind's node image of it, from versions.env.
	t.Run("previous release", func(t *testing.T) {
		root := scriptRoot(t)
		clusterUpRunsKind(t, root, versions(t)["PREVIOUS_KIND_NODE_IMAGE"], filepath.Join(root, "testdata", "kind-config.yaml"), "LAB_RELEASE=previous")
	})
	// The image built here has no kindnetd: without KIND_CONFIG it gets the
	// sandbox's config, which turns kind's CNI off.
	t.Run("built here", func(t *testing.T) {
		root := scriptRoot(t)
		clusterUpRunsKind(t, root, "listwatch-labs/kind-node:"+versions(t)["KUBERNETES_VERSION"], filepath.Join(root, "testdata", "kind-config-sandbox.yaml"),
			"KIND_NODE_IMAGE=listwatch-labs/kind-node:"+versions(t)["KUBERNETES_VERSION"])
	})
}

// TestClusterUpKindOnCgroupV1: where the Docker engine's host runs cgroup v1
// (a fake docker whose `info --format {{.CgroupVersion}}` says 1), the
// kubelet would refuse to start under testdata/kind-config.yaml, and kind
// would time out a minute later with the reason gone with its node: the
// script says why at once, with status 1, before kind is installed or run.
// With the sandbox's config (failCgroupV1: false) it starts kind.
func TestClusterUpKindOnCgroupV1(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("runs a bash script")
	}
	root := scriptRoot(t)
	fakes := t.TempDir()
	writeFake(t, fakes, "docker", `[ "$1" = info ] || { echo "fake docker: only info answers" >&2; exit 1; }
case "$*" in *CgroupVersion*) echo 1 ;; esac
exit 0
`)
	stdout, stderr, code := runClusterUp(t, root, fakes)
	const want = "cluster-up: this Docker engine's host runs cgroup v1, and the kubelet refuses to start on cgroup v1 unless its configuration says failCgroupV1: false"
	if code != 1 || !strings.HasPrefix(stderr, want) || !strings.Contains(stderr, "kind-config-sandbox.yaml") || stdout != "" {
		t.Errorf("exit %d\nstderr %q\nstdout %q\nwant exit 1, stderr starting %q and naming the sandbox config", code, stderr, stdout, want)
	}
	for _, f := range []string{".cluster/kind", ".cluster/kubeconfig", ".cluster/bin/kind"} {
		if _, err := os.Stat(filepath.Join(root, f)); err == nil {
			t.Errorf("%s exists after a refused start", f)
		}
	}

	args := filepath.Join(t.TempDir(), "kind-args")
	if err := os.MkdirAll(filepath.Join(root, ".cluster", "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFake(t, filepath.Join(root, ".cluster", "bin"), "kind", `[ "$1" = get ] && exit 0
for a in "$@"; do echo "$a"; done > '`+args+`'
while [ $# -gt 0 ]; do [ "$1" = --kubeconfig ] && echo "fake kubeconfig" > "$2"; shift; done
`)
	config := filepath.Join(root, "testdata", "kind-config-sandbox.yaml")
	if _, stderr, code := runClusterUp(t, root, fakes, "KIND_CONFIG="+config); code != 0 {
		t.Fatalf("with KIND_CONFIG=%s: exit %d\n%s", config, code, stderr)
	}
	if b, err := os.ReadFile(args); err != nil || !strings.Contains(string(b), "\n"+config+"\n") {
		t.Errorf("kind ran with %q (%v); want --config %s", b, err, config)
	}
}

func clusterUpRunsKind(t *testing.T, root, image, config string, env ...string) {
	t.Helper()
	fakes := t.TempDir()
	writeFake(t, fakes, "docker", "[ \"$1\" = info ] && exit 0\necho 'fake docker: only info answers' >&2; exit 1\n")
	if err := os.MkdirAll(filepath.Join(root, ".cluster", "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	args := filepath.Join(t.TempDir(), "kind-args")
	// The fake kind lists no cluster, prints one argument a line and writes a kubeconfig at the
	// path after --kubeconfig.
	writeFake(t, filepath.Join(root, ".cluster", "bin"), "kind", `[ "$1" = get ] && exit 0 # get clusters: none
for a in "$@"; do echo "$a"; done > '`+args+`'
while [ $# -gt 0 ]; do [ "$1" = --kubeconfig ] && echo "fake kubeconfig" > "$2"; shift; done
`)
	stdout, stderr, code := runClusterUp(t, root, fakes, env...)
	if code != 0 {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	b, err := os.ReadFile(args)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Split(strings.TrimSpace(string(b)), "\n")
	want := []string{"create", "cluster", "--name", "listwatch-labs",
		"--image", image,
		"--config", config,
		"--kubeconfig", filepath.Join(root, ".cluster", "kubeconfig"),
		"--wait", "120s"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("kind ran with\n  %q\nwant\n  %q", got, want)
	}
	fi, err := os.Stat(filepath.Join(root, ".cluster", "kubeconfig"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("kubeconfig: %v, mode %v; want 0600", err, fi.Mode())
	}
	if !strings.HasSuffix(stdout, "export KUBECONFIG="+filepath.Join(root, ".cluster", "kubeconfig")+"\n") {
		t.Errorf("stdout %q: want it to end with the export line", stdout)
	}
}
