package labkit

// Releases: which Kubernetes release a server is. The course runs its tests
// against two (versions.env: the one it teaches and the previous one, which
// scripts/previous-release.sh starts). A test whose outcome differs by
// release asserts each release's behaviour, chosen by what the server says
// it is at /version, and is never skipped on either.
//
// Upstream counterpart: the apiserver serves `version.Info`
// (k8s.io/apimachinery@v0.37.0/pkg/version/types.go:22-42) at /version,
// and client-go reads it with `ServerVersionWithContext`
// (k8s.io/client-go@v0.37.0/discovery/discovery_client.go:1161-1172), as
// `kubectl version` does. Left out: everything but the major and minor
// numbers (the course's list-watch path changes between minors, not
// patches).

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/client-go/discovery"
)

// releases caches each server's version: it does not change while a test
// binary runs.
var releases sync.Map // *Cluster -> *version.Version

// ServerVersion returns the version c's apiserver reports at /version (its
// gitVersion, such as v1.37.0), read once per Cluster.
func (c *Cluster) ServerVersion() (*version.Version, error) {
	if v, ok := releases.Load(c); ok {
		return v.(*version.Version), nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	info, err := discovery.ToDiscoveryInterfaceWithContext(c.Client.Discovery()).ServerVersionWithContext(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s/version: %w", c.Server, err)
	}
	// gitVersion, not Major and Minor: those may carry a "+" (vendors'
	// builds), and gitVersion is what `kubectl version` shows.
	v, err := version.ParseGeneric(info.GitVersion)
	if err != nil {
		return nil, fmt.Errorf("%s/version: gitVersion %q: %w", c.Server, info.GitVersion, err)
	}
	releases.Store(c, v)
	return v, nil
}

// Release returns c's "MAJOR.MINOR", such as "1.36".
func (c *Cluster) Release() (string, error) {
	v, err := c.ServerVersion()
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%d.%d", v.Major(), v.Minor()), nil
}

// ServerMinor returns the minor version of this test binary's cluster
// (Current()): 37 for v1.37.0, 36 for the previous release (versions.env).
// A test asserts the behaviour of each release with it:
//
//	if labkit.ServerMinor(t) >= 37 { ...gzip... } else { ...plain... }
func ServerMinor(t testing.TB) int {
	t.Helper()
	if current == nil {
		t.Fatal("labkit.ServerMinor needs a cluster: call labkit.Main from TestMain")
	}
	v, err := current.ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	if v.Major() != 1 {
		t.Fatalf("%s: Kubernetes %s, want 1.x", current.Server, v)
	}
	return int(v.Minor())
}

// cmdRelease: `release` sets $RELEASE to the current target's release
// ("1.37", "1.36"), for what a script expects of each release: a golden
// file per release (`cmp stdout want-$RELEASE.txt`, with want-1.37.txt and
// want-1.36.txt in the archive). A lab's own server reports the release
// whose behaviour it reproduces. After `target NAME`, run it again.
func cmdRelease(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "release")
	if len(args) != 0 {
		ts.Fatalf("usage: release")
	}
	r, err := Target(ts).Release()
	ts.Check(err)
	ts.Setenv("RELEASE", r)
}
