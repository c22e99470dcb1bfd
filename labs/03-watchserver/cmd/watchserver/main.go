// Command watchserver is a minimal Kubernetes API server for core/v1
// ConfigMaps: an in-memory store, discovery, CRUD, and watches served by the
// lab's WatchServer. It writes a kubeconfig that kubectl and client-go use
// as is:
//
//	go run ./labs/03-watchserver/cmd/watchserver --listen 127.0.0.1:18080 --kubeconfig-out /tmp/ws.kubeconfig
//	scripts/kubectl --kubeconfig /tmp/ws.kubeconfig get configmaps -A -w
package main

import (
	"os"

	"github.com/listwatch-labs/listwatch-labs/labs/03-watchserver/watchserver"
)

func main() {
	os.Exit(watchserver.Main(os.Args[1:], os.Stderr))
}
