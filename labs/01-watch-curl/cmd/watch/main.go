// Command watch is curl's watch in Go: one GET with watch=1, the body decoded
// event by event as it arrives, one line per event.
//
//	watch --kubeconfig .cluster/kubeconfig -n default configmaps
//	watch -n default --rv 1234 --bookmarks --timeout 30 configmaps
//	watch -o json ...     the raw frames, one per line, for labkit's transcript
//
// The code is in ../../internal/watchcmd (flags, kubeconfig) and
// ../../watchapi (the request and the decoding: net/http and encoding/json).
package main

import (
	"os"

	"github.com/listwatch-labs/listwatch-labs/labs/01-watch-curl/internal/watchcmd"
)

func main() { os.Exit(watchcmd.Main(os.Args[1:], os.Stdout, os.Stderr)) }
