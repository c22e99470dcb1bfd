//go:build exercise

// Exercise relist-on-410: the stub of relist.go, built with -tags exercise.
// README: "Write it yourself", relist-on-410. Check: scripts/labs check 02 relist-on-410.

package listwatcher

import "context"

// afterFailure is called by ListAndWatch when a watch could not start, or
// ended with err. It returns the resourceVersion to go on from ("" means:
// list again first).
//
// TODO(exercise relist-on-410): Goal: after the apiserver says 410 Expired,
// the loop gets back to a working watch, and an ordinary failure still backs
// off and watches again.
//
// As shipped, this stub treats every error alike: back off, then watch again
// from rv. After a 410 the loop asks again for a resourceVersion the server
// has forgotten, and is told 410 again, forever. TestListAndWatch shows the
// loop's steps as a diff from the expected ones: look at what follows the
// first ERROR.
func afterFailure(ctx context.Context, err error, rv string, b *backoff, report func(Step)) string {
	b.wait(ctx, err, rv, report)
	return rv
}
