//go:build !exercise

// Upstream: k8s.io/client-go@v0.37.0/rest/request.go (`Request.Watch`: a
// response that is not 200 OK is turned into an error from its Status body
// by `transformResponse`, before any stream is read:
// k8s.io/client-go@v0.37.0/rest/request.go:798-817).
//
// This is the solution of the exercise refused-watch (README: "Write it
// yourself"); refused_exercise.go is the stub built with -tags exercise.

package watchapi

import (
	"io"
	"net/http"
	"strings"
)

// refused returns an *HTTPError when the apiserver refused the watch before
// streaming (any status but 200: a malformed resourceVersion, no
// permission), with the Status body it sent, and closes that body. A watch
// that is accepted is always a 200, even one whose only event will be an
// ERROR (410 Expired arrives inside the stream): nil.
func refused(resp *http.Response) error {
	if resp.StatusCode == http.StatusOK {
		return nil
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return &HTTPError{Code: resp.StatusCode, Body: strings.TrimSpace(string(body))}
}
