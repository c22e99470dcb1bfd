package main

// Credentials for one cluster, made fresh by every `up`: a CA, the apiserver's
// serving certificate signed by it, a service-account signing key, and one
// random bearer token per identity. Real clusters (kubeadm) use client
// certificates for the components; static tokens are simpler to read and the
// apiserver authenticates them the same way as far as RBAC is concerned.
//
// Every private file is written with mode 0600; the kubeconfigs embed the CA
// (certificate-authority-data), so clients verify TLS and never need
// insecure-skip-tls-verify.

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/listwatch-labs/listwatch-labs/clusterstate"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// identity is one user of the static token file. The names and groups are the
// ones the apiserver's bootstrap RBAC policy and Node authorizer expect.
type identity struct {
	user   string
	groups []string
	file   string // kubeconfig file name; "" for the admin (it goes to <dir>/kubeconfig)
}

const nodeName = "lab-node"

var identities = []identity{
	{user: "lab-admin", groups: []string{"system:masters"}},
	{user: "system:kube-controller-manager", file: "controller-manager"},
	{user: "system:kube-scheduler", file: "scheduler"},
	// The Node authorizer and NodeRestriction admission give this identity
	// exactly what a kubelet may do: its own Node, Lease, and the pods bound to it.
	{user: "system:node:" + nodeName, groups: []string{"system:nodes"}, file: "node"},
}

// makePKI writes the CA, serving cert, SA keys, token file and kubeconfigs.
func makePKI(p clusterstate.Dir, apiserverURL string) error {
	if err := os.MkdirAll(filepath.Dir(p.PKI("x")), 0o700); err != nil {
		return err
	}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "labcluster-ca"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.AddDate(1, 0, 0),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return err
	}
	caCert, _ := x509.ParseCertificate(caDER)

	srvKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	srvTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "kube-apiserver"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.AddDate(1, 0, 0),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		// 127.0.0.1 is where clients reach it; the in-cluster names and the
		// first service IP are what a pod would use, kept so the cert is realistic.
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("10.0.0.1")},
		DNSNames:    []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"},
	}
	srvDER, err := x509.CreateCertificate(rand.Reader, srvTmpl, caCert, &srvKey.PublicKey, caKey)
	if err != nil {
		return err
	}
	saKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}

	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	files := []struct {
		name string
		data []byte
	}{
		{"ca.crt", caPEM},
		{"ca.key", mustKeyPEM(caKey)},
		{"apiserver.crt", pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srvDER})},
		{"apiserver.key", mustKeyPEM(srvKey)},
		{"sa.key", mustKeyPEM(saKey)},
		{"sa.pub", mustPubPEM(&saKey.PublicKey)},
	}
	for _, f := range files {
		if err := os.WriteFile(p.PKI(f.name), f.data, 0o600); err != nil {
			return err
		}
	}

	// tokens.csv: token,user,uid,"group1,group2" (the --token-auth-file format).
	var csv strings.Builder
	for _, id := range identities {
		token, err := randomToken()
		if err != nil {
			return err
		}
		fmt.Fprintf(&csv, "%s,%s,%s,\"%s\"\n", token, id.user, id.user, strings.Join(id.groups, ","))
		file := p.Kubeconfig()
		if id.file != "" {
			file = p.ComponentKubeconfig(id.file)
		}
		if err := writeKubeconfig(file, apiserverURL, caPEM, id.user, token); err != nil {
			return err
		}
	}
	return os.WriteFile(p.PKI("tokens.csv"), []byte(csv.String()), 0o600)
}

func randomToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

func mustKeyPEM(k *ecdsa.PrivateKey) []byte {
	der, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		panic(err) // cannot fail for a key we just generated
	}
	return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der})
}

func mustPubPEM(k *ecdsa.PublicKey) []byte {
	der, err := x509.MarshalPKIXPublicKey(k)
	if err != nil {
		panic(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}

// writeKubeconfig writes a one-context kubeconfig named "labcluster", mode 0600.
func writeKubeconfig(file, server string, caPEM []byte, user, token string) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["labcluster"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: caPEM}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts["labcluster"] = &clientcmdapi.Context{Cluster: "labcluster", AuthInfo: user, Namespace: "default"}
	cfg.CurrentContext = "labcluster"
	if err := clientcmd.WriteToFile(*cfg, file); err != nil {
		return err
	}
	return os.Chmod(file, 0o600)
}
