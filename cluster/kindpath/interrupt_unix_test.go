//go:build unix

package kindpath

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// fakeKindCluster is a fake kind and a fake docker that share one state
// directory, $FAKE_STATE: a file "cluster" while the cluster exists, a file
// "network" while kind's Docker network does, and "calls", one line per call
// of either. `kind create` makes both, says so in "creating", and then
// blocks (as the real one does for tens of seconds while kubeadm runs) unless
// $FAKE_STATE/finish exists. "creating" is a FIFO, so the test waits on
// its read, not on a timer. Nothing here talks to a Docker engine.
const fakeKind = `echo "kind $*" >> "$FAKE_STATE/calls"
case "$1 $2" in
"get clusters") [ -f "$FAKE_STATE/cluster" ] && echo listwatch-labs; exit 0 ;;
"create cluster")
  echo listwatch-labs > "$FAKE_STATE/cluster"; : > "$FAKE_STATE/network"
  while [ $# -gt 0 ]; do [ "$1" = --kubeconfig ] && echo "fake kubeconfig" > "$2"; shift; done
  [ -f "$FAKE_STATE/finish" ] && exit 0
  echo creating > "$FAKE_STATE/creating" # a FIFO: the test reads it
  exec sleep 300 ;;
"delete cluster") rm -f "$FAKE_STATE/cluster"; exit 0 ;;
esac
echo "fake kind: $* not faked" >&2; exit 1
`

const fakeDockerForKind = `echo "docker $*" >> "$FAKE_STATE/calls"
case "$1 $2" in
"info "*) exit 0 ;;
"network inspect") [ -f "$FAKE_STATE/network" ] && { if [ -f "$FAKE_STATE/cluster" ]; then echo 1; else echo 0; fi; exit 0; }; exit 1 ;;
"network rm") rm -f "$FAKE_STATE/network"; exit 0 ;;
esac
echo "fake docker: $* not faked" >&2; exit 1
`

