//go:build exercise

// Exercise backoff-delay: the stub of backoff_delay.go, built with -tags exercise.
// README: "Write it yourself", backoff-delay. Check: scripts/labs check 02 backoff-delay.

package listwatcher

import "time"

// nextDelay returns how long the loop waits after a failure. b.next is the
// current base (it starts at b.initial, 800ms by default; reset sets it
// back when a watch opens), b.max the cap (30s).
//
// TODO(exercise backoff-delay): this stub always waits b.next, the same
// short delay after every failure: an apiserver that is down gets hammered,
// and every client cut off by its restart retries in the same instant.
// Return b.next plus a random jitter of up to 100% of it (math/rand/v2),
// and double b.next for the next failure, never above b.max.
func (b *backoff) nextDelay() time.Duration {
	return b.next
}
