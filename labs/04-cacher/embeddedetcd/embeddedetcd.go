// Package embeddedetcd runs a real etcd 3.6 server inside the current process,
// for this lab's tests, benchmarks and (later) its miniapiserver.
//
// It is go.etcd.io/etcd/server/v3@v3.6.8/embed, configured the way the
// course's labcluster configures it (cluster/etcd.go): one member, loopback
// only, plain HTTP, random free ports. Upstream's own test helper is
// `NewUnsecuredEtcd3TestClientServer`
// (k8s.io/apiserver@v0.36.4/pkg/storage/etcd3/testing/test_server.go:38); we
// do not use it because it needs a testing.TB and the miniapiserver has none.
package embeddedetcd

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"sync/atomic"
	"time"

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
	// go.etcd.io/etcd/server/v3@v3.6.8/storage/backend/backend.go:187-201,
	// and embed.Config has no option for one), so a second server on a
	// directory in use would wait for the first one's lock for ever: fail
	// at once instead.
	if inUse, err := dirInUse(dir); err != nil {
		removeTemp(tempDir)
		return nil, err
	} else if inUse {
		return nil, fmt.Errorf("etcd dir %s is in use (another miniapiserver?)", dir)
	}
	clientURL, err := freeLoopbackURL()
	if err != nil {
		removeTemp(tempDir)
		return nil, err
	}
	peerURL, err := freeLoopbackURL()
	if err != nil {
		return nil, err
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
	closing := new(atomic.Bool)
	ec.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.New(quietOnClose{
		Core:    zapcore.NewCore(zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig()), zapcore.Lock(os.Stderr), zap.ErrorLevel),
		closing: closing,
	}))
	ec.UnsafeNoFsync = !cfg.Fsync
	e, err := embed.StartEtcd(ec)
	if err != nil {
		removeTemp(tempDir)
		return nil, fmt.Errorf("start etcd: %w", err)
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

// quietOnClose is a zap core that drops every entry once closing is set.
type quietOnClose struct {
	zapcore.Core
	closing *atomic.Bool
}

func (q quietOnClose) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if q.closing.Load() {
		return ce
	}
	return q.Core.Check(e, ce)
}

func (q quietOnClose) With(fields []zapcore.Field) zapcore.Core {
	return quietOnClose{Core: q.Core.With(fields), closing: q.closing}
}

// freeLoopbackURL asks the kernel for a free port on 127.0.0.1. Another
// process may take it before etcd binds it; a start failure says so.
func freeLoopbackURL() (url.URL, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return url.URL{}, err
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		return url.URL{}, err
	}
	return url.URL{Scheme: "http", Host: addr}, nil
}

func removeTemp(dir string) {
	if dir != "" {
		os.RemoveAll(dir)
	}
}
