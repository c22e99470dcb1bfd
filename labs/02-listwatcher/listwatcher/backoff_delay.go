//go:build !exercise

// Upstream: k8s.io/apimachinery@v0.37.0/pkg/util/wait/backoff.go
// (`Backoff.Step` and its `delay`: Duration, Factor 2, Jitter 1, Cap,
// k8s.io/apimachinery@v0.37.0/pkg/util/wait/backoff.go:98-130) as the Reflector sets it
// up (`defaultBackoffInit`, k8s.io/client-go@v0.37.0/tools/cache/reflector.go:317-326).
//
// This is the solution of the exercise backoff-delay (README: "Write it
// yourself"); backoff_delay_exercise.go is the stub built with -tags exercise.

package listwatcher

import (
	"math/rand/v2"
	"time"
)

// nextDelay returns how long to wait after this failure, and doubles the
// base for the next one, up to b.max. The wait is the base plus up to 100%
// random jitter, so the waits are 0.8-1.6s, 1.6-3.2s, ... and 30-60s once
// capped: a thousand clients cut off by one apiserver restart spread out
// instead of all coming back in the same millisecond.
func (b *backoff) nextDelay() time.Duration {
	delay := b.next + time.Duration(rand.Int64N(int64(b.next)+1))
	b.next = min(2*b.next, b.max)
	return delay
}
