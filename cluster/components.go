package main

// The components of the control plane, each run as `labcluster component NAME`
// in a child process of the supervisor (hyperkube style: one binary, many
// programs). kube-apiserver, kube-controller-manager and kube-scheduler are the
// real commands from k8s.io/kubernetes v1.37.0, given the flags a small
// kubeadm-like cluster would use, minus everything that needs a real machine.

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/listwatch-labs/listwatch-labs/clusterstate"
	"k8s.io/component-base/cli"
	apiserver "k8s.io/kubernetes/cmd/kube-apiserver/app"
	controllermanager "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	scheduler "k8s.io/kubernetes/cmd/kube-scheduler/app"
)

// Component names, in start order. `down` stops them in reverse: clients of the
// apiserver first, then the apiserver, then etcd, so nothing logs a storm of
// "connection refused" on the way out.
const (
	compEtcd              = "etcd"
	compAPIServer         = "apiserver"
	compControllerManager = "controller-manager"
	compScheduler         = "scheduler"
	compNode              = "node"
)

var allComponents = []string{compEtcd, compAPIServer, compControllerManager, compScheduler, compNode}

// disabledAPIs are the group/versions the apiserver does not serve here, and
// disabledControllers the controllers (names as in
// k8s.io/kubernetes@v1.37.0/cmd/kube-controller-manager/names) that work on them.
var (
	disabledAPIs        = []string{"autoscaling/v1", "autoscaling/v2", "batch/v1"}
	disabledControllers = []string{"horizontal-pod-autoscaler-controller", "job-controller", "cronjob-controller", "ttl-after-finished-controller"}
)

// componentArgs returns the command line of one component (after
// `labcluster component NAME`).
func componentArgs(name string, s *State) []string {
	p := clusterstate.Dir(s.Dir)
	switch name {
	case compAPIServer:
		return []string{
			// Every member: the apiserver's etcd client balances over them
			// and moves on when one stops answering.
			"--etcd-servers=" + strings.Join(s.EtcdURLs(), ","),
			"--bind-address=127.0.0.1",
			"--secure-port=" + strconv.Itoa(s.APIServerPort),
			"--advertise-address=127.0.0.1",
			// The "kubernetes" Service's endpoints would be 127.0.0.1, which
			// Endpoints validation rejects (loopback); no pod here needs it.
			"--endpoint-reconciler-type=none",
			"--tls-cert-file=" + p.PKI("apiserver.crt"),
			"--tls-private-key-file=" + p.PKI("apiserver.key"),
			"--client-ca-file=" + p.PKI("ca.crt"),
			"--token-auth-file=" + p.PKI("tokens.csv"),
			"--authorization-mode=Node,RBAC",
			"--enable-admission-plugins=NodeRestriction",
			"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
			"--service-account-key-file=" + p.PKI("sa.pub"),
			"--service-account-signing-key-file=" + p.PKI("sa.key"),
			"--service-cluster-ip-range=10.0.0.0/24",
			"--cert-dir=" + p.PKI(""),
			"--allow-privileged=true",
			"--profiling=false",
			// API groups nothing here can serve: an HPA needs a metrics API
			// (no metrics-server), a Job needs pods that finish (the simulated
			// node keeps them Running). Each group costs start-up time (its
			// storage, watch caches, OpenAPI) and a request per resource in
			// every namespace deletion; no lab uses them. The matching
			// controllers are off in the controller-manager.
			"--runtime-config=" + strings.Join(disabledAPIs, "=false,") + "=false",
		}
	case compControllerManager:
		return []string{
			"--kubeconfig=" + p.ComponentKubeconfig("controller-manager"),
			// No HTTPS endpoint: nothing scrapes it, and every listener is one
			// more port to keep on loopback.
			"--secure-port=0",
			// One replica: there is nobody to elect against, and waiting for a
			// lease only slows the start.
			"--leader-elect=false",
			"--use-service-account-credentials=true",
			"--service-account-private-key-file=" + p.PKI("sa.key"),
			"--root-ca-file=" + p.PKI("ca.crt"),
			"--cluster-signing-cert-file=" + p.PKI("ca.crt"),
			"--cluster-signing-key-file=" + p.PKI("ca.key"),
			// Notice a fresh node's Ready condition within a second, so its
			// not-ready taint is lifted before the first pod needs scheduling.
			"--node-monitor-period=1s",
			"--profiling=false",
			// The controllers of the API groups the apiserver does not serve
			// here; left on, they would retry listing them forever.
			"--controllers=*,-" + strings.Join(disabledControllers, ",-"),
		}
	case compScheduler:
		return []string{
			"--kubeconfig=" + p.ComponentKubeconfig("scheduler"),
			"--secure-port=0",
			"--leader-elect=false",
			"--profiling=false",
		}
	case compNode:
		return []string{"--kubeconfig=" + p.ComponentKubeconfig("node")}
	}
	panic("unknown component " + name)
}

