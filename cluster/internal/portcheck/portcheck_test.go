package main

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// writeModule writes a throwaway module example.com/tiny into a temp dir.
func writeModule(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	files["go.mod"] = "module example.com/tiny\n\ngo 1.26\n"
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("GOWORK", "off")
	return dir
}

func run(t *testing.T, dir, goos, goarch string, patterns ...string) (bool, string) {
	t.Helper()
	var out bytes.Buffer
	ok, err := check(dir, goos, goarch, patterns, &out)
	if err != nil {
		t.Fatalf("check %s/%s: %v", goos, goarch, err)
	}
	return ok, out.String()
}

// A Linux-only std field in a file without a build tag: fine for linux, a
// type error for darwin, from darwin's own syscall export data. The test
// file and the external test package are checked too.
func TestLinuxOnlyFieldFailsForDarwin(t *testing.T) {
	dir := writeModule(t, map[string]string{
		"main.go": `package main

import (
	"os/exec"
	"syscall"
)

func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

func main() { dieWithParent(exec.Command("true")) }
`,
		"lib/lib.go": "package lib\n\nfunc Lib() int { return 1 }\n",
		"lib/lib_test.go": `package lib

import "syscall"

var flock = syscall.Flock // darwin has it too

func internalOnly() int { return 2 }
`,
		"lib/x_test.go": `package lib_test

import (
	"testing"

	"example.com/tiny/lib"
)

func TestLib(t *testing.T) { _ = lib.Lib() }
`,
	})
	ok, out := run(t, dir, "linux", "amd64", "./...")
	if !ok {
		t.Fatalf("linux/amd64 failed:\n%s", out)
	}
	for _, want := range []string{"ok example.com/tiny (linux/amd64)", "ok example.com/tiny/lib (linux/amd64)"} {
		if !strings.Contains(out, want) {
			t.Errorf("linux/amd64 output lacks %q:\n%s", want, out)
		}
	}
	ok, out = run(t, dir, "darwin", "arm64", "./...")
	if ok {
		t.Fatalf("darwin/arm64 passed, want a failure:\n%s", out)
	}
	for _, want := range []string{
		"FAIL example.com/tiny (darwin/arm64)",
		"main.go:9:", "unknown field Pdeathsig",
		"ok example.com/tiny/lib (darwin/arm64)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("darwin/arm64 output lacks %q:\n%s", want, out)
		}
	}
}

// Errors in _test.go files and in the external test package count, and the
// external test package sees the package's test files (export_test.go
// style), as go vet does.
func TestTestVariants(t *testing.T) {
	dir := writeModule(t, map[string]string{
		"lib/lib.go":         "package lib\n\nfunc Lib() int { return 1 }\n",
		"lib/export_test.go": "package lib\n\nvar Exported = Lib\n",
		"lib/x_test.go": `package lib_test

import (
	"syscall"
	"testing"

	"example.com/tiny/lib"
)

func TestLib(t *testing.T) {
	_ = lib.Exported()
	_ = syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
`,
	})
	ok, out := run(t, dir, "linux", "amd64", "./...")
	if !ok {
		t.Fatalf("linux/amd64 failed:\n%s", out)
	}
	ok, out = run(t, dir, "darwin", "amd64", "./...")
	if ok || !strings.Contains(out, "x_test.go:12:") || !strings.Contains(out, "unknown field Pdeathsig") {
		t.Fatalf("darwin/amd64: want the x_test.go error, got ok=%v:\n%s", ok, out)
	}
	if strings.Contains(out, "Exported") {
		t.Errorf("the external test package did not see export_test.go:\n%s", out)
	}
}

// Host export data of a non-std package (dep, compiled for linux) carries
// syscall.EpollEvent, a Linux-only type, and the importer adds it to the
// darwin syscall package. Our code naming it must still fail.
func TestHostOnlyStdNameFails(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("dep uses a Linux-only syscall type, so the host must be linux")
	}
	dir := writeModule(t, map[string]string{
		"dep/dep.go": `package dep

import "syscall"

func New() *syscall.EpollEvent { return &syscall.EpollEvent{Events: 1} }
`,
		"main.go": `package main

import (
	"syscall"

	"example.com/tiny/dep"
)

func main() {
	var e syscall.EpollEvent
	_ = dep.New()
	_ = e
}
`,
	})
	// Only ".": dep is read from host export data, as k8s.io/... is.
	ok, out := run(t, dir, "darwin", "arm64", ".")
	if ok || !strings.Contains(out, "main.go:10:") || !strings.Contains(out, "syscall.EpollEvent is not in the target's standard library") {
		t.Fatalf("darwin/arm64: want the EpollEvent error, got ok=%v:\n%s", ok, out)
	}
}

// The real cluster/ packages pass for macOS. It needs host export data of
// Kubernetes, etcd and kind: a build-cache hit once labcluster and the
// kindpath tests are built, a long compile with a cold cache, hence -short
// skips it.
func TestClusterBuildsForDarwin(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: needs host export data of k8s.io/kubernetes (cold cache: a full compile)")
	}
	t.Setenv("GOWORK", "off")
	for _, arch := range []string{"arm64", "amd64"} {
		ok, out := run(t, "../..", "darwin", arch, "./...")
		if !ok {
			t.Fatalf("darwin/%s:\n%s", arch, out)
		}
		for _, pkg := range []string{"cluster", "cluster/kindpath"} {
			want := "ok github.com/listwatch-labs/listwatch-labs/" + pkg + " (darwin/" + arch + ")"
			if !strings.Contains(out, want) {
				t.Errorf("output lacks %q:\n%s", want, out)
			}
		}
	}
}
