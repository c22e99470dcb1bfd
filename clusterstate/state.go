// Package clusterstate owns the one thing labcluster, labkit and the scripts
// must agree on: where a cluster's state lives, what state.json holds, and
// how to tell whether a cluster is up and which one the tests should use.
//
// It has no upstream counterpart. It imports nothing but the standard
// library, so labkit (in the go.work workspace) and cluster/ (built with
// GOWORK=off through a replace directive) share it without either one pulling
// the other's dependencies in: k8s.io/kubernetes stays out of the labs'
// build list.
//
// Shell scripts do not parse state.json: they ask `labcluster status -o env`,
// which prints what this package finds as shell assignments.
package clusterstate

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
)

// DirName is the state directory of the workspace's cluster, at the root of
// the go.work workspace: what scripts/cluster-up.sh starts.
const DirName = ".cluster"

// EnvDir names a state directory that overrides <workspace>/.cluster for the
// labcluster commands; labkit sets it for the scripts it runs.
const EnvDir = "LABCLUSTER_DIR"

// State is state.json: what the supervisor (`labcluster run`) chose at start
// and every other command needs later (ports for restart and compaction, the
// socket to talk to the supervisor, the components that run).
type State struct {
	Dir           string   `json:"dir"`
	PID           int      `json:"pid"`           // the `labcluster run` supervisor
	EtcdPort      int      `json:"etcdPort"`      // etcd client port (plain HTTP, loopback only)
	EtcdPeerPort  int      `json:"etcdPeerPort"`  // etcd requires a peer listener even alone
	APIServerPort int      `json:"apiserverPort"` // kube-apiserver secure port (TLS)
	Socket        string   `json:"socket"`        // unix socket of the supervisor
	Components    []string `json:"components"`    // what this cluster runs, in start order
	// EtcdMembers lists the members of a multi-member etcd (`labcluster up
	// --etcd-members 3`); empty for the usual single member, whose ports are
	// EtcdPort and EtcdPeerPort. The first member's ports are those too, so
	// EtcdURL always names a member.
	EtcdMembers []EtcdMember `json:"etcdMembers,omitempty"`
	// Version is the Kubernetes release the supervisor's binary runs
	// (labcluster, or labcluster-1.N of the previous release: issue #30),
	// so that `labcluster up` of the other release does not take this
	// cluster for its own. Empty in a state.json written before it existed.
	Version string `json:"version,omitempty"`
}

// EtcdMember is one member of a multi-member etcd: its name (also its
// component name, its log's and its data directory's) and its ports.
type EtcdMember struct {
	Name       string `json:"name"`
	ClientPort int    `json:"clientPort"`
	PeerPort   int    `json:"peerPort"`
}

// ClientURL is the member's client address.
func (m EtcdMember) ClientURL() string { return "http://127.0.0.1:" + strconv.Itoa(m.ClientPort) }

// PeerURL is the member's peer address.
func (m EtcdMember) PeerURL() string { return "http://127.0.0.1:" + strconv.Itoa(m.PeerPort) }

// APIServerURL is the apiserver's address, as its kubeconfig names it.
func (s *State) APIServerURL() string {
	return "https://127.0.0.1:" + strconv.Itoa(s.APIServerPort)
}

// EtcdURL is etcd's client address.
func (s *State) EtcdURL() string {
	return "http://127.0.0.1:" + strconv.Itoa(s.EtcdPort)
}

// Members returns etcd's members: EtcdMembers, or the one member named
// "etcd".
func (s *State) Members() []EtcdMember {
	if len(s.EtcdMembers) > 0 {
		return s.EtcdMembers
	}
	return []EtcdMember{{Name: "etcd", ClientPort: s.EtcdPort, PeerPort: s.EtcdPeerPort}}
}

// EtcdURLs is every member's client address, as the apiserver's
// --etcd-servers lists them.
func (s *State) EtcdURLs() []string {
	var out []string
	for _, m := range s.Members() {
		out = append(out, m.ClientURL())
	}
	return out
}

