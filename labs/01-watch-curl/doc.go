// Package watchcurl is lab 01, the watch API by hand: see README.md. The code
// is in watchapi/ and cmd/watch/; the exercises in testdata/script/.
package watchcurl
