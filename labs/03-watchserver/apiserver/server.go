// Upstream: k8s.io/apiserver@v0.37.0/pkg/server/secure_serving.go (TLS and
// HTTP/2 for every apiserver), pkg/server/genericapiserver.go (the shutdown
// sequence: stop accepting, end watches, drain) and
// pkg/server/filters/watch_termination.go. The self-signed CA stands in for
// the certificates kubeadm or labcluster would generate.
//
// Why TLS and not plain http on 127.0.0.1: over TLS, Go clients negotiate
// HTTP/2 through ALPN exactly as they do with a real apiserver, so the same
// kubectl, client-go and curl commands run unchanged against both servers,
// and a watch is an HTTP/2 stream by default (curl --http1.1 shows the
// chunked form). Plain http would have meant HTTP/1.1 only, and different
// commands for the two servers in every scenario.

package apiserver

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"k8s.io/apiserver/pkg/storage"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/listwatch-labs/listwatch-labs/labs/03-watchserver/memstorage"
)

// Config is what cmd/watchserver's flags set, plus what a Go caller (a test,
// lab 04) may change: which resources, and which storage serves each.
type Config struct {
	// Listen is host:port; the host must be 127.0.0.1. Port 0 picks a free one.
	Listen string
	// KubeconfigOut is where the kubeconfig is written (mode 0600). Empty:
	// a file in a new temporary directory, removed by Close.
	KubeconfigOut string
	// Resources are served under /api/v1. Default: ConfigMaps and Pods.
	Resources []*Resource
	// Storage returns the storage.Interface a resource is served from and a
	// function that releases it (upstream: generic.StorageDecorator, which
	// returns a storage and a factory.DestroyFunc). Default: one
	// memstorage.Storage per resource, sharing one revision, with
	// HistorySize and BookmarkInterval below. Lab 04 returns its Cacher over
	// etcd here (or upstream's cacher.NewCacherFromConfig).
	Storage func(r *Resource) (storage.Interface, func(), error)
	// HistorySize is how many events the default storage can replay a
	// watch from. Default 1000.
	HistorySize int
	// BookmarkInterval is how often the default storage sends a BOOKMARK
	// to a watcher that allows them. Default one minute, as upstream
	// (`defaultBookmarkFrequency`, k8s.io/apiserver@v0.37.0/pkg/storage/cacher/cacher.go:76-78).
	BookmarkInterval time.Duration
	// MinRequestTimeout: see watchserver.WatchScope. Default 30 minutes.
	MinRequestTimeout time.Duration
	// DisableWatchListCompression: see watchserver.WatchScope. Default
	// false: a watch-list that accepts gzip gets gzip, as on kube-apiserver
	// 1.37 with its default gates.
	DisableWatchListCompression bool
	// ErrorLog receives errors of the HTTP server. Default os.Stderr.
	ErrorLog io.Writer
	// Handlers are extra routes (ServeMux patterns, e.g. "GET /metrics"),
	// behind the same token as the API. Lab 04's miniapiserver serves its
	// /metrics and its lab tools here.
	Handlers map[string]http.Handler
	// Identity is the CA, serving certificate and token to use. nil: new
	// ones. A server started again with the previous Instance's Identity()
	// (and its address) is the same server to its clients: their
	// kubeconfig stays valid, as across a kube-apiserver restart.
	Identity *Identity
	// Wrap, if set, wraps the whole handler (kube-apiserver's twin is its
	// handler chain, built around every request). The course's live view
	// (learn/view) counts each watch stream's frames and bytes here.
	Wrap func(http.Handler) http.Handler
}

// Identity is what a client trusts and presents: the CA (PEM), the serving
// certificate signed by it, and the bearer token.
type Identity struct {
	CAPEM       []byte
	Certificate tls.Certificate
	Token       string
}

// Instance is a running server.
type Instance struct {
	URL            string // https://127.0.0.1:PORT
	Token          string
	CAPEM          []byte
	Kubeconfig     []byte
	KubeconfigPath string

	identity     Identity
	storages     map[*Resource]storage.Interface
	destroy      []func()
	tempDir      string
	http         *http.Server
	shuttingDown chan struct{}
	wg           sync.WaitGroup
	closeOnce    sync.Once
}

// Identity returns the server's CA, certificate and token, to start it
// again as the same server (Config.Identity).
func (in *Instance) Identity() Identity { return in.identity }

// Storage is the storage a resource is served from (to seed objects from
// Go, as the scenario harness does with kube-root-ca.crt), or nil.
func (in *Instance) Storage(r *Resource) storage.Interface { return in.storages[r] }

// memStorageFor returns Config.Storage's default: in-memory storages that
// share one revision, as the resources of one etcd do. It starts at 1, as a
// new etcd's revision does, so no LIST ever reports resourceVersion "0",
// which a client would pass on to mean "any".
func memStorageFor(cfg Config) func(*Resource) (storage.Interface, func(), error) {
	revision := memstorage.NewRevision(1)
	return func(r *Resource) (storage.Interface, func(), error) {
		s := memstorage.New(memstorage.Config{
			ResourcePrefix:    r.ResourcePrefix,
			NewFunc:           r.NewFunc,
			HistorySize:       cfg.HistorySize,
			Revision:          revision,
			BookmarkFrequency: cfg.BookmarkInterval,
		})
		return s, s.Close, nil
	}
}

