package labkit

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// captureT is testscript's T that records what testscript logs, verbose as
// with go test -v; it stands for *testing.T in TestScriptLogHidesTheToken.
type captureT struct {
	log *strings.Builder
}

func (c captureT) Skip(args ...any)  { c.Log(args...) }
func (c captureT) Fatal(args ...any) { c.Log(args...) }
func (c captureT) Log(args ...any) {
	for _, a := range args {
		c.log.WriteString(redact(strings.TrimSpace(toString(a))) + "\n")
	}
}
func (c captureT) Parallel()                          {}
func (c captureT) FailNow()                           {}
func (c captureT) Verbose() bool                      { return true }
func (c captureT) Run(_ string, f func(testscript.T)) { f(c) }
func toString(a any) string                           { s, _ := a.(string); return s }

// TestScriptLogHidesTheToken runs a script the way the scenarios use the
// token (in the environment, in a background command's arguments) with a
// verbose log, which shows the environment and the expanded arguments of
// background commands, and checks that the token is not in it.
func TestScriptLogHidesTheToken(t *testing.T) {
	const token = "s3cr3t-bearer-token-for-this-test"
	dir := t.TempDir()
	// Left running at the end: testscript then logs it with its arguments.
	script := "exec sh -c 'echo using $0' $TOKEN &bg&\n"
	if err := os.WriteFile(filepath.Join(dir, "token.txtar"), []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	registerToken(token)
	testscript.RunT(captureT{log: &log}, testscript.Params{
		Dir: dir,
		Setup: func(env *testscript.Env) error {
			env.Setenv("TOKEN", token)
			return nil
		},
	})
	got := log.String()
	if strings.Contains(got, token) {
		t.Fatalf("the token is in the script's log:\n%s", got)
	}
	// The log did show the environment and the background command, with
	// the token redacted: the check above was not vacuous.
	for _, want := range []string{"TOKEN=[TOKEN]", "[background] sh -c echo using $0 [TOKEN]"} {
		if !strings.Contains(got, want) {
			t.Errorf("the log lacks %q:\n%s", want, got)
		}
	}
}
