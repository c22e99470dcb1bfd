// Upstream: k8s.io/client-go@v0.37.0/tools/cache/reflector.go (the
// defaultBackoff* values) and k8s.io/apimachinery@v0.37.0/pkg/util/wait/
// backoff.go (Backoff.DelayWithReset, backoffManager.Step, delay, Jitter).
//
// Left out: nothing of the arithmetic; the random source is injectable so a
// test can pin the jitter.

package informer

import (
	"math/rand/v2"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// The reflector's backoff, as upstream: 800ms, doubling, capped at 30s,
// each delay jittered up to twice its base (Jitter 1.0), and the whole
// sequence reset every 2 minutes. So the delays are [0.8s,1.6s), [1.6s,3.2s),
// ... [25.6s,51.2s), then [30s,60s) until 2 minutes after the last reset,
// when the sequence starts again at 800ms (the reset comes 2 minutes after
// the previous reset, failures or not: `backoffManager.Step`,
// k8s.io/apimachinery@v0.37.0/pkg/util/wait/backoff.go:292-304): about 0.04
// to 0.065 QPS against an apiserver that keeps failing. The values are
// upstream's `defaultBackoffInit` and its siblings
// (k8s.io/client-go@v0.37.0/tools/cache/reflector.go:57-67).
const (
	backoffInit   = 800 * time.Millisecond
	backoffMax    = 30 * time.Second
	backoffFactor = 2.0
	backoffJitter = 1.0
	backoffReset  = 2 * time.Minute
)

// backoff hands out the reflector's delays. Safe for concurrent use.
type backoff struct {
	// lock guards every field below.
	lock      sync.Mutex
	clock     clock.Clock
	rand      func() float64 // in [0,1): the jitter's random source
	duration  time.Duration  // base of the next delay
	capped    bool           // duration reached the cap: no more doubling
	lastReset time.Time
}

func newBackoff(c clock.Clock, random func() float64) *backoff {
	if random == nil {
		random = rand.Float64
	}
	return &backoff{clock: c, rand: random, duration: backoffInit, lastReset: c.Now()}
}

// Step returns the next delay. Like upstream's `backoffManager.Step` it
// resets when more than backoffReset has passed since the last reset (not
// since the last failure: k8s.io/apimachinery@v0.37.0/pkg/util/wait/backoff.go:292-304):
// a reflector that failed once in a while starts again from 800ms.
func (b *backoff) Step() time.Duration {
	b.lock.Lock()
	defer b.lock.Unlock()
	if now := b.clock.Now(); now.Sub(b.lastReset) > backoffReset {
		b.duration, b.capped, b.lastReset = backoffInit, false, now
	}
	d := b.duration
	if !b.capped {
		next := time.Duration(float64(b.duration) * backoffFactor)
		if next > backoffMax {
			next, b.capped = backoffMax, true
		}
		b.duration = next
	}
	return d + time.Duration(b.rand()*backoffJitter*float64(d))
}
