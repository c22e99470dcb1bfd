//go:build exercise

// Exercise backoff-delay: the stub of backoff_delay.go, built with -tags exercise.
// README: "Write it yourself", backoff-delay. Check: scripts/labs check 02 backoff-delay.

package listwatcher

import "time"

// nextDelay returns how long the loop waits after a failure. b.next is the
// current base (it starts at b.initial, 800ms by default; reset sets it
// back when a watch opens), b.max the cap (30s).
//
// TODO(exercise backoff-delay): Goal: after each failure in a row the loop
// waits longer, up to a cap, and clients cut off together do not all come
// back in the same instant.
//
// As shipped, this stub always waits the same short delay: an apiserver that
// is down gets hammered, and every client cut off by its restart retries at
// once. TestListAndWatchUnreachable names each delay outside the range it
// expects, and says so if no delay has a random part.
func (b *backoff) nextDelay() time.Duration {
	return b.next
}
