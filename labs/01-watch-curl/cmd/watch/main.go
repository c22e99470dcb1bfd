// Command watch is curl's watch in Go: one GET with watch=1, the body decoded
// event by event as it arrives, one line per event.
//
//	watch --kubeconfig .cluster/kubeconfig -n default configmaps
//	watch -n default --rv 1234 --bookmarks --timeout 30 configmaps
//	watch -o json ...     the raw frames, one per line, for labkit's transcript
//
// It uses client-go only to read the kubeconfig and build an *http.Client with
// its TLS and bearer token; the request and the decoding are net/http and
// encoding/json (../../watchapi).
package main

import (
	"os"

	"github.com/listwatch-labs/listwatch-labs/labs/01-watch-curl/watchapi"
)

func main() { os.Exit(watchapi.Main(os.Args[1:])) }
