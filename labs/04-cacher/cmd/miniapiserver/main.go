// Command miniapiserver is lab 03's API server over lab 04's Cacher over an
// etcd running in the same process: ConfigMaps and Pods, served the way
// kube-apiserver serves them, with the Cacher's metrics at /metrics.
//
//	go run ./labs/04-cacher/cmd/miniapiserver --listen 127.0.0.1:0 --kubeconfig-out "$DIR/mini.kubeconfig"
//	scripts/kubectl --kubeconfig "$DIR/mini.kubeconfig" get pods -A -w
package main

import (
	"os"

	"github.com/listwatch-labs/listwatch-labs/labs/04-cacher/internal/miniapiservercmd"
)

func main() {
	os.Exit(miniapiservercmd.Main(os.Args[1:], os.Stdout, os.Stderr))
}
