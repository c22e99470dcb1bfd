// Package embeddedetcd runs a real etcd 3.7 server inside the current process,
// for this lab's tests, benchmarks and (later) its miniapiserver.
//
// It is go.etcd.io/etcd/server/v3@v3.7.0/embed, configured the way the
// course's labcluster configures it (cluster/etcd.go): one member, loopback
// only, plain HTTP, random free ports; but with shorter raft ticks, so that
// it is ready in tens of milliseconds, not up to a second. Upstream's own
// test helper is `NewUnsecuredEtcd3TestClientServer`
// (k8s.io/apiserver@v0.37.0/pkg/storage/etcd3/testing/test_server.go:38); we
// do not use it because it needs a testing.TB and the miniapiserver has none.
package embeddedetcd

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/listwatch-labs/listwatch-labs/clusterstate"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// Config says where etcd keeps its data.
type Config struct {
	// Dir is the data directory. Empty means a new temporary directory that
	// Close removes.
	Dir string
	// Fsync makes every write wait for the disk. Off by default: a lab's etcd
	// is thrown away, not recovered after a power cut, and fsync makes the
	// tests several times slower.
	Fsync bool
}

// Server is a running etcd member and a client connected to it.
type Server struct {
	// Endpoint is the client URL, http://127.0.0.1:PORT.
	Endpoint string
	// Client is connected to Endpoint; Close closes it.
	Client *clientv3.Client

	etcd    *embed.Etcd
	tempDir string
	closing *atomic.Bool // set by Close: etcd's logger goes quiet
}

// Start starts etcd and returns when it serves clients.
func Start(cfg Config) (*Server, error) {
	dir, tempDir := cfg.Dir, ""
	if dir == "" {
		d, err := os.MkdirTemp("", "lab04-etcd-")
		if err != nil {
			return nil, err
		}
		dir, tempDir = d, d
	}
	// etcd opens its bbolt file with no lock timeout (`bopts` gets none in
	// go.etcd.io/etcd/server/v3@v3.7.0/storage/backend/backend.go:196-210,
	// and embed.Config has no option for one), so a second server on a
	// directory in use would wait for the first one's lock for ever: fail
	// at once instead.
	if inUse, err := dirInUse(dir); err != nil {
		removeTemp(tempDir)
		return nil, err
	} else if inUse {
		return nil, fmt.Errorf("etcd dir %s is in use (another miniapiserver?)", dir)
	}
	// Ports are picked free and then handed to etcd, so another process can
	// take one in between (the test suite starts many servers at once). A
	// bind failure is retried on new ports; etcd fails on its listeners
	// before it touches the data directory, so a retry starts clean.
	closing := new(atomic.Bool)
	var (
		e         *embed.Etcd
		clientURL url.URL
		err       error
	)
	for attempt := 1; ; attempt++ {
		e, clientURL, err = startOnFreePorts(dir, cfg.Fsync, closing)
		if err == nil {
			break
		}
		if !errors.Is(err, syscall.EADDRINUSE) || attempt == 5 {
			removeTemp(tempDir)
			return nil, fmt.Errorf("start etcd: %w", err)
		}
	}
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(30 * time.Second):
		e.Close()
		removeTemp(tempDir)
		return nil, fmt.Errorf("etcd not ready after 30s")
	}
	client, err := clientv3.New(clientv3.Config{
		Endpoints:   []string{clientURL.String()},
		DialTimeout: 10 * time.Second,
		Logger:      zap.NewNop(),
	})
	if err != nil {
		e.Close()
		removeTemp(tempDir)
		return nil, err
	}
	return &Server{Endpoint: clientURL.String(), Client: client, etcd: e, tempDir: tempDir, closing: closing}, nil
}

// Close stops the client and the server and removes a temporary data directory.
func (s *Server) Close() error {
	err := s.Client.Close()
	s.closing.Store(true)
	s.etcd.Close()
	<-s.etcd.Server.StopNotify()
	removeTemp(s.tempDir)
	return err
}

