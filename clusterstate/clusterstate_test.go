package clusterstate

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestWriteRead(t *testing.T) {
	dir := t.TempDir()
	want := &State{Dir: dir, PID: os.Getpid(), EtcdPort: 1, EtcdPeerPort: 2, APIServerPort: 3,
		Socket: Dir(dir).Socket(), Components: []string{"etcd", "apiserver"}}
	if err := Write(want); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(Dir(dir).State())
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("state.json mode %o, want 600", fi.Mode().Perm())
	}
	got, err := Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("read back %+v, want %+v", got, want)
	}
	if got.APIServerURL() != "https://127.0.0.1:3" || got.EtcdURL() != "http://127.0.0.1:1" {
		t.Errorf("URLs %s %s", got.APIServerURL(), got.EtcdURL())
	}
	if !got.Has("apiserver") || got.Has("controller-manager") {
		t.Errorf("Has: components %v", got.Components)
	}
	if !got.Running() {
		t.Errorf("Running is false for our own pid")
	}
}

func TestReadErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := Read(dir); !errors.Is(err, ErrNoCluster) {
		t.Errorf("empty dir: got %v, want ErrNoCluster", err)
	}
	os.WriteFile(Dir(dir).State(), []byte("{not json"), 0o600)
	_, err := Read(dir)
	if err == nil || errors.Is(err, ErrNoCluster) || !strings.Contains(err.Error(), "state.json") {
		t.Errorf("bad json: got %v, want an error naming state.json", err)
	}
}

func TestRoot(t *testing.T) {
	root := t.TempDir()
	sub := filepath.Join(root, "labs", "x")
	os.MkdirAll(sub, 0o700)
	os.WriteFile(filepath.Join(root, "go.work"), []byte("go 1.26.0\n"), 0o600)
	got, err := Root(sub)
	if err != nil || got != root {
		t.Errorf("Root(%s) = %q, %v; want %s", sub, got, err, root)
	}
	if _, err := Root(t.TempDir()); err == nil || !strings.Contains(err.Error(), "no go.work") {
		t.Errorf("outside a workspace: %v", err)
	}
}

func TestDefaultDir(t *testing.T) {
	t.Setenv(EnvDir, "relative/dir")
	got, err := DefaultDir()
	wd, _ := os.Getwd()
	if err != nil || got != filepath.Join(wd, "relative/dir") {
		t.Errorf("with $%s: %q, %v", EnvDir, got, err)
	}
	t.Setenv(EnvDir, "")
	got, err = DefaultDir()
	root, _ := Root(wd) // this module sits in the course's workspace
	if err != nil || got != filepath.Join(root, DirName) {
		t.Errorf("default: %q, %v; want %s", got, err, filepath.Join(root, DirName))
	}
}

// fakeReady is a fake readiness check: the kubeconfigs in up answer.
func fakeReady(up ...string) Ready {
	return func(kc string) error {
		for _, u := range up {
			if u == kc {
				return nil
			}
		}
		return errors.New("connection refused (fake)")
	}
}