// etcdArgs returns the command line of one etcd member (after `labcluster
// component etcd`). A single member keeps its data in .cluster/etcd, a
// member of several in .cluster/etcd/NAME.
func etcdArgs(s *State, m clusterstate.EtcdMember) []string {
	p := clusterstate.Dir(s.Dir)
	dataDir := p.EtcdData()
	members := s.Members()
	if len(members) > 1 {
		dataDir = filepath.Join(dataDir, m.Name)
	}
	var initial []string
	for _, o := range members {
		initial = append(initial, o.Name+"="+o.PeerURL())
	}
	return []string{
		"--name", m.Name,
		"--data-dir", dataDir,
		"--client-port", strconv.Itoa(m.ClientPort),
		"--peer-port", strconv.Itoa(m.PeerPort),
		"--initial-cluster", strings.Join(initial, ","),
	}
}

// runComponent is `labcluster component NAME ARGS...`, in the child process.
func runComponent(name string, args []string) int {
	// On Linux the supervisor also sets PR_SET_PDEATHSIG, but that is tied to
	// the OS thread that forked us, and macOS has none; watching our parent is
	// the guarantee that a killed supervisor (or test binary) never leaves a
	// component running.
	go exitWhenOrphaned()
	startUpGC()
	switch name {
	case compEtcd:
		return runEtcd(args)
	case compNode:
		return runNode(args)
	case compAPIServer:
		os.Args = append([]string{"kube-apiserver"}, args...)
		return cli.Run(apiserver.NewAPIServerCommand())
	case compControllerManager:
		os.Args = append([]string{"kube-controller-manager"}, args...)
		return cli.Run(controllermanager.NewControllerManagerCommand())
	case compScheduler:
		os.Args = append([]string{"kube-scheduler"}, args...)
		return cli.Run(scheduler.NewSchedulerCommand())
	}
	fmt.Fprintf(os.Stderr, "labcluster: unknown component %q\n", name)
	return 2
}

// startUpGC makes the garbage collector run less often while the component
// starts: start-up allocates heavily and keeps most of it (API types, storage,
// OpenAPI specs), so at the default GOGC=100 the collector competes for the
// CPU with the start itself; at 400 the apiserver reaches /readyz with about a
// fifth less CPU. After startUpGCPeriod (a cluster is ready in a few seconds)
// the Go default returns, so memory in use stays what it would be. A GOGC
// set by the user is left alone.
func startUpGC() {
	if os.Getenv("GOGC") != "" {
		return
	}
	debug.SetGCPercent(400)
	time.AfterFunc(startUpGCPeriod, func() { debug.SetGCPercent(100) })
}

const startUpGCPeriod = 30 * time.Second

// exitWhenOrphaned ends the process as soon as its parent is gone (the kernel
// re-parents an orphan, so Getppid changes).
func exitWhenOrphaned() {
	parent := os.Getppid()
	for range time.Tick(200 * time.Millisecond) {
		if os.Getppid() != parent {
			os.Exit(1)
		}
	}
}
