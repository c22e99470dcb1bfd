package labkit

// Targets: which server a script talks to. A script has exactly one current
// target at a time, and labkit owns it: every labkit command (kapply, kwatch,
// listrv, waitfor, kubectl, labcluster ...), every lab command that asks
// labkit (Target(ts)), and the variables KUBECONFIG, APISERVER, TOKEN, CACERT
// and LABCLUSTER_DIR follow it. `target NAME` switches; `privatecluster` is
// `target private`. A command that needs what the target lacks (restart,
// compaction) fails and says so, instead of acting on another server.

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

// The targets labkit knows by itself.
const (
	// TargetReal is the cluster of this test binary (Current()).
	TargetReal = "real"
	// TargetPrivate is an etcd and apiserver started for one script, for
	// lessons that restart the apiserver or compact etcd.
	TargetPrivate = "private"
)

// StartTarget starts a lab's own server for one script and returns it as a
// Cluster (NewTarget makes one from a kubeconfig). work is the script's
// $WORK, where the server's kubeconfig and files go; args are the rest of
// `target NAME ARGS...` (nil when labkit starts it as a script's first
// target). labkit calls the Cluster's Stop when the script ends.
type StartTarget func(work string, args []string) (*Cluster, error)

// scriptKey finds the per-script state in testscript's Values.
type scriptKey struct{}

// script is everything labkit keeps for one script, in one place.
type script struct {
	run     *run                // the RunScripts call this script belongs to
	work    string              // $WORK
	ns      string              // $NS, the same name on every target
	target  *Cluster            // the current target
	started map[string]*Cluster // targets started for this script, by name
	tokens  map[*Cluster]string // targets on which $NS is prepared: the script's token there
	watches map[string]*RawWatch
	bg      map[string]*background // background kubectls
	proxies map[string]*tcpProxy   // tcpproxy, by name
	values  map[any]any            // a lab's own per-script state (ScriptValue)
}

// run is one testscript.Run: the scripts of a directory on one target.
type run struct {
	first   string // the target each script starts on
	targets map[string]StartTarget
}

func stateOf(ts *testscript.TestScript) *script {
	s, _ := ts.Value(scriptKey{}).(*script)
	if s == nil {
		ts.Fatalf("labkit: no script state (is labkit.Setup the Params.Setup?)")
	}
	return s
}

// Target returns the script's current target: for a lab's own commands,
// which must talk to the same server as labkit's.
func Target(ts *testscript.TestScript) *Cluster { return stateOf(ts).target }

// ScriptValue returns the value a lab keeps under key for this script,
// making it with mk the first time. Values that implement Stop() error or
// Close() error are stopped when the script ends (last made, first stopped).
func ScriptValue[T any](ts *testscript.TestScript, key any, mk func() T) T {
	s := stateOf(ts)
	if v, ok := s.values[key]; ok {
		return v.(T)
	}
	v := mk()
	s.values[key] = v
	ts.Defer(func() {
		switch c := any(v).(type) {
		case interface{ Stop() error }:
			c.Stop()
		case interface{ Close() error }:
			c.Close()
		}
	})
	return v
}