// kindFakeRoot lays out scriptRoot with fakeKind in .cluster/bin, and a
// directory of fakes (fakeDockerForKind) for PATH; state is $FAKE_STATE, with
// the FIFO "creating" that fakeKind's create writes to.
func kindFakeRoot(t *testing.T) (root, state, fakes string) {
	t.Helper()
	root, state, fakes = scriptRoot(t), t.TempDir(), t.TempDir()
	writeFake(t, fakes, "docker", fakeDockerForKind)
	if err := os.MkdirAll(filepath.Join(root, ".cluster", "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFake(t, filepath.Join(root, ".cluster", "bin"), "kind", fakeKind)
	if err := syscall.Mkfifo(filepath.Join(state, "creating"), 0o600); err != nil {
		t.Fatal(err)
	}
	return root, state, fakes
}

// TestClusterUpKindInterrupted: Ctrl-C while `kind create cluster` runs
// (kind has no handler for it and dies where it is, leaving its node
// container and network) leaves nothing that blocks the next start:
// cluster-up.sh says it was interrupted, deletes the cluster, removes the
// network and its marker, and exits 130; the next start then succeeds. A
// cluster of the course's name without this checkout's marker (another
// checkout's: kind's names are one namespace per Docker engine) is refused
// with the command that removes it, and cluster-down.sh leaves it alone. The terminal's Ctrl-C
// is a SIGINT to the foreground process group: the test sends one to the
// script's group.
func TestClusterUpKindInterrupted(t *testing.T) {
	root, state, fakes := kindFakeRoot(t)
	exists := func(p string) bool { _, err := os.Stat(p); return err == nil }
	marker, kubeconfig := filepath.Join(root, ".cluster", "kind"), filepath.Join(root, ".cluster", "kubeconfig")

	cmd := exec.Command(filepath.Join(root, "scripts", "cluster-up.sh"), "kind")
	cmd.Env = append(os.Environ(), "PATH="+fakes+string(os.PathListSeparator)+os.Getenv("PATH"),
		"LAB_CLUSTER=", "KIND_NODE_IMAGE=", "KIND_CONFIG=", "FAKE_STATE="+state)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	// Wait for kind's create on the FIFO (opening it blocks until the fake
	// opens it to write), with a deadline; on the deadline, a writer opened
	// here unblocks the reader.
	fifo := filepath.Join(state, "creating")
	started := make(chan error, 1)
	go func() {
		b, err := os.ReadFile(fifo)
		if err == nil && string(b) != "creating\n" {
			err = errors.New("read " + string(b))
		}
		started <- err
	}()
	select {
	case err := <-started:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		if w, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			w.Close()
		}
		t.Fatalf("kind create never started\nstdout %s\nstderr %s", stdout.String(), stderr.String())
	}
	if !exists(marker) {
		t.Error("no .cluster/kind marker while kind creates: cluster-down.sh would not know there is a cluster")
	}
	if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	var err error
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("cluster-up.sh still running 30 s after Ctrl-C\nstderr %s", stderr.String())
	}
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 130 {
		t.Errorf("after Ctrl-C: %v; want exit status 130", err)
	}
	if want := "cluster-up: interrupted; removing the half-made kind cluster\n"; !strings.Contains(stderr.String(), want) {
		t.Errorf("stderr %q: want it to say %q", stderr.String(), want)
	}
	calls, _ := os.ReadFile(filepath.Join(state, "calls"))
	for _, want := range []string{"kind delete cluster --name listwatch-labs", "docker network rm kind"} {
		if !strings.Contains(string(calls), want+"\n") && !strings.Contains(string(calls), want+" ") {
			t.Errorf("no %q after Ctrl-C; calls:\n%s", want, calls)
		}
	}
	for name, p := range map[string]string{"the cluster": filepath.Join(state, "cluster"), "kind's network": filepath.Join(state, "network"), ".cluster/kind": marker, ".cluster/kubeconfig": kubeconfig} {
		if exists(p) {
			t.Errorf("%s is left after Ctrl-C", name)
		}
	}

	// The next start is not blocked.
	if err := os.WriteFile(filepath.Join(state, "finish"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runClusterUp(t, root, fakes, "FAKE_STATE="+state)
	if code != 0 || !exists(marker) {
		t.Fatalf("the start after Ctrl-C: exit %d, marker %v\nstdout %s\nstderr %s", code, exists(marker), out, errOut)
	}

	// A cluster of the course's name without this checkout's marker (as
	// another checkout's is): refused, naming the command that removes it,
	// and cluster-down.sh does not touch it.
	if err := os.Remove(marker); err != nil {
		t.Fatal(err)
	}
	_, errOut, code = runClusterUp(t, root, fakes, "FAKE_STATE="+state)
	if want := "cluster-up: a kind cluster named listwatch-labs exists already, not started from this checkout (another checkout's, or left by a start killed outright); if it is yours to remove: " + filepath.Join(root, ".cluster", "bin", "kind") + " delete cluster --name listwatch-labs\n"; code != 1 || errOut != want {
		t.Errorf("with a cluster and no marker: exit %d, stderr %q; want 1 and %q", code, errOut, want)
	}
	down := exec.Command(filepath.Join(root, "scripts", "cluster-down.sh"))
	down.Env = append(os.Environ(), "PATH="+fakes+string(os.PathListSeparator)+os.Getenv("PATH"), "FAKE_STATE="+state)
	if b, err := down.CombinedOutput(); err != nil {
		t.Fatalf("cluster-down.sh: %v\n%s", err, b)
	}
	calls = must(os.ReadFile(filepath.Join(state, "calls")))
	if !exists(filepath.Join(state, "cluster")) || strings.Count(string(calls), "kind delete") != 1 {
		t.Errorf("cluster-down.sh touched a cluster this checkout did not start; calls:\n%s", calls)
	}
}

func must(b []byte, _ error) []byte { return b }

// TestClusterUpWithKindUp: with the kind cluster up (its marker, and kind
// listing the cluster), plain scripts/cluster-up.sh, as every lab README
// says to run it, answers that the kind cluster is the labs' cluster and
// prints the export line, status 0; `cluster-up.sh kind` says it is already
// up; only an explicit embedded start is refused, saying how to switch.
func TestClusterUpWithKindUp(t *testing.T) {
	root, state, fakes := kindFakeRoot(t)
	for _, f := range []string{filepath.Join(state, "cluster"), filepath.Join(root, ".cluster", "kind")} {
		if err := os.WriteFile(f, []byte("listwatch-labs\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	export := "export KUBECONFIG=" + filepath.Join(root, ".cluster", "kubeconfig") + "\n"
	for _, c := range []struct {
		args           []string
		code           int
		stdout, stderr string
	}{
		{nil, 0, "cluster-up: the kind cluster (scripts/cluster-up.sh kind) is up; the labs use it\n" + export, ""},
		{[]string{"kind"}, 0, "cluster-up: kind: already up\n" + export, ""},
		{[]string{"embedded"}, 1, "", "cluster-up: a kind cluster is up; for the embedded one, stop kind first with scripts/cluster-down.sh\n"},
		{[]string{"--etcd-members", "3"}, 1, "", "cluster-up: a kind cluster is up; for the embedded one, stop kind first with scripts/cluster-down.sh\n"},
	} {
		code, stdout, stderr := clusterUpWithFakes(t, root, fakes, state, c.args...)
		if code != c.code || stdout != c.stdout || stderr != c.stderr {
			t.Errorf("cluster-up.sh %v: exit %d\nstdout %q\nstderr %q\nwant exit %d\nstdout %q\nstderr %q", c.args, code, stdout, stderr, c.code, c.stdout, c.stderr)
		}
	}
	// The marker names the image the cluster was started with (issue #30):
	// the same image is already up; the other release's is refused, naming
	// the one that is up.
	v := versions(t)
	if err := os.WriteFile(filepath.Join(root, ".cluster", "kind"), []byte("image "+v["KIND_NODE_IMAGE"]+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		code int
		out  string
	}{
		{[]string{"kind"}, 0, "cluster-up: kind: already up\n" + export},
		{[]string{"kind", "--release", "previous"}, 1, "cluster-up: a kind cluster of " + v["KIND_NODE_IMAGE"] + " is up, not of " + v["PREVIOUS_KIND_NODE_IMAGE"] + " (" + v["PREVIOUS_KUBERNETES_VERSION"] + "); stop it first with scripts/cluster-down.sh\n"},
	} {
		code, stdout, stderr := clusterUpWithFakes(t, root, fakes, state, c.args...)
		if out := stdout + stderr; code != c.code || out != c.out {
			t.Errorf("cluster-up.sh %v with the course's image up: exit %d, output %q; want exit %d, %q", c.args, code, out, c.code, c.out)
		}
	}
	if calls, _ := os.ReadFile(filepath.Join(state, "calls")); strings.Contains(string(calls), "create") {
		t.Errorf("a start with the cluster up ran kind create:\n%s", calls)
	}
}

// clusterUpWithFakes runs root's scripts/cluster-up.sh with ARGS, the fake
// kind and docker of fakes first on PATH (their state in state) and none of
// the course's variables set, and returns its exit code and its output.
func clusterUpWithFakes(t *testing.T, root, fakes, state string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(filepath.Join(root, "scripts", "cluster-up.sh"), args...)
	cmd.Env = append(os.Environ(), "PATH="+fakes+string(os.PathListSeparator)+os.Getenv("PATH"),
		"LAB_CLUSTER=", "LAB_RELEASE=", "KIND_NODE_IMAGE=", "KIND_CONFIG=", "FAKE_STATE="+state)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		code = exit.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, out.String(), errOut.String()
}
