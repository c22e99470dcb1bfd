// Package miniapiserver is the whole stack of labs 03 and 04 in one
// process: lab 03's API server (handlers, WatchServer, TLS, token) serving
// ConfigMaps and Pods, each from lab 04's Cacher, over lab 04's etcd3
// storage, over an embedded etcd (or one it is given: Config.EtcdEndpoints). kubectl, curl and client-go informers talk
// to it as to a kube-apiserver, and /metrics shows what the Cacher does.
//
// Upstream: what kube-apiserver wires for every resource. `StorageWithCacher`
// builds an etcd3 store, then `NewCacherFromConfig` in front of it, with the
// resource's KeyFunc, GetAttrsFunc and IndexerFuncs, and returns a
// `NewCacheDelegator` over both
// (k8s.io/apiserver@v0.37.0/pkg/registry/generic/registry/storage_factory.go:36-86).
// The etcd3 store of each resource comes from `newETCD3Storage`, which
// opens an etcd client of its own for it with `newETCD3Client`
// (k8s.io/apiserver@v0.37.0/pkg/storage/storagebackend/factory/etcd3.go:455-461),
// a new `kubernetes.New` each time
// (k8s.io/apiserver@v0.37.0/pkg/storage/storagebackend/factory/etcd3.go:286-352):
// one gRPC connection per resource; only the compactor is shared, one per
// etcd transport, by `startCompactorOnce`
// (k8s.io/apiserver@v0.37.0/pkg/storage/storagebackend/factory/etcd3.go:407-453).
// Ours shares one client between both resources: our choice, since two
// resources on an in-process etcd gain nothing from two connections.
// Left out: everything kube-apiserver does around storage
// (admission, validation, authorization, aggregation, more resources), etcd
// TLS, and the Prometheus metrics upstream registers inside the Cacher
// (for one, `EventsCounter`, counted for each event the Cacher takes in:
// k8s.io/apiserver@v0.37.0/pkg/storage/cacher/cacher.go:946): here the
// Cacher keeps plain counters and this package exports them.
package miniapiserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/listwatch-labs/listwatch-labs/labs/03-watchserver/apiserver"
	"github.com/listwatch-labs/listwatch-labs/labs/04-cacher/cacher"
	"github.com/listwatch-labs/listwatch-labs/labs/04-cacher/embeddedetcd"
	"github.com/listwatch-labs/listwatch-labs/labs/04-cacher/etcd3"
)

// Config is what cmd/miniapiserver's flags set.
type Config struct {
	// Listen is host:port; the host must be 127.0.0.1. Port 0 picks a free one.
	Listen string
	// KubeconfigOut is where the kubeconfig is written (mode 0600). Empty: a
	// file in a temporary directory, removed by Close.
	KubeconfigOut string
	// EtcdDir is etcd's data directory. Empty: a temporary directory,
	// removed by Close. Start a server on the directory of a stopped one
	// and it serves the same objects at the same resourceVersions.
	EtcdDir string
	// ErrorLog receives errors of the HTTP server. Default os.Stderr.
	ErrorLog io.Writer
	// Wrap wraps the API server's handler (lab 03's apiserver.Config.Wrap):
	// the course's live view counts watch streams there.
	Wrap func(http.Handler) http.Handler
	// EtcdEndpoints, when set, is an etcd someone else runs (client URLs
	// of its members, e.g. a labcluster's three): the server stores there
	// instead of in an embedded etcd of its own, and Restart restarts the
	// API server and its Cachers but not that etcd. The robustness suite
	// uses it to put the course's stack on a three-member etcd whose
	// members it kills. EtcdDir is then unused.
	EtcdEndpoints []string
	// EtcdPrefix is prepended to every key (etcd3.Config.Prefix): set it
	// when sharing an etcd with a kube-apiserver, whose keys start at
	// `DefaultEtcdPathPrefix`, /registry
	// (k8s.io/kubernetes@v1.37.0/pkg/kubeapiserver/options/options.go:33),
	// so the two never read each other's objects. Default "/".
	EtcdPrefix string
}

