package main

// The on-disk layout of one cluster. Everything a cluster needs lives under its
// state directory (.cluster/ for the cluster of scripts/cluster-up.sh, a temp
// directory for a cluster a test binary starts for itself), so two clusters
// never share a file and `down` can find everything `up` made.

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
)

// State is state.json: what `run` chose at start and every other subcommand
// needs later (ports for restart and compaction, the socket to talk to run).
type State struct {
	Dir           string   `json:"dir"`
	PID           int      `json:"pid"`           // the `labcluster run` supervisor
	EtcdPort      int      `json:"etcdPort"`      // etcd client port (plain HTTP, loopback only)
	EtcdPeerPort  int      `json:"etcdPeerPort"`  // etcd requires a peer listener even alone
	APIServerPort int      `json:"apiserverPort"` // kube-apiserver secure port (TLS)
	Socket        string   `json:"socket"`        // unix socket of the supervisor
	Components    []string `json:"components"`    // what this cluster runs
}

func (s *State) APIServerURL() string {
	return "https://127.0.0.1:" + strconv.Itoa(s.APIServerPort)
}

func (s *State) EtcdURL() string {
	return "http://127.0.0.1:" + strconv.Itoa(s.EtcdPort)
}

// paths names the files under a state directory.
type paths struct{ dir string }

func (p paths) state() string      { return filepath.Join(p.dir, "state.json") }
func (p paths) kubeconfig() string { return filepath.Join(p.dir, "kubeconfig") }
func (p paths) pki(name string) string {
	return filepath.Join(p.dir, "pki", name)
}
func (p paths) componentKubeconfig(user string) string {
	return filepath.Join(p.dir, "pki", user+".kubeconfig")
}
func (p paths) logs() string           { return filepath.Join(p.dir, "logs") }
func (p paths) log(name string) string { return filepath.Join(p.dir, "logs", name+".log") }
func (p paths) etcdData() string       { return filepath.Join(p.dir, "etcd") }

func writeState(s *State) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	tmp := paths{s.Dir}.state() + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, paths{s.Dir}.state())
}

// errNoCluster means the directory holds no running labcluster: nothing was
// started there, or it was a kind cluster (kind writes only a kubeconfig).
var errNoCluster = errors.New("no labcluster")

func readState(dir string) (*State, error) {
	b, err := os.ReadFile(paths{dir}.state())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w in %s (start one with scripts/cluster-up.sh; a kind cluster cannot be restarted or compacted by labcluster)", errNoCluster, dir)
	}
	if err != nil {
		return nil, err
	}
	var s State
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("%s: %v", paths{dir}.state(), err)
	}
	return &s, nil
}

// freePort asks the kernel for an unused loopback port. Another process could
// take it before we bind it again; on a lab machine that race is rare, and a
// clash shows up as a clear "address already in use" in the component's log.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
