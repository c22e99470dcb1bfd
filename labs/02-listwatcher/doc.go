// Package lab02 is lab 02, a ListerWatcher from scratch: see README.md. The
// code is in listwatcher/ and cmd/listwatch/; the scenarios in
// testdata/script/; the tests that need a cluster are in this directory.
package lab02
