//go:build !exercise

// Upstream: k8s.io/client-go@v0.36.4/tools/cache/reflector.go
// (ListAndWatchWithContext and watchWithResync: on a 410, Expired or Gone,
// the Reflector marks its resourceVersion unavailable and lists again;
// any other error waits for the backoff and watches again from the same RV).
//
// This is the solution of the exercise relist-on-410 (README: "Write it
// yourself"); relist_exercise.go is the stub built with -tags exercise.

package listwatcher

import "context"

// afterFailure decides how the loop goes on after err (a watch that could
// not start, or one that ended with an error), and returns the RV to go on
// from. A 410 (IsExpired: Expired, or Gone) means the server no longer has
// the history after rv: a watch from rv can never succeed again, so the
// only way on is a new LIST (rv ""), at once, reported as StepRelist. Any
// other error may pass (the apiserver restarting, a proxy hiccup): back off,
// then watch again from the same rv, losing nothing.
func afterFailure(ctx context.Context, err error, rv string, b *backoff, report func(Step)) string {
	if IsExpired(err) {
		report(Step{Op: StepRelist, Err: err})
		return ""
	}
	b.wait(ctx, err, rv, report)
	return rv
}