// Instance is a running miniapiserver.
type Instance struct {
	URL            string // https://127.0.0.1:PORT
	Token          string
	CAPEM          []byte
	KubeconfigPath string
	EtcdDir        string

	cfg     Config
	tempDir string // EtcdDir when Config gave none

	// mu guards the parts below, which Restart replaces.
	mu      sync.Mutex
	etcd    *etcdConn
	api     *apiserver.Instance
	cachers map[string]*cacher.Cacher // by resource, "configmaps" and "pods"
	closed  bool
	// compacted: the revision Compact last compacted etcd to.
	compacted int64
}

// Start starts etcd, a Cacher per resource, and the API server, and returns
// when the caches are loaded and the server listens.
func Start(cfg Config) (*Instance, error) {
	host, _, err := net.SplitHostPort(cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("--listen %q: %w", cfg.Listen, err)
	}
	if host != "127.0.0.1" {
		return nil, fmt.Errorf("--listen %q: only 127.0.0.1 is allowed: this server has one token and no authorization", cfg.Listen)
	}
	if cfg.ErrorLog == nil {
		cfg.ErrorLog = os.Stderr
	}
	in := &Instance{cfg: cfg, EtcdDir: cfg.EtcdDir}
	if in.EtcdDir == "" && len(cfg.EtcdEndpoints) == 0 {
		if in.tempDir, err = os.MkdirTemp("", "miniapiserver-etcd-"); err != nil {
			return nil, err
		}
		in.EtcdDir = in.tempDir
	}
	if err := in.start(cfg.Listen, nil); err != nil {
		in.removeTemp()
		return nil, err
	}
	return in, nil
}

// start brings up etcd, the Cachers and the API server on listen, with the
// given identity (nil: a new CA and token).
func (in *Instance) start(listen string, identity *apiserver.Identity) error {
	etcd, err := in.connectEtcd()
	if err != nil {
		return err
	}
	cachers := map[string]*cacher.Cacher{}
	stopAll := func() {
		for _, c := range cachers {
			c.Stop()
		}
		etcd.Close()
	}
	api, err := apiserver.Start(apiserver.Config{
		Listen:        listen,
		KubeconfigOut: in.cfg.KubeconfigOut,
		ErrorLog:      in.cfg.ErrorLog,
		Identity:      identity,
		Wrap:          in.cfg.Wrap,
		Handlers: map[string]http.Handler{
			"GET /metrics":      metricsHandler(in),
			"POST /lab/compact": http.HandlerFunc(in.serveCompact),
		},
		Storage: func(r *apiserver.Resource) (storage.Interface, func(), error) {
			c, err := newCacher(etcd.Client, r, in.cfg.EtcdPrefix)
			if err != nil {
				return nil, nil, err
			}
			cachers[r.GroupResource.Resource] = c
			return c, c.Stop, nil
		},
	})
	if err != nil {
		stopAll()
		return err
	}
	// Serve nothing before every cache is loaded: a not-ready Cacher
	// answers 429, and a test that starts the server expects it ready.
	// kube-apiserver also waits for its watch caches before it reports
	// ready, with the `storage-readiness` post-start hook, `StorageReadinessHook`
	// (k8s.io/kubernetes@v1.37.0/pkg/controlplane/apiserver/server.go:298-300),
	// but for a minute by default (--storage-initialization-timeout; the
	// README's "Not ready"); ours waits up to
	// 30 s and then fails to start, as a cache that slow is a broken one here.
	for name, c := range cachers {
		err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 30*time.Second, true,
			func(context.Context) (bool, error) { return c.Ready(), nil })
		if err != nil {
			api.Close()
			etcd.Close()
			return fmt.Errorf("the %s cache did not load within 30s", name)
		}
	}
	in.mu.Lock()
	in.etcd, in.api, in.cachers = etcd, api, cachers
	in.URL, in.Token, in.CAPEM, in.KubeconfigPath = api.URL, api.Token, api.CAPEM, api.KubeconfigPath
	in.mu.Unlock()
	return nil
}

