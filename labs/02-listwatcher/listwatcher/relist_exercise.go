//go:build exercise

// Exercise relist-on-410: the stub of relist.go, built with -tags exercise.
// README: "Write it yourself", relist-on-410. Check: scripts/labs check 02 relist-on-410.

package listwatcher

import "context"

// afterFailure is called by ListAndWatch when a watch could not start, or
// ended with err. It returns the resourceVersion to go on from ("" means:
// list again first).
//
// TODO(exercise relist-on-410): this stub treats every error alike: back off,
// then watch again from rv. After a 410 (the server's history no longer
// reaches back to rv: IsExpired(err)) that watch fails again, forever. For
// a 410, report a StepRelist with the error and return "" (no backoff: the
// server is fine, our RV is not); for anything else keep what the stub does.
func afterFailure(ctx context.Context, err error, rv string, b *backoff, report func(Step)) string {
	b.wait(ctx, err, rv, report)
	return rv
}
