//go:build exercise

// Exercise refused-watch: the stub of refused.go, built with -tags exercise.
// README: "Write it yourself", refused-watch. Check: scripts/labs check 01 refused-watch.

package watchapi

import "net/http"

// refused is asked by Open about the watch GET's response before the body
// is handed out as a stream; nil means "stream it".
//
// TODO(exercise refused-watch): Goal: a watch the apiserver refused is an
// error that carries the HTTP code and the Status body the apiserver sent,
// never a stream of events.
//
// As shipped, this stub accepts every response: a refused watch (`watch -rv
// abc`: HTTP 500 with a Status body) is decoded as if it were a stream of
// events. TestOpenRefused gets no error where it wants the HTTP 500 and its
// Status.
func refused(resp *http.Response) error {
	return nil
}
