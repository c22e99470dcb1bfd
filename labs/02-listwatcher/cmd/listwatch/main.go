// Command listwatch lists a core/v1 resource in a namespace, prints the
// items, then watches from the list's resourceVersion and prints every
// event, every rewatch and every relist, one per line, until interrupted.
// See ../../internal/listwatchcmd for its flags, ../../README.md for the lesson.
package main

import (
	"os"

	"github.com/listwatch-labs/listwatch-labs/labs/02-listwatcher/internal/listwatchcmd"
)

func main() { os.Exit(listwatchcmd.Main(os.Args[1:], os.Stdout, os.Stderr)) }
