//go:build exercise

// Exercise watch-query: the stub of query.go, built with -tags exercise.
// README: "Write it yourself", watch-query. Check: scripts/labs check 01 watch-query.

package watchapi

import "net/url"

// Query encodes the options as the query string of the watch GET.
//
// TODO(exercise watch-query): this stub asks for watch=1 and nothing else,
// so `watch -rv N` watches from "now" instead of from N, and bookmarks,
// timeouts and selectors are ignored. Add each option that is set, under
// the name the apiserver reads (metav1.ListOptions' JSON names:
// resourceVersion, allowWatchBookmarks, timeoutSeconds, labelSelector,
// fieldSelector). url.Values.Encode sorts the keys for you.
func (o Options) Query() string {
	q := url.Values{"watch": {"1"}}
	return q.Encode()
}
