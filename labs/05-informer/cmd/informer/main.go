// Command informer runs lab 05's SharedIndexInformer over lab 02's
// ListWatch and prints every handler call. See internal/informercmd for its
// flags and ../../README.md for the lesson.
package main

import (
	"os"

	"github.com/listwatch-labs/listwatch-labs/labs/05-informer/internal/informercmd"
)

func main() { os.Exit(informercmd.Main(os.Args[1:], os.Stdout, os.Stderr)) }
