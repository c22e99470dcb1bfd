package labkit

// `labcluster status -o env|json`: the one place scripts learn which cluster
// is up (clusterstate owns the rule; scripts/test.sh evals this output).

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// statusEnv runs `labcluster status -o env` in a real sh, evals its output
// and returns the variables it set, with the exit status as "rc".
func statusEnv(t *testing.T, env ...string) map[string]string {
	t.Helper()
	bin, err := LabclusterBinary()
	if err != nil {
		t.Fatal(err)
	}
	// The exit status is kept apart: eval of a substitution would lose it.
	script := `out=$("$0" status -o env); rc=$?; eval "$out"
printf '%s\0' "rc=$rc" "up=$up" "from=$from" "kubeconfig=$kubeconfig" "dir=$dir" "apiserver=$apiserver" "components=$components" "pid=$pid" "reason=$reason"`
	cmd := exec.Command("sh", "-c", script, bin)
	cmd.Env = append(cleanEnv(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("sh: %v\n%s", err, stderr.Bytes())
	}
	got := map[string]string{"stderr": stderr.String()}
	for _, kv := range strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00") {
		k, v, _ := strings.Cut(kv, "=")
		got[k] = v
	}
	return got
}

// cleanEnv is this process's environment without the variables that pick a
// cluster, which the test sets itself.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "KUBECONFIG=") && !strings.HasPrefix(kv, "LABCLUSTER_DIR=") {
			env = append(env, kv)
		}
	}
	return env
}

func TestLabclusterStatus(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	t.Parallel() // a cluster of its own, in its own directory, on free ports
	// A path a careless `eval` would break on: a space and a single quote.
	dir := filepath.Join(t.TempDir(), "it's a dir")
	c, err := StartEmbedded(dir, "etcd", "apiserver")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	kc := filepath.Join(dir, "kubeconfig")

	check := func(t *testing.T, got map[string]string, want map[string]string) {
		t.Helper()
		for k, v := range want {
			if got[k] != v {
				t.Errorf("%s=%q, want %q (stderr %q)", k, got[k], v, got["stderr"])
			}
		}
	}
	t.Run("by LABCLUSTER_DIR", func(t *testing.T) {
		check(t, statusEnv(t, "LABCLUSTER_DIR="+dir), map[string]string{
			"rc": "0", "up": "true", "from": "dir", "kubeconfig": kc, "dir": dir,
			"apiserver": c.Server, "components": "etcd,apiserver", "reason": "",
		})
	})
	t.Run("by KUBECONFIG", func(t *testing.T) {
		check(t, statusEnv(t, "KUBECONFIG="+kc), map[string]string{
			"rc": "0", "up": "true", "from": "KUBECONFIG", "kubeconfig": kc, "dir": dir,
			"apiserver": c.Server, "components": "etcd,apiserver",
		})
	})
	t.Run("json", func(t *testing.T) {
		bin, _ := LabclusterBinary()
		cmd := exec.Command(bin, "status", "-o", "json", "--dir", dir)
		cmd.Env = cleanEnv()
		out, err := cmd.Output()
		if err != nil {
			t.Fatal(err)
		}
		var st struct {
			Up         bool     `json:"up"`
			APIServer  string   `json:"apiserver"`
			PID        int      `json:"pid"`
			Components []string `json:"components"`
		}
		if err := json.Unmarshal(out, &st); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		if !st.Up || st.APIServer != c.Server || st.PID != c.process.Process.Pid || strings.Join(st.Components, ",") != "etcd,apiserver" {
			t.Errorf("status -o json: %s", out)
		}
	})

	pid := c.process.Process.Pid
	c.Stop()
	t.Run("stopped, by LABCLUSTER_DIR", func(t *testing.T) {
		got := statusEnv(t, "LABCLUSTER_DIR="+dir)
		check(t, got, map[string]string{"rc": "3", "up": "false", "kubeconfig": "", "dir": dir})
		if want := "is not running (supervisor pid " + strconv.Itoa(pid) + " is gone)"; !strings.Contains(got["reason"], want) {
			t.Errorf("reason %q, want it to say %q", got["reason"], want)
		}
	})
	t.Run("stopped, by KUBECONFIG", func(t *testing.T) {
		bin, _ := LabclusterBinary()
		cmd := exec.Command(bin, "status", "-o", "env")
		cmd.Env = append(cleanEnv(), "KUBECONFIG="+kc)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 1 {
			t.Fatalf("exit %v, want status 1 (the named cluster does not answer)\n%s", err, out)
		}
		if want := "labcluster status: KUBECONFIG=" + kc + " points at no ready cluster: "; !strings.HasPrefix(stderr.String(), want) {
			t.Errorf("stderr %q, want it to start with %q", stderr.String(), want)
		}
	})
}

// TestLabclusterNamesAnUnknownSubcommand: `labcluster etcd kil follower`
// names the word it does not know and lists the ones it does, before the
// usage (a usage alone leaves the learner to spot the typo).
func TestLabclusterNamesAnUnknownSubcommand(t *testing.T) {
	bin, err := LabclusterBinary()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"etcd", "kil", "follower"}, `labcluster etcd: unknown "kil"; labcluster etcd takes "compact", "kill", "start"` + "\n"},
		{[]string{"restart", "apiserve"}, `labcluster restart: unknown "apiserve"; labcluster restart takes "apiserver"` + "\n"},
		{[]string{"etcd"}, "labcluster etcd: name a subcommand: compact, kill, start\n"},
	} {
		cmd := exec.Command(bin, tc.args...)
		cmd.Dir = t.TempDir() // nothing of a cluster here, and none is created
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.HasPrefix(string(out), tc.want) || !strings.Contains(string(out), "usage:") {
			t.Errorf("labcluster %s: exit %v, output:\n%s\nwant status 2, first %q, then the usage", strings.Join(tc.args, " "), err, out, tc.want)
		}
	}
}
