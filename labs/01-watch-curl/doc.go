// Package watchcurl is lab 01, the watch API by hand: see README.md. The
// lesson's code is in watchapi/ (net/http and encoding/json only); the watch
// command's flags and kubeconfig handling in internal/watchcmd, run by
// cmd/watch; the scenarios in testdata/script/.
package watchcurl