// newCacher builds a resource's storage the way StorageWithCacher does: an
// etcd3 store for the resource's keys, and a Cacher in front of it with the
// resource's key, attribute and trigger functions.
func newCacher(client *clientv3.Client, r *apiserver.Resource, prefix string) (*cacher.Cacher, error) {
	store, err := newStore(client, r, prefix)
	if err != nil {
		return nil, err
	}
	return cacher.NewCacherFromConfig(cacher.Config{
		Storage:        store,
		GroupResource:  r.GroupResource,
		ResourcePrefix: r.ResourcePrefix,
		KeyFunc:        r.KeyFunc,
		GetAttrsFunc:   r.GetAttrsFunc,
		IndexerFuncs:   r.IndexerFuncs,
		NewFunc:        r.NewFunc,
		NewListFunc:    r.NewListFunc,
	})
}

// newStore is a resource's etcd3 store.
func newStore(client *clientv3.Client, r *apiserver.Resource, prefix string) (*etcd3.Store, error) {
	// Lab 03's keys are /registry/<resource>/<ns>/<name>, the full etcd
	// key of a real cluster, so the store adds no prefix of its own
	// unless the etcd is shared (Config.EtcdPrefix).
	if prefix == "" {
		prefix = "/"
	}
	return etcd3.New(etcd3.Config{
		Client:         client,
		Codec:          codec(),
		NewFunc:        r.NewFunc,
		NewListFunc:    r.NewListFunc,
		Prefix:         prefix,
		ResourcePrefix: r.ResourcePrefix,
		GroupResource:  r.GroupResource,
	})
}

// codec stores core/v1 objects in etcd as JSON with apiVersion and kind
// (kube-apiserver stores protobuf, its `DefaultStorageMediaType`,
// k8s.io/kubernetes@v1.37.0/pkg/controlplane/apiserver/options/options.go:138;
// JSON lets `etcdctl get` show them).
func codec() runtime.Codec {
	s := json.NewSerializerWithOptions(json.DefaultMetaFactory, scheme.Scheme, scheme.Scheme, json.SerializerOptions{})
	return runtime.NewCodec(scheme.Codecs.EncoderForVersion(s, v1.SchemeGroupVersion), scheme.Codecs.UniversalDeserializer())
}

// Storage is the Cacher a resource is served from (to seed objects from Go).
func (in *Instance) Storage(r *apiserver.Resource) storage.Interface {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.api.Storage(r)
}

// Metrics returns the Cacher's counters for a resource ("pods", "configmaps").
func (in *Instance) Metrics(resource string) (cacher.Metrics, bool) {
	in.mu.Lock()
	c := in.cachers[resource]
	in.mu.Unlock()
	if c == nil {
		return cacher.Metrics{}, false
	}
	return c.Metrics(), true
}

// State returns a snapshot of the Cacher of a resource ("pods",
// "configmaps"): for the course's live view.
func (in *Instance) State(resource string) (cacher.State, bool) {
	in.mu.Lock()
	c := in.cachers[resource]
	in.mu.Unlock()
	if c == nil {
		return cacher.State{}, false
	}
	return c.State(), true
}

// EtcdRevisions returns etcd's current revision and the revision it was
// last compacted to by Compact (0 if never): for the course's live view.
func (in *Instance) EtcdRevisions(ctx context.Context) (current, compacted int64, err error) {
	in.mu.Lock()
	etcd := in.etcd
	compacted = in.compacted
	in.mu.Unlock()
	if etcd == nil {
		return 0, compacted, errors.New("etcd is not running")
	}
	resp, err := etcd.Client.Get(ctx, "compact-probe")
	if err != nil {
		return 0, compacted, err
	}
	return resp.Header.Revision, compacted, nil
}

// Compact compacts etcd's history up to its current revision, now. It
// returns the revision: reads of older revisions from etcd are now 410
// Expired. A lab tool: kube-apiserver's compactor is far gentler. Every
// `DefaultCompactInterval`, 5 minutes
// (k8s.io/apiserver@v0.37.0/pkg/storage/storagebackend/config.go:38), it
// calls `Compact` with the revision it read on its previous tick and
// compacts nothing on its first
// (k8s.io/apiserver@v0.37.0/pkg/storage/etcd3/compact.go:205-250), so etcd
// keeps 5 to 10 minutes of history.
func (in *Instance) Compact(ctx context.Context) (int64, error) {
	in.mu.Lock()
	etcd := in.etcd
	in.mu.Unlock()
	if etcd == nil {
		return 0, errors.New("miniapiserver is closed")
	}
	resp, err := etcd.Client.Get(ctx, "compact-probe") // any key: the header has the revision
	if err != nil {
		return 0, err
	}
	rev := resp.Header.Revision
	if _, err := etcd.Client.Compact(ctx, rev, clientv3.WithCompactPhysical()); err != nil {
		return 0, err
	}
	in.mu.Lock()
	in.compacted = max(in.compacted, rev)
	in.mu.Unlock()
	return rev, nil
}