// Start listens, writes the kubeconfig, and serves until Close.
func Start(cfg Config) (*Instance, error) {
	host, _, err := net.SplitHostPort(cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("--listen %q: %w", cfg.Listen, err)
	}
	if host != "127.0.0.1" {
		return nil, fmt.Errorf("--listen %q: only 127.0.0.1 is allowed: this server has one token and no authorization", cfg.Listen)
	}
	if cfg.HistorySize == 0 {
		cfg.HistorySize = 1000
	}
	if cfg.BookmarkInterval == 0 {
		cfg.BookmarkInterval = time.Minute
	}
	if cfg.MinRequestTimeout == 0 {
		cfg.MinRequestTimeout = 30 * time.Minute
	}
	if cfg.Resources == nil {
		cfg.Resources = DefaultResources()
	}
	if cfg.Storage == nil {
		cfg.Storage = memStorageFor(cfg)
	}
	if cfg.ErrorLog == nil {
		cfg.ErrorLog = os.Stderr
	}
	if cfg.Identity == nil {
		caPEM, cert, err := selfSignedTLS()
		if err != nil {
			return nil, err
		}
		tokenBytes := make([]byte, 16)
		rand.Read(tokenBytes)
		cfg.Identity = &Identity{CAPEM: caPEM, Certificate: cert, Token: hex.EncodeToString(tokenBytes)}
	}
	cert := cfg.Identity.Certificate
	in := &Instance{
		Token:        cfg.Identity.Token,
		CAPEM:        cfg.Identity.CAPEM,
		identity:     *cfg.Identity,
		storages:     map[*Resource]storage.Interface{},
		shuttingDown: make(chan struct{}),
	}
	api := &server{token: in.Token, extra: cfg.Handlers}
	for _, r := range cfg.Resources {
		s, destroy, err := cfg.Storage(r)
		if err != nil {
			in.release()
			return nil, fmt.Errorf("storage for %s: %w", r.GroupResource, err)
		}
		in.storages[r] = s
		in.destroy = append(in.destroy, destroy)
		api.resources = append(api.resources, newResourceHandler(r, s, cfg.MinRequestTimeout, in.shuttingDown, cfg.DisableWatchListCompression))
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		in.release()
		return nil, err
	}
	in.URL = "https://" + ln.Addr().String()
	api.address = ln.Addr().String()
	if err := in.writeKubeconfig(cfg.KubeconfigOut); err != nil {
		ln.Close()
		in.release()
		return nil, err
	}
	handler := api.handler()
	if cfg.Wrap != nil {
		handler = cfg.Wrap(handler)
	}
	in.http = &http.Server{
		Handler:           handler,
		TLSConfig:         &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"h2", "http/1.1"}, MinVersion: tls.VersionTLS12},
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          log.New(cfg.ErrorLog, "watchserver: ", 0),
	}
	// Shutdown waits for idle connections, and a watch is never idle: tell
	// every WatchServer to end its stream first.
	in.http.RegisterOnShutdown(func() { close(in.shuttingDown) })
	in.wg.Add(1)
	go func() {
		defer in.wg.Done()
		if err := in.http.ServeTLS(ln, "", ""); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintln(cfg.ErrorLog, "watchserver:", err)
		}
	}()
	return in, nil
}

func (in *Instance) writeKubeconfig(path string) error {
	var err error
	if in.Kubeconfig, err = kubeconfig(in.URL, in.CAPEM, in.Token); err != nil {
		return err
	}
	if path == "" {
		if in.tempDir, err = os.MkdirTemp("", "watchserver-"); err != nil {
			return err
		}
		path = filepath.Join(in.tempDir, "kubeconfig")
	}
	in.KubeconfigPath = path
	return writePrivate(path, in.Kubeconfig)
}

// release stops the storages and removes the temporary kubeconfig.
func (in *Instance) release() {
	for _, destroy := range in.destroy {
		if destroy != nil {
			destroy()
		}
	}
	if in.tempDir != "" {
		os.RemoveAll(in.tempDir)
	}
}

// Close is the shutdown sequence: stop accepting, end every watch, wait for
// the handlers to return, then release the storages.
func (in *Instance) Close() error {
	var err error
	in.closeOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		err = in.http.Shutdown(ctx)
		in.wg.Wait()
		in.release()
	})
	return err
}

// kubeconfig is a config clients can use as is: the CA's certificate (so TLS
// is verified, never skipped) and the bearer token.
func kubeconfig(server string, caPEM []byte, token string) ([]byte, error) {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["watchserver"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: caPEM}
	cfg.AuthInfos["watchserver"] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts["watchserver"] = &clientcmdapi.Context{Cluster: "watchserver", AuthInfo: "watchserver", Namespace: "default"}
	cfg.CurrentContext = "watchserver"
	return clientcmd.Write(*cfg)
}

// writePrivate writes a credentials file readable by its owner only, also
// when the file already existed with a wider mode.
func writePrivate(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	if err := os.Chmod(tmp, 0o600); err != nil {
		return err
	}
	// Rename, so a reader waiting for the file never sees half of it.
	return os.Rename(tmp, path)
}

// selfSignedTLS makes a CA and a serving certificate for 127.0.0.1 signed by
// it, both in memory, new on every start.
func selfSignedTLS() (caPEM []byte, cert tls.Certificate, err error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, cert, err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "watchserver-ca"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, cert, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, cert, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, cert, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "watchserver"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, cert, err
	}
	cert = tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), cert, nil
}
