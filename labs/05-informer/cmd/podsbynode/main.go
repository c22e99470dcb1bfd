// Command podsbynode is lab 05's capstone controller: pods per node, from
// the spec.nodeName index of our informer, published in a ConfigMap. See
// internal/podsbynodecmd for its flags and ../../README.md for the lesson.
package main

import (
	"os"

	"github.com/listwatch-labs/listwatch-labs/labs/05-informer/internal/podsbynodecmd"
)

func main() { os.Exit(podsbynodecmd.Main(os.Args[1:], os.Stdout, os.Stderr)) }