// serveCompact is POST /lab/compact, a lab tool (no kube-apiserver has it):
// compact etcd now, answer {"revision":N}.
func (in *Instance) serveCompact(w http.ResponseWriter, req *http.Request) {
	rev, err := in.Compact(req.Context())
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, "{\"revision\":%d}\n", rev)
}

// Restart stops the API server, the Cachers and etcd, and starts them again
// on the same etcd directory, address, CA and token (with
// Config.EtcdEndpoints, the etcd is not ours: only its client is closed and
// opened again): to its clients it is a
// kube-apiserver restart (their connections end; the kubeconfig still
// works). The new Cachers list etcd afresh, so their rings are empty.
func (in *Instance) Restart() error { return in.RestartWith(nil) }

// RestartWith is Restart, calling whileDown after the API server has
// stopped and before etcd does, with an etcd3 store per resource (by
// resource name): what another API server of the same cluster could write
// meanwhile, as in an HA control plane. The course's live view uses it to
// show a client's watch meeting a cache that moved on without it.
func (in *Instance) RestartWith(whileDown func(stores map[string]storage.Interface) error) error {
	in.mu.Lock()
	if in.closed {
		in.mu.Unlock()
		return errors.New("miniapiserver is closed")
	}
	api, etcd := in.api, in.etcd
	in.mu.Unlock()
	identity := api.Identity()
	listen := strings.TrimPrefix(api.URL, "https://")
	api.Close() // ends every watch, stops the Cachers (the storages' release)
	if whileDown != nil {
		stores := map[string]storage.Interface{}
		for _, r := range apiserver.DefaultResources() {
			st, err := newStore(etcd.Client, r, in.cfg.EtcdPrefix)
			if err != nil {
				etcd.Close()
				return err
			}
			stores[r.GroupResource.Resource] = st
		}
		if err := whileDown(stores); err != nil {
			etcd.Close()
			return fmt.Errorf("while the API server was down: %w", err)
		}
	}
	etcd.Close()
	in.mu.Lock()
	in.api, in.etcd, in.cachers = nil, nil, nil
	in.mu.Unlock()
	return in.start(listen, &identity)
}

// Close stops everything and removes what Start created in temporary
// directories.
func (in *Instance) Close() error {
	in.mu.Lock()
	if in.closed {
		in.mu.Unlock()
		return nil
	}
	in.closed = true
	api, etcd := in.api, in.etcd
	in.mu.Unlock()
	var err error
	if api != nil {
		err = api.Close()
	}
	if etcd != nil {
		etcd.Close()
	}
	in.removeTemp()
	return err
}

// etcdConn is the etcd the server stores in: an embedded one it started
// (Close stops it) or a client of one it was given (Close closes the client).
type etcdConn struct {
	Client *clientv3.Client
	close  func() error
}

func (e *etcdConn) Close() error { return e.close() }

func (in *Instance) connectEtcd() (*etcdConn, error) {
	if len(in.cfg.EtcdEndpoints) > 0 {
		c, err := clientv3.New(clientv3.Config{Endpoints: in.cfg.EtcdEndpoints, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
		if err != nil {
			return nil, fmt.Errorf("etcd at %s: %w", strings.Join(in.cfg.EtcdEndpoints, ","), err)
		}
		return &etcdConn{Client: c, close: c.Close}, nil
	}
	e, err := embeddedetcd.Start(embeddedetcd.Config{Dir: in.EtcdDir})
	if err != nil {
		return nil, err
	}
	return &etcdConn{Client: e.Client, close: e.Close}, nil
}

func (in *Instance) removeTemp() {
	if in.tempDir != "" {
		os.RemoveAll(in.tempDir)
	}
}
