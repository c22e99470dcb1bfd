// Command watchserver is a minimal Kubernetes API server for core/v1
// ConfigMaps and Pods: in-memory storage, discovery, CRUD, and watches served
// by the lab's WatchServer. It writes a kubeconfig that kubectl and client-go use
// as is:
//
//	go run ./labs/03-watchserver/cmd/watchserver --listen 127.0.0.1:18080 --kubeconfig-out /tmp/ws.kubeconfig
//	scripts/kubectl --kubeconfig /tmp/ws.kubeconfig get configmaps -A -w
package main

import (
	"os"

	"github.com/listwatch-labs/listwatch-labs/labs/03-watchserver/internal/watchservercmd"
)

func main() {
	os.Exit(watchservercmd.Main(os.Args[1:], os.Stdout, os.Stderr))
}
