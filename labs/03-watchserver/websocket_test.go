package lab_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/websocket"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/listwatch-labs/listwatch-labs/labkit"
	"github.com/listwatch-labs/listwatch-labs/labs/03-watchserver/apiserver"
)

// TestWebsocketWatchBothServers watches over a websocket (upstream's
// HandleWS, our WatchServer.HandleWS) on both servers: one message per
// event, and the same transcript.
func TestWebsocketWatchBothServers(t *testing.T) {
	t.Parallel()
	cluster := labkit.Current()
	lab, labCfg := startLabServer(t, apiserver.Config{})
	name := fmt.Sprintf("ws-%d", time.Now().UnixNano())
	var transcripts []string
	for _, target := range []struct {
		server, token string
		ca            []byte
		client        kubernetes.Interface
		// certPEM, keyPEM: a client certificate, for a cluster whose
		// kubeconfig holds one instead of a token (kind's).
		certPEM, keyPEM []byte
	}{
		{cluster.Server, cluster.Token, cluster.CAData, cluster.Client, cluster.Config.CertData, cluster.Config.KeyData},
		{lab.URL, lab.Token, lab.CAPEM, kubernetes.NewForConfigOrDie(labCfg), nil, nil},
	} {
		cms := target.client.CoreV1().ConfigMaps("default")
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		list, err := cms.List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		url := "wss" + strings.TrimPrefix(target.server, "https") + "/api/v1/namespaces/default/configmaps?watch=1&fieldSelector=metadata.name%3D" + name + "&resourceVersion=" + list.ResourceVersion
		cfg, err := websocket.NewConfig(url, "https://127.0.0.1/")
		if err != nil {
			t.Fatal(err)
		}
		cfg.TlsConfig = tlsConfigFor(t, target.ca)
		if target.token != "" {
			cfg.Header = http.Header{"Authorization": {"Bearer " + target.token}}
		} else {
			cert, err := tls.X509KeyPair(target.certPEM, target.keyPEM)
			if err != nil {
				t.Fatalf("%s: no token and no usable client certificate: %v", target.server, err)
			}
			cfg.TlsConfig.Certificates = []tls.Certificate{cert}
		}
		ws, err := websocket.DialConfig(cfg)
		if err != nil {
			t.Fatalf("%s: %v", target.server, err)
		}
		if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"color": "blue"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := cms.Patch(ctx, name, types.MergePatchType, []byte(`{"data":{"color":"green"}}`), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := cms.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		tr := labkit.NewTranscript("data.color")
		ws.SetReadDeadline(time.Now().Add(20 * time.Second))
		for range 3 {
			var msg []byte
			if err := websocket.Message.Receive(ws, &msg); err != nil {
				t.Fatalf("%s: %v", target.server, err)
			}
			if err := tr.Add(msg); err != nil {
				t.Fatalf("%s: message %q: %v", target.server, msg, err)
			}
		}
		ws.Close()
		cancel()
		transcripts = append(transcripts, tr.String())
	}
	want := "ADDED ConfigMap " + name + " rv1 data.color=blue\nMODIFIED ConfigMap " + name + " rv2 data.color=green\nDELETED ConfigMap " + name + " rv3 data.color=green\n"
	if transcripts[0] != want || transcripts[1] != want {
		t.Fatalf("real server:\n%s\nours:\n%s\nwant:\n%s", transcripts[0], transcripts[1], want)
	}
}
