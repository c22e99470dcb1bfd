// Upstream: k8s.io/client-go@v0.37.0/rest/request.go (Request.transformResponse,
// newUnstructuredResponseError) and k8s.io/apimachinery@v0.37.0/pkg/api/errors
// (FromObject, StatusError, IsResourceExpired, IsGone).
//
// We reuse apimachinery's StatusError type instead of defining our own so
// that apierrors.IsResourceExpired, IsGone, IsNotFound... work on our errors
// exactly as they do on client-go's: code that handles client-go errors
// handles ours.

package listwatcher

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// StatusError turns the object of an ERROR event into an error carrying
// its Status (a *apierrors.StatusError). A "too old resource version" answers
// true to apierrors.IsResourceExpired (reason Expired) or apierrors.IsGone
// (reason Gone): both are code 410 and both mean "relist" (the Reflector's
// `isExpiredError` checks both, k8s.io/client-go@v0.37.0/tools/cache/reflector.go:1154-1160).
func StatusError(obj runtime.Object) error {
	if status, ok := obj.(*metav1.Status); ok {
		return &apierrors.StatusError{ErrStatus: *status}
	}
	return fmt.Errorf("ERROR event carries %T, not a Status", obj)
}

// IsExpired reports whether err says the resourceVersion we asked for is
// older than what the server still has (HTTP 410, reason Expired or Gone):
// the only answer to that is a new LIST.
func IsExpired(err error) bool {
	return apierrors.IsResourceExpired(err) || apierrors.IsGone(err)
}

// errorFromResponse reads a non-200 answer. The apiserver sends a Status
// body for every error it produces; a proxy or a load balancer in front of
// it may not, and then the HTTP code alone is all we know.
func errorFromResponse(resp *http.Response) error {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var status metav1.Status
	if json.Unmarshal(body, &status) == nil && status.Kind == "Status" {
		if status.Code == 0 {
			status.Code = int32(resp.StatusCode)
		}
		return &apierrors.StatusError{ErrStatus: status}
	}
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status:  metav1.StatusFailure,
		Code:    int32(resp.StatusCode),
		Reason:  reasonForCode(resp.StatusCode),
		Message: fmt.Sprintf("%s %s: %s", resp.Request.Method, resp.Request.URL.Path, strings.TrimSpace(string(body))),
	}}
}

// reasonForCode is the StatusReason an apiserver would have sent with code.
func reasonForCode(code int) metav1.StatusReason {
	switch code {
	case http.StatusGone:
		return metav1.StatusReasonGone
	case http.StatusNotFound:
		return metav1.StatusReasonNotFound
	case http.StatusUnauthorized:
		return metav1.StatusReasonUnauthorized
	case http.StatusForbidden:
		return metav1.StatusReasonForbidden
	case http.StatusTooManyRequests:
		return metav1.StatusReasonTooManyRequests
	case http.StatusBadRequest:
		return metav1.StatusReasonBadRequest
	case http.StatusServiceUnavailable:
		return metav1.StatusReasonServiceUnavailable
	}
	return metav1.StatusReasonInternalError
}

// streamBroken is the Status of the ERROR event a streamWatcher sends when a
// frame cannot be decoded (not JSON, not a watch event, another kind, over
// 16 MiB): the Status client-go's watch reports then, made by the same
// reporter rest.Request.Watch gives its StreamWatcher (code 500, reason
// InternalError, cause ClientWatchDecoding). A stream that merely ends or
// breaks is no error: see isEndOfStream.
func streamBroken(err error) *metav1.Status {
	reporter := apierrors.NewClientErrorReporter(http.StatusInternalServerError, http.MethodGet, "ClientWatchDecoding")
	status := reporter.AsObject(fmt.Errorf("unable to decode an event from the watch stream: %w", err)).(*metav1.Status)
	status.Kind, status.APIVersion = "Status", "v1"
	return status
}
