package watchcmd

import (
	"bytes"
	"strings"
	"testing"

	"github.com/listwatch-labs/listwatch-labs/labs/01-watch-curl/watchapi"
)

// TestUsage: bad usage is exit code 2 with the usage on stderr, nothing on
// stdout.
func TestUsage(t *testing.T) {
	for _, args := range [][]string{{}, {"-o", "yaml", "configmaps"}, {"-nosuchflag"}, {"configmaps", "pods"}} {
		var stdout, stderr bytes.Buffer
		if code := Main(args, &stdout, &stderr); code != 2 {
			t.Errorf("Main(%q) = %d, want 2", args, code)
		}
		if stdout.Len() != 0 || !strings.Contains(stderr.String(), "usage: watch [flags] RESOURCE") {
			t.Errorf("Main(%q): stdout %q stderr %q", args, stdout.String(), stderr.String())
		}
	}
}

// TestNoKubeconfig: an unreadable kubeconfig is exit code 1 with one line
// saying so.
func TestNoKubeconfig(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := Main([]string{"-kubeconfig", t.TempDir() + "/missing", "configmaps"}, &stdout, &stderr)
	if code != 1 || !strings.HasPrefix(stderr.String(), "watch: ") || !strings.Contains(stderr.String(), "missing") {
		t.Errorf("code %d stderr %q", code, stderr.String())
	}
}

// TestPrintLine pins the line format the README shows.
func TestPrintLine(t *testing.T) {
	var out bytes.Buffer
	for _, frame := range []string{
		`{"type":"ADDED","object":{"kind":"ConfigMap","metadata":{"name":"colors","resourceVersion":"265"}}}`,
		`{"type":"BOOKMARK","object":{"kind":"ConfigMap","metadata":{"resourceVersion":"268","annotations":{"k8s.io/initial-events-end":"true"}}}}`,
		`{"type":"ERROR","object":{"kind":"Status","status":"Failure","message":"too old resource version: 264 (740)","reason":"Expired","code":410}}`,
	} {
		ev, err := watchapi.NewDecoder(strings.NewReader(frame)).Next()
		if err != nil {
			t.Fatal(err)
		}
		if err := printLine(&out, ev); err != nil {
			t.Fatal(err)
		}
	}
	want := `ADDED ConfigMap colors resourceVersion=265
BOOKMARK ConfigMap resourceVersion=268 k8s.io/initial-events-end=true
ERROR 410 Expired: too old resource version: 264 (740)
`
	if out.String() != want {
		t.Errorf("got\n%s\nwant\n%s", out.String(), want)
	}
}
