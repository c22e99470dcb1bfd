//go:build !unix

package cacher

import "time"

// cpuTime is not measured on this platform; the benchmark then omits
// cpu-ns/delivery.
func cpuTime() time.Duration { return 0 }
