package clusterstate

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Where a found cluster came from (Found.From).
const (
	FromKubeconfigEnv = "KUBECONFIG" // $KUBECONFIG was set
	FromWorkspace     = "workspace"  // <workspace>/.cluster/kubeconfig
)

// Found is the cluster the tests should use.
type Found struct {
	// Kubeconfig is the file to talk to it with.
	Kubeconfig string
	// From says which rule found it: FromKubeconfigEnv or FromWorkspace.
	From string
	// State is its labcluster state when its kubeconfig sits in a labcluster
	// state directory, nil for kind or any other cluster: those cannot be
	// restarted or compacted by labcluster.
	State *State
}

// Ready checks that the cluster of a kubeconfig answers (its /readyz).
// Callers pass their own: this package reads no kubeconfig, so that it needs
// nothing beyond the standard library.
type Ready func(kubeconfig string) error

// Discover applies the course's one rule for finding a cluster:
//
//  1. $KUBECONFIG, when set, names the cluster; it must be ready, or Discover
//     returns an error saying what to do (a learner who points at a cluster
//     wants that one, not a fresh one behind their back). One exception: when
//     it names this workspace's own <workspace>/.cluster/kubeconfig, as the
//     lab READMEs have learners export it, a cluster that does not answer
//     there is rule 3, as if $KUBECONFIG were unset.
//  2. Else <workspace>/.cluster/kubeconfig, if it exists and its cluster is
//     ready: the one scripts/cluster-up.sh started (labcluster or kind).
//  3. Else nothing: Discover returns nil, nil, and the caller starts a cluster
//     of its own (labkit for a test binary, scripts/test.sh for a run).
//
// wd is the directory the workspace is looked for from.
func Discover(wd string, ready Ready) (*Found, error) {
	root, rootErr := Root(wd)
	if kc := os.Getenv("KUBECONFIG"); kc != "" {
		err := ready(kc)
		if err == nil {
			return found(kc, FromKubeconfigEnv)
		}
		if rootErr == nil && samePath(kc, Dir(filepath.Join(root, DirName)).Kubeconfig()) {
			return nil, nil // the workspace's own, and nothing answers there: rule 3
		}
		return nil, fmt.Errorf("KUBECONFIG=%s points at no ready cluster: %w; start that cluster, or `unset KUBECONFIG` to use this checkout's own (scripts/cluster-up.sh; go test starts one when none is up)", kc, err)
	}
	if rootErr != nil {
		return nil, rootErr
	}
	kc := Dir(filepath.Join(root, DirName)).Kubeconfig()
	if _, err := os.Stat(kc); err != nil {
		return nil, nil
	}
	if err := ready(kc); err != nil {
		// A kubeconfig left by a cluster that is gone: not an error.
		return nil, nil
	}
	return found(kc, FromWorkspace)
}

// samePath tells whether two paths name the same file: the same absolute
// path once symbolic links in their directories are resolved (the file
// itself may not exist: cluster-down removes the kubeconfig).
func samePath(a, b string) bool {
	resolve := func(p string) string {
		p, err := filepath.Abs(p)
		if err != nil {
			return p
		}
		if dir, err := filepath.EvalSymlinks(filepath.Dir(p)); err == nil {
			return filepath.Join(dir, filepath.Base(p))
		}
		return filepath.Clean(p)
	}
	return resolve(a) == resolve(b)
}

func found(kc, from string) (*Found, error) {
	f := &Found{Kubeconfig: kc, From: from}
	s, err := Read(filepath.Dir(kc))
	switch {
	case errors.Is(err, ErrNoCluster):
	case err != nil:
		return nil, err
	default:
		f.State = s
	}
	return f, nil
}

// ProgramKubeconfig is the kubeconfig a lab's program (lab 01's watch, lab
// 02's listwatch, lab 05's informer and podsbynode) talks to when run by
// hand: flagValue (its --kubeconfig, whose default is $KUBECONFIG) when set;
// else, as the tests find it, the kubeconfig scripts/cluster-up.sh wrote in
// the workspace around wd, and note says so in one line for the program to
// print; else an error that says what to start and what to export. Unlike
// client-go's default rules it never falls back to ~/.kube/config (a
// learner's own cluster) or to the in-cluster config (two klog warnings and
// "no configuration has been provided").
func ProgramKubeconfig(wd, flagValue string) (kubeconfig, note string, err error) {
	if flagValue != "" {
		return flagValue, "", nil
	}
	root, rootErr := Root(wd)
	if rootErr == nil {
		kc := Dir(filepath.Join(root, DirName)).Kubeconfig()
		if _, err := os.Stat(kc); err == nil {
			return kc, fmt.Sprintf("using %s (this checkout's cluster; --kubeconfig or $KUBECONFIG picks another)", kc), nil
		}
		return "", "", fmt.Errorf("no --kubeconfig, no $KUBECONFIG, and no cluster up in this checkout: start one with scripts/cluster-up.sh (then this finds %s), or export KUBECONFIG=<your cluster's kubeconfig>", kc)
	}
	return "", "", errors.New("no --kubeconfig and no $KUBECONFIG: export KUBECONFIG=<the listwatch-labs checkout>/.cluster/kubeconfig (scripts/cluster-up.sh writes it)")
}
