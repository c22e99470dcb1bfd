//go:build !exercise

// Upstream: k8s.io/client-go@v0.37.0/tools/cache/reflector.go
// (ListAndWatchWithContext and watch), which decides otherwise; ours is
// simpler on purpose. After a watch ends with a 410, the Reflector's
// `isExpiredError` case deliberately does not mark its resourceVersion
// unavailable (k8s.io/client-go@v0.37.0/tools/cache/reflector.go:646-651):
// `ListAndWatchWithContext` returns, the loop waits one step of the
// `delayHandler` backoff (k8s.io/client-go@v0.37.0/tools/cache/reflector.go:428-433),
// and the relist asks for the objects at the last resourceVersion it saw
// (`rewatchResourceVersion`, k8s.io/client-go@v0.37.0/tools/cache/reflector.go:848);
// only if that is refused too does it list at "" (`setIsLastSyncResourceVersionUnavailable`,
// k8s.io/client-go@v0.37.0/tools/cache/reflector.go:820-826 for the streaming
// list, k8s.io/client-go@v0.37.0/tools/cache/reflector.go:720-728 for LIST).
// By default it watches again from the same resourceVersion, after the
// backoff, only when the watch could not start because the connection was refused or the
// server said 429 (`isWatchErrorRetriable`, k8s.io/client-go@v0.37.0/tools/cache/reflector.go:1195-1205),
// or when the stream said 429 (`IsTooManyRequests`, k8s.io/client-go@v0.37.0/tools/cache/reflector.go:652-659);
// any other error in the stream is logged and ends the watch, and so leads
// to a relist after the backoff (`logger.Info`, k8s.io/client-go@v0.37.0/tools/cache/reflector.go:663-667),
// and so does any other error that refuses a watch at its start (what
// `isWatchErrorRetriable` does not retry is returned, k8s.io/client-go@v0.37.0/tools/cache/reflector.go:607-616).
// We relist at once and at "" on a 410 (a new, consistent snapshot: one rule
// to learn), and back off and watch again from the same resourceVersion on
// every other error: nothing is lost while the resourceVersion is still in
// the server's history, and if it is not, the next watch gets a 410.
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