// Has tells whether the cluster runs a component ("controller-manager", ...).
func (s *State) Has(component string) bool {
	return slices.Contains(s.Components, component)
}

// Running tells whether the supervisor that wrote the state still runs. Its
// components die with it, so a state whose supervisor is gone is stale.
func (s *State) Running() bool { return Alive(s.PID) }

// Dir is a cluster's state directory; its methods name the files in it.
// Everything a cluster needs lives under it, so two clusters never share a
// file and `down` finds everything `up` made.
type Dir string

func (d Dir) path(elem ...string) string {
	return filepath.Join(append([]string{string(d)}, elem...)...)
}

// State is state.json, written by the supervisor once its ports are chosen
// and removed by `down`.
func (d Dir) State() string { return d.path("state.json") }

// Kubeconfig is the admin kubeconfig (mode 0600, CA embedded, bearer token).
func (d Dir) Kubeconfig() string { return d.path("kubeconfig") }

// PKI names a file of the cluster's credentials; PKI("") is their directory.
func (d Dir) PKI(name string) string { return d.path("pki", name) }

// ComponentKubeconfig is the kubeconfig of a component's identity.
func (d Dir) ComponentKubeconfig(user string) string { return d.path("pki", user+".kubeconfig") }

// Logs is the directory of the component logs; Log one component's log.
func (d Dir) Logs() string           { return d.path("logs") }
func (d Dir) Log(name string) string { return d.path("logs", name+".log") }

// EtcdData is etcd's data directory.
func (d Dir) EtcdData() string { return d.path("etcd") }

// Socket is the supervisor's control socket when the path fits in a unix
// socket address (about 100 bytes); State.Socket records the one in use.
func (d Dir) Socket() string { return d.path("labcluster.sock") }

// Lock is the file the supervisor holds an exclusive flock on.
func (d Dir) Lock() string { return d.path("lock") }

// SupervisorLog is where `labcluster up` sends the supervisor's own output.
func (d Dir) SupervisorLog() string { return d.path("labcluster.log") }

// KindMarker exists while scripts/cluster-up.sh kind's cluster is up: the
// directory then holds a kubeconfig but no state.json.
func (d Dir) KindMarker() string { return d.path("kind") }

// ErrNoCluster means a directory holds no labcluster state: nothing was
// started there, or the cluster is kind's (kind writes only a kubeconfig).
var ErrNoCluster = errors.New("no labcluster")

// Read reads dir's state.json. It does not check that the cluster still runs
// (State.Running does).
func Read(dir string) (*State, error) {
	file := Dir(dir).State()
	b, err := os.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w in %s (start one with scripts/cluster-up.sh; a kind cluster cannot be restarted or compacted by labcluster)", ErrNoCluster, dir)
	}
	if err != nil {
		return nil, err
	}
	var s State
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("%s: %v", file, err)
	}
	return &s, nil
}

// Write writes s to s.Dir's state.json (mode 0600), atomically: a reader sees
// the old file or the new one, never half of one.
func Write(s *State) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	file := Dir(s.Dir).State()
	tmp := file + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, file)
}

// Root returns the workspace root: the nearest directory at or above dir that
// holds go.work.
func Root(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for d := abs; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.work")); err == nil {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no go.work at or above %s", abs)
		}
	}
}

// DefaultDir is the state directory the labcluster commands act on when not
// given one: $LABCLUSTER_DIR, else .cluster at the root of the workspace
// around the working directory. The result is absolute.
func DefaultDir() (string, error) {
	d := os.Getenv(EnvDir)
	if d == "" {
		wd, err := os.Getwd()
		if err != nil {
			return "", err
		}
		root, err := Root(wd)
		if err != nil {
			return "", fmt.Errorf("%v: pass --dir or set %s", err, EnvDir)
		}
		d = filepath.Join(root, DirName)
	}
	return filepath.Abs(d)
}
