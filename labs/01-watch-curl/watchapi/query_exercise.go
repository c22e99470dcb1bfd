//go:build exercise

// Exercise watch-query: the stub of query.go, built with -tags exercise.
// README: "Write it yourself", watch-query. Check: scripts/labs check 01 watch-query.

package watchapi

import "net/url"

// Query encodes the options as the query string of the watch GET.
//
// TODO(exercise watch-query): Goal: the watch GET asks for exactly the watch
// the caller described: from its resourceVersion, with bookmarks, a timeout
// and selectors when they are set, and nothing for an option left at its
// zero value.
//
// As shipped, this stub asks for watch=1 and nothing else: `watch -rv N`
// watches from "now" instead of from N, and bookmarks, timeouts and
// selectors are ignored. TestOptionsQuery shows the query's parameters, one
// a line, that are missing.
func (o Options) Query() string {
	q := url.Values{"watch": {"1"}}
	return q.Encode()
}
