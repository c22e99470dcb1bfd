//go:build exercise

// Exercise refused-watch: the stub of refused.go, built with -tags exercise.
// README: "Write it yourself", refused-watch. Check: scripts/labs check 01 refused-watch.

package watchapi

import "net/http"

// refused is asked by Open about the watch GET's response before the body
// is handed out as a stream; nil means "stream it".
//
// TODO(exercise refused-watch): this stub accepts every response, so a watch
// the apiserver refused (HTTP 400 or 500 with a Status body, for
// resourceVersion=abc) is decoded as if it were a stream of events. When the
// status is not 200 OK, read the body (a bounded amount), close it, and
// return an *HTTPError with the code and the trimmed body.
func refused(resp *http.Response) error {
	return nil
}
