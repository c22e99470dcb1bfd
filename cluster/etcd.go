package main

// etcd, embedded: go.etcd.io/etcd/server/v3@v3.7.0/embed runs the same server
// as the etcd binary inside our process: the binary itself starts it with
// `StartEtcd` (go.etcd.io/etcd/server/v3@v3.7.0/etcdmain/etcd.go:181).
// Loopback only, plain HTTP: nothing but the apiserver on this machine
// talks to it. One member by default; with
// `labcluster up --etcd-members 3`, three, each in its own process (so one
// can be killed), forming one raft cluster over their peer ports. The
// robustness suite kills members, the leader, and moves leadership there.
//
// `labcluster etcd compact` is here too: it compacts the keyspace to the
// current revision at once, so a learner can make old revisions disappear
// on demand. It is a harsher version of what the apiserver does every
// `DefaultCompactInterval`, 5 minutes
// (k8s.io/apiserver@v0.37.0/pkg/storage/storagebackend/config.go:38,
// --etcd-compaction-interval): it calls `Compact` with the revision it read
// on its previous tick, and compacts nothing on its first
// (k8s.io/apiserver@v0.37.0/pkg/storage/etcd3/compact.go:205-250), so etcd
// keeps 5 to 10 minutes of history.

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/listwatch-labs/listwatch-labs/clusterstate"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
	"google.golang.org/grpc/grpclog"
)

func runEtcd(args []string) int {
	fs := flag.NewFlagSet("etcd", flag.ContinueOnError)
	dataDir := fs.String("data-dir", "", "etcd data directory")
	clientPort := fs.Int("client-port", 0, "client port on 127.0.0.1")
	peerPort := fs.Int("peer-port", 0, "peer port on 127.0.0.1")
	name := fs.String("name", "labcluster", "member name")
	initialCluster := fs.String("initial-cluster", "", "NAME=PEERURL,... of every member (default: this member alone)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	clientURL := url.URL{Scheme: "http", Host: "127.0.0.1:" + strconv.Itoa(*clientPort)}
	peerURL := url.URL{Scheme: "http", Host: "127.0.0.1:" + strconv.Itoa(*peerPort)}

	cfg := embed.NewConfig()
	cfg.Name = *name
	cfg.Dir = *dataDir
	cfg.ListenClientUrls = []url.URL{clientURL}
	cfg.AdvertiseClientUrls = []url.URL{clientURL}
	cfg.ListenPeerUrls = []url.URL{peerURL}
	cfg.AdvertisePeerUrls = []url.URL{peerURL}
	cfg.InitialCluster = cfg.Name + "=" + peerURL.String()
	if *initialCluster != "" {
		// A restarted member finds its cluster in its data directory and
		// ignores this; a new one uses it to find its peers. embed reads
		// it only when `isMemberInitialized` finds no WAL in the data dir
		// (go.etcd.io/etcd/server/v3@v3.7.0/embed/etcd.go:162-168).
		cfg.InitialCluster = *initialCluster
	}
	cfg.InitialClusterToken = "labcluster"
	cfg.LogLevel = "warn"
	cfg.LogOutputs = []string{"stderr"}
	// A lab cluster is thrown away, not recovered after a power cut: skipping
	// fsync makes every write (and so every test) much faster.
	cfg.UnsafeNoFsync = true

	e, err := embed.StartEtcd(cfg)
	if err != nil {
		fmt.Fprintf(os.Stderr, "etcd: %v\n", err)
		return 1
	}
	defer e.Close()
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(30 * time.Second):
		fmt.Fprintln(os.Stderr, "etcd: not ready after 30s")
		return 1
	}
	sig := make(chan os.Signal, 1) // signal.Notify drops signals on a full channel
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	select {
	case <-sig:
		return 0
	case err := <-e.Err():
		fmt.Fprintf(os.Stderr, "etcd: %v\n", err)
		return 1
	}
}

// etcdCompact compacts etcd to its current revision and returns it.
func etcdCompact(ctx context.Context, s *State) (int64, error) {
	c, err := etcdClient(s)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	// Any read returns the store's current revision in its header.
	resp, err := c.Get(ctx, "compact-probe")
	if err != nil {
		return 0, fmt.Errorf("etcd at %s: %w", strings.Join(s.EtcdURLs(), ","), err)
	}
	rev := resp.Header.Revision
	if _, err := c.Compact(ctx, rev, clientv3.WithCompactPhysical()); err != nil {
		return 0, fmt.Errorf("compact to %d: %w", rev, err)
	}
	return rev, nil
}

// etcdClient is a client of every member, quiet: gRPC logs every closed
// connection as a warning, and the commands here return their own errors.
func etcdClient(s *State) (*clientv3.Client, error) {
	grpclog.SetLoggerV2(grpclog.NewLoggerV2(io.Discard, io.Discard, io.Discard))
	return clientv3.New(clientv3.Config{Endpoints: s.EtcdURLs(), DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
}

// etcdLeader returns the member that leads, asking each member that
// answers for its view: etcd's `Status` call answers with the member ID
// of the leader it knows
// (go.etcd.io/etcd/server/v3@v3.7.0/etcdserver/api/v3rpc/maintenance.go:261-267).
func etcdLeader(ctx context.Context, s *State) (clusterstate.EtcdMember, error) {
	c, err := etcdClient(s)
	if err != nil {
		return clusterstate.EtcdMember{}, err
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var last error
	for _, m := range s.Members() {
		st, err := c.Status(ctx, m.ClientURL())
		if err != nil {
			last = err
			continue
		}
		resp, err := c.MemberList(ctx)
		if err != nil {
			last = err
			continue
		}
		for _, mem := range resp.Members {
			if mem.ID == st.Leader {
				for _, o := range s.Members() {
					if o.Name == mem.Name {
						return o, nil
					}
				}
			}
		}
		last = fmt.Errorf("member %s sees no leader", m.Name)
	}
	return clusterstate.EtcdMember{}, fmt.Errorf("no etcd leader found (with too few members running there is no quorum and no leader; labcluster etcd start starts the killed ones): %v", last)
}