// use makes c the script's target: $NS exists on it and the variables point
// at it.
func (s *script) use(c *Cluster, setenv func(k, v string)) error {
	if _, ok := s.tokens[c]; !ok {
		token := c.Token // a lab server's own: it dies with the server
		if c.PrepareNamespace != nil {
			if err := c.PrepareNamespace(s.ns); err != nil {
				return fmt.Errorf("target %s: namespace %s: %w", c.Name, s.ns, err)
			}
		} else {
			if err := createNamespace(c, s.ns); err != nil {
				return fmt.Errorf("target %s: %w", c.Name, err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			var err error
			token, err = scriptToken(ctx, c.Client, s.ns)
			cancel()
			if err != nil {
				return fmt.Errorf("target %s: a token for the script's curl: %w", c.Name, err)
			}
		}
		s.tokens[c] = token
	}
	s.target = c
	// Each target's credentials in files of their own: a background command
	// started on one target keeps working after a switch.
	token := filepath.Join(s.work, c.Name+".token")
	if err := os.WriteFile(token, []byte(s.tokens[c]), 0o600); err != nil {
		return err
	}
	ca := filepath.Join(s.work, c.Name+"-ca.crt")
	if err := os.WriteFile(ca, c.CAData, 0o600); err != nil {
		return err
	}
	setenv("NS", s.ns)
	setenv("TARGET", c.Name)
	setenv("KUBECONFIG", c.Kubeconfig)
	setenv("APISERVER", c.Server)
	// Kept out of the logs (redact.go): the script's token, and the
	// cluster's own credential it was minted with.
	registerToken(s.tokens[c])
	registerToken(c.Token)
	setenv("TOKEN", s.tokens[c])
	setenv("CACERT", ca)
	setenv("LABCLUSTER_DIR", c.Dir)
	return nil
}

// start starts target name for this script (again, with args, if args are
// given or it never ran), or returns the one already started.
func (s *script) start(name string, args []string) (*Cluster, error) {
	if c, ok := s.started[name]; ok && len(args) == 0 {
		return c, nil
	}
	var c *Cluster
	var err error
	switch name {
	case TargetReal:
		if len(args) > 0 {
			return nil, fmt.Errorf("target real takes no arguments")
		}
		c = current
	case TargetPrivate:
		if len(args) > 0 {
			return nil, fmt.Errorf("target private takes no arguments")
		}
		if current.Dir == "" {
			return nil, fmt.Errorf("target private needs the embedded cluster (this one is not a labcluster); guard the script with [!labcluster] skip")
		}
		c, err = StartEmbedded(filepath.Join(s.work, ".cluster"), "etcd", "apiserver")
	default:
		start, ok := s.run.targets[name]
		if !ok {
			return nil, fmt.Errorf("unknown target %q (known: %s)", name, strings.Join(s.run.names(), ", "))
		}
		c, err = start(s.work, args)
	}
	if err != nil {
		return nil, fmt.Errorf("target %s: %w", name, err)
	}
	if c != current { // current is shared by every script; Main named it
		c.Name = name
	}
	if old, ok := s.started[name]; ok && old != c {
		delete(s.tokens, old)
		old.Stop()
	}
	s.started[name] = c
	return c, nil
}

func (r *run) names() []string {
	names := append([]string{TargetReal, TargetPrivate}, slices.Sorted(maps.Keys(r.targets))...)
	return names
}

// stop ends what the script started: watches, background kubectls, and
// every target but the binary's own cluster.
func (s *script) stop() {
	for _, w := range s.watches {
		w.Stop()
	}
	for _, b := range s.bg {
		b.stop()
	}
	for _, p := range s.proxies {
		p.stop()
	}
	for _, c := range s.started {
		if c != current {
			c.Stop()
		}
	}
	// Deleting the namespace is asynchronous: the namespace controller
	// empties it later. A private cluster is thrown away whole.
	if _, ok := s.tokens[current]; ok {
		deleteNamespace(current, s.ns)
	}
}

// target NAME [ARGS...]: make NAME the script's target, starting it if this
// script has not yet (or again, when ARGS are given: a lab server's options).
func cmdTarget(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "target")
	if len(args) == 0 {
		ts.Fatalf("usage: target NAME [ARGS...] (targets: %s)", strings.Join(stateOf(ts).run.names(), ", "))
	}
	s := stateOf(ts)
	c, err := s.start(args[0], args[1:])
	ts.Check(err)
	ts.Check(s.use(c, ts.Setenv))
}

// privatecluster: target private. Kept as its own word because it says what
// a script needs: its own etcd and apiserver, to restart or compact.
func cmdPrivateCluster(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "privatecluster")
	if len(args) != 0 {
		ts.Fatalf("usage: privatecluster")
	}
	cmdTarget(ts, false, []string{TargetPrivate})
}

// notLabcluster says why what cannot be done on target c: only a
// labcluster has an apiserver labkit can restart and an etcd it can compact.
func notLabcluster(c *Cluster, what string) string {
	return fmt.Sprintf("%s: target %s is not a labcluster: it has no apiserver labkit can restart and no etcd it can compact; use privatecluster, or guard the script with [labcluster]", what, c.Name)
}