func TestDiscover(t *testing.T) {
	root := t.TempDir()
	os.WriteFile(filepath.Join(root, "go.work"), []byte("go 1.26.0\n"), 0o600)
	wd := filepath.Join(root, "labs", "x")
	os.MkdirAll(wd, 0o700)
	ws := Dir(filepath.Join(root, DirName))
	other := filepath.Join(t.TempDir(), "kind.kubeconfig")

	t.Run("nothing up", func(t *testing.T) {
		t.Setenv("KUBECONFIG", "")
		f, err := Discover(wd, fakeReady())
		if f != nil || err != nil {
			t.Errorf("got %+v, %v; want nil, nil", f, err)
		}
	})
	os.MkdirAll(string(ws), 0o700)
	os.WriteFile(ws.Kubeconfig(), []byte("fake"), 0o600)
	t.Run("stale workspace kubeconfig", func(t *testing.T) {
		t.Setenv("KUBECONFIG", "")
		f, err := Discover(wd, fakeReady())
		if f != nil || err != nil {
			t.Errorf("got %+v, %v; want nil, nil", f, err)
		}
	})
	t.Run("workspace kind cluster", func(t *testing.T) {
		t.Setenv("KUBECONFIG", "")
		f, err := Discover(wd, fakeReady(ws.Kubeconfig()))
		if err != nil || f == nil || f.Kubeconfig != ws.Kubeconfig() || f.From != FromWorkspace || f.State != nil {
			t.Errorf("got %+v, %v", f, err)
		}
	})
	Write(&State{Dir: string(ws), PID: os.Getpid(), Components: []string{"etcd", "apiserver"}})
	t.Run("workspace labcluster", func(t *testing.T) {
		t.Setenv("KUBECONFIG", "")
		f, err := Discover(wd, fakeReady(ws.Kubeconfig()))
		if err != nil || f == nil || f.From != FromWorkspace || f.State == nil || f.State.PID != os.Getpid() {
			t.Errorf("got %+v, %v", f, err)
		}
	})
	t.Run("KUBECONFIG wins", func(t *testing.T) {
		t.Setenv("KUBECONFIG", other)
		f, err := Discover(wd, fakeReady(ws.Kubeconfig(), other))
		if err != nil || f == nil || f.Kubeconfig != other || f.From != FromKubeconfigEnv || f.State != nil {
			t.Errorf("got %+v, %v", f, err)
		}
	})
	t.Run("KUBECONFIG not ready is an error", func(t *testing.T) {
		t.Setenv("KUBECONFIG", other)
		f, err := Discover(wd, fakeReady(ws.Kubeconfig()))
		want := "KUBECONFIG=" + other + " points at no ready cluster: connection refused (fake); start that cluster, or `unset KUBECONFIG` to use this checkout's own (scripts/cluster-up.sh; go test starts one when none is up)"
		if f != nil || err == nil || err.Error() != want {
			t.Errorf("got %+v, %v; want the error %q", f, err, want)
		}
	})
	// The lab READMEs have learners export KUBECONFIG=$PWD/.cluster/kubeconfig:
	// after scripts/cluster-down.sh (which removes it) that is no cluster,
	// as if KUBECONFIG were unset, so go test starts one as promised.
	t.Run("KUBECONFIG is the workspace's own and nothing answers", func(t *testing.T) {
		for _, kc := range []string{ws.Kubeconfig(), filepath.Join(root, "labs", "..", DirName, "kubeconfig")} {
			t.Setenv("KUBECONFIG", kc)
			if f, err := Discover(wd, fakeReady()); f != nil || err != nil {
				t.Errorf("KUBECONFIG=%s, nothing answers: got %+v, %v; want nil, nil (start one)", kc, f, err)
			}
		}
		os.Remove(ws.Kubeconfig())
		t.Setenv("KUBECONFIG", ws.Kubeconfig())
		if f, err := Discover(wd, fakeReady()); f != nil || err != nil {
			t.Errorf("KUBECONFIG=%s, removed by cluster-down: got %+v, %v; want nil, nil (start one)", ws.Kubeconfig(), f, err)
		}
	})
}

// TestProgramKubeconfig: a lab's program run by hand uses its flag; else the
// workspace's .cluster/kubeconfig, saying so; else it fails with one line
// that says what to start and export.
func TestProgramKubeconfig(t *testing.T) {
	root := t.TempDir()
	os.WriteFile(filepath.Join(root, "go.work"), []byte("go 1.26.0\n"), 0o644)
	wd := filepath.Join(root, "labs", "01-watch-curl")
	os.MkdirAll(wd, 0o755)
	if kc, note, err := ProgramKubeconfig(wd, "/x/kubeconfig"); kc != "/x/kubeconfig" || note != "" || err != nil {
		t.Errorf("with a flag: %q %q %v, want the flag's file and no note", kc, note, err)
	}
	_, _, err := ProgramKubeconfig(wd, "")
	if err == nil || !strings.Contains(err.Error(), "scripts/cluster-up.sh") || !strings.Contains(err.Error(), "export KUBECONFIG=") || strings.Contains(err.Error(), "\n") {
		t.Errorf("no cluster up: error %v, want one line naming scripts/cluster-up.sh and what to export", err)
	}
	want := filepath.Join(root, ".cluster", "kubeconfig")
	os.MkdirAll(filepath.Dir(want), 0o700)
	os.WriteFile(want, []byte("apiVersion: v1\n"), 0o600)
	kc, note, err := ProgramKubeconfig(wd, "")
	if kc != want || err != nil || !strings.Contains(note, want) {
		t.Errorf("a cluster up: %q %q %v, want %s and a note naming it", kc, note, err, want)
	}
	if _, _, err := ProgramKubeconfig(t.TempDir(), ""); err == nil || !strings.Contains(err.Error(), "export KUBECONFIG=") {
		t.Errorf("outside a workspace: error %v, want what to export", err)
	}
}
