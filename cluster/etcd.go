package main

// etcd, embedded: go.etcd.io/etcd/server/v3@v3.6.8/embed runs the same server
// as the etcd binary inside our process. One member, loopback only, plain HTTP:
// nothing but the apiserver on this machine talks to it.
//
// `labcluster etcd compact` is here too: it compacts the keyspace to the
// current revision, the operation the apiserver itself runs every 5 minutes
// (--etcd-compaction-interval), so a learner can make old revisions disappear
// on demand.

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

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
	if err := fs.Parse(args); err != nil {
		return 2
	}
	clientURL := url.URL{Scheme: "http", Host: "127.0.0.1:" + strconv.Itoa(*clientPort)}
	peerURL := url.URL{Scheme: "http", Host: "127.0.0.1:" + strconv.Itoa(*peerPort)}

	cfg := embed.NewConfig()
	cfg.Name = "labcluster"
	cfg.Dir = *dataDir
	cfg.ListenClientUrls = []url.URL{clientURL}
	cfg.AdvertiseClientUrls = []url.URL{clientURL}
	cfg.ListenPeerUrls = []url.URL{peerURL}
	cfg.AdvertisePeerUrls = []url.URL{peerURL}
	cfg.InitialCluster = cfg.Name + "=" + peerURL.String()
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
	// gRPC logs every closed connection as a warning; this is a one-shot
	// command whose errors we return ourselves.
	grpclog.SetLoggerV2(grpclog.NewLoggerV2(io.Discard, io.Discard, io.Discard))
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{s.EtcdURL()}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return 0, err
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	// Any read returns the store's current revision in its header.
	resp, err := c.Get(ctx, "compact-probe")
	if err != nil {
		return 0, fmt.Errorf("etcd at %s: %w", s.EtcdURL(), err)
	}
	rev := resp.Header.Revision
	if _, err := c.Compact(ctx, rev, clientv3.WithCompactPhysical()); err != nil {
		return 0, fmt.Errorf("compact to %d: %w", rev, err)
	}
	return rev, nil
}
