// Upstream: k8s.io/apiserver@v0.36.4/pkg/server/secure_serving.go (TLS and
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
// commands for the two servers in every exercise.

package watchserver

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
	"math/big"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Config is what cmd/watchserver's flags set.
type Config struct {
	// Listen is host:port; the host must be 127.0.0.1. Port 0 picks a free one.
	Listen string
	// KubeconfigOut, if set, is where the kubeconfig is written (mode 0600).
	KubeconfigOut string
	// HistorySize is how many events a watch can be replayed from. Default 1000.
	HistorySize int
	// BookmarkInterval is how often watchers that allow bookmarks get one.
	// Default one minute, as upstream; negative turns periodic bookmarks off.
	BookmarkInterval time.Duration
	// MinRequestTimeout: see Server.MinRequestTimeout. Default 30 minutes.
	MinRequestTimeout time.Duration
}

// Instance is a running server.
type Instance struct {
	URL        string // https://127.0.0.1:PORT
	Token      string
	CAPEM      []byte
	Kubeconfig []byte
	Store      *Store

	http         *http.Server
	shuttingDown chan struct{}
	stopBookmark chan struct{}
	wg           sync.WaitGroup
	closeOnce    sync.Once
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
	caPEM, cert, err := selfSignedTLS()
	if err != nil {
		return nil, err
	}
	tokenBytes := make([]byte, 16)
	rand.Read(tokenBytes)
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return nil, err
	}
	in := &Instance{
		URL:          "https://" + ln.Addr().String(),
		Token:        hex.EncodeToString(tokenBytes),
		CAPEM:        caPEM,
		Store:        NewStore(cfg.HistorySize, 0),
		shuttingDown: make(chan struct{}),
		stopBookmark: make(chan struct{}),
	}
	api := &Server{
		Store:             in.Store,
		Token:             in.Token,
		MinRequestTimeout: cfg.MinRequestTimeout,
		ShuttingDown:      in.shuttingDown,
		Address:           ln.Addr().String(),
	}
	if in.Kubeconfig, err = kubeconfig(in.URL, caPEM, in.Token); err != nil {
		ln.Close()
		return nil, err
	}
	if cfg.KubeconfigOut != "" {
		if err := writePrivate(cfg.KubeconfigOut, in.Kubeconfig); err != nil {
			ln.Close()
			return nil, err
		}
	}
	in.http = &http.Server{
		Handler:           api.Handler(),
		TLSConfig:         &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"h2", "http/1.1"}, MinVersion: tls.VersionTLS12},
		ReadHeaderTimeout: 10 * time.Second,
	}
	// Shutdown waits for idle connections, and a watch is never idle: tell
	// every WatchServer to end its stream first.
	in.http.RegisterOnShutdown(func() { close(in.shuttingDown) })
	in.wg.Add(1)
	go func() {
		defer in.wg.Done()
		if err := in.http.ServeTLS(ln, "", ""); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintln(os.Stderr, "watchserver:", err)
		}
	}()
	if cfg.BookmarkInterval > 0 {
		in.wg.Add(1)
		go func() {
			defer in.wg.Done()
			t := time.NewTicker(cfg.BookmarkInterval)
			defer t.Stop()
			for {
				select {
				case <-t.C:
					in.Store.SendBookmarks()
				case <-in.stopBookmark:
					return
				}
			}
		}()
	}
	return in, nil
}

// Close is the shutdown sequence: stop accepting, end every watch, wait for
// the handlers to return, then stop the store.
func (in *Instance) Close() error {
	var err error
	in.closeOnce.Do(func() {
		close(in.stopBookmark)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		err = in.http.Shutdown(ctx)
		in.Store.Close()
		in.wg.Wait()
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