// startOnFreePorts starts one etcd member on dir, on two ports just found free.
func startOnFreePorts(dir string, fsync bool, closing *atomic.Bool) (*embed.Etcd, url.URL, error) {
	clientURL, err := pickLoopbackURL()
	if err != nil {
		return nil, url.URL{}, err
	}
	peerURL, err := pickLoopbackURL()
	if err != nil {
		return nil, url.URL{}, err
	}
	ec := embed.NewConfig()
	ec.Name = "lab04"
	ec.Dir = dir
	ec.ListenClientUrls = []url.URL{clientURL}
	ec.AdvertiseClientUrls = []url.URL{clientURL}
	ec.ListenPeerUrls = []url.URL{peerURL}
	ec.AdvertisePeerUrls = []url.URL{peerURL}
	ec.InitialCluster = ec.Name + "=" + peerURL.String()
	// Errors only, to stderr; and none once Close has begun, where etcd
	// logs its own listeners closing ("mux: server closed", "use of closed
	// network connection") as errors after every test binary's last test.
	ec.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.New(quietOnClose{
		Core:    zapcore.NewCore(zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig()), zapcore.Lock(os.Stderr), zap.ErrorLevel),
		closing: closing,
	}))
	ec.UnsafeNoFsync = !fsync
	// Ticks of 20 ms and an election timeout of 100 ms, not etcd's 100 ms
	// and 1 s. A single member elects itself once its election timeout has
	// passed, which raft draws between one and two timeouts
	// (`resetRandomizedElectionTimeout`, go.etcd.io/raft/v3@v3.7.0/raft.go:2053-2055);
	// etcd fast-forwards all but one tick of it (`advanceTicks`,
	// go.etcd.io/etcd/server/v3@v3.7.0/etcdserver/server.go:468-478), which
	// leaves 1 to 10 ticks: up to a second at 100 ms, on every start and
	// restart, and the lab's tests start dozens. Here it is 20 to 100 ms. A
	// single member has no peer to send heartbeats to or miss them from;
	// shorter ticks change nothing else for it. (labcluster's etcd keeps
	// etcd's defaults.)
	//
	// And the backend commits every 10 ms, not 100: on a new member's first
	// election etcd sets the cluster version, and its storage-version
	// monitor then reads the raft term from the backend
	// (`UnsafeDetectSchemaVersion`,
	// go.etcd.io/etcd/server/v3@v3.7.0/storage/schema/schema.go:92-108),
	// which only a commit writes. Elected before the first commit, it logs
	// "failed to update storage version ... missing term information" (at
	// error level, though it succeeds on its next round): with 100 ms
	// commits and these ticks nearly every start did; with 10 ms, none of
	// 120 on a quiet machine, but some still do on one busy with a whole
	// test run, where a commit can come late. quietOnClose drops that one
	// message, which a learner's output would otherwise show at random.
	ec.TickMs, ec.ElectionMs = 20, 100
	ec.BackendBatchInterval = 10 * time.Millisecond
	e, err := embed.StartEtcd(ec)
	return e, clientURL, err
}

// quietOnClose is a zap core that drops every entry once closing is set,
// and the storage-version monitor's first-round failure at any time (see
// startEtcd: harmless, and retried on its next round).
type quietOnClose struct {
	zapcore.Core
	closing *atomic.Bool
}

func (q quietOnClose) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if q.closing.Load() || e.Message == "failed to update storage version" {
		return ce
	}
	return q.Core.Check(e, ce)
}

func (q quietOnClose) With(fields []zapcore.Field) zapcore.Core {
	return quietOnClose{Core: q.Core.With(fields), closing: q.closing}
}

// pickLoopbackURL is freeLoopbackURL; a test replaces it to hand etcd a
// port that is taken.
var pickLoopbackURL = freeLoopbackURL

// freeLoopbackURL finds a free port on 127.0.0.1 (outside the range the
// kernel gives outgoing connections: clusterstate.FreeLoopbackPort). Another
// process may take it before etcd binds it; Start then tries new ports.
func freeLoopbackURL() (url.URL, error) {
	port, err := clusterstate.FreeLoopbackPort()
	if err != nil {
		return url.URL{}, err
	}
	return url.URL{Scheme: "http", Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(port))}, nil
}

func removeTemp(dir string) {
	if dir != "" {
		os.RemoveAll(dir)
	}
}
