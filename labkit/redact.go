package labkit

// Bearer tokens stay out of test logs. testscript's log (printed with -v, or
// when a script fails) shows the environment a script starts with and the
// expanded arguments of background commands ("[background] curl ...
// --oauth2-bearer ..."), so a `go test -v` of a scenario would print the
// cluster's token. Every token labkit hands to a script is registered here,
// and RunScripts gives testscript a testing.T whose log replaces each one
// with [TOKEN]. Scripts still use $TOKEN as before; the token itself is also
// in $WORK/<target>.token (mode 0600) for whoever needs the value.

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// tokens are the secrets redacted from every script log of this test binary.
var tokens sync.Map // string -> struct{}

// registerToken adds a bearer token to the set redacted from logs.
func registerToken(token string) {
	if len(token) >= 8 { // a short string would redact ordinary words
		tokens.Store(token, struct{}{})
	}
}

// redact replaces every registered token in s with [TOKEN].
func redact(s string) string {
	tokens.Range(func(k, _ any) bool {
		s = strings.ReplaceAll(s, k.(string), "[TOKEN]")
		return true
	})
	return s
}

// redactingT is testscript's view of a *testing.T, with tokens redacted from
// what it logs.
type redactingT struct{ t *testing.T }

func (r redactingT) Skip(args ...any)  { r.t.Helper(); r.t.Skip(redact(fmt.Sprint(args...))) }
func (r redactingT) Fatal(args ...any) { r.t.Helper(); r.t.Fatal(redact(fmt.Sprint(args...))) }
func (r redactingT) Log(args ...any)   { r.t.Helper(); r.t.Log(redact(fmt.Sprint(args...))) }
func (r redactingT) Parallel()         { r.t.Parallel() }
func (r redactingT) FailNow()          { r.t.FailNow() }
func (r redactingT) Verbose() bool     { return testing.Verbose() }
func (r redactingT) Run(name string, f func(testscript.T)) {
	r.t.Run(name, func(t *testing.T) {
		checksListedExercises(t)
		f(redactingT{t})
	})
}
