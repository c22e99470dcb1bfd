//go:build !exercise

// Upstream: k8s.io/apimachinery@v0.37.0/pkg/apis/meta/v1/types.go
// (`ListOptions`: the query parameters a watch is asked with, and their
// names, k8s.io/apimachinery@v0.37.0/pkg/apis/meta/v1/types.go:361).
//
// This is the solution of the exercise watch-query (README: "Write it
// yourself"); query_exercise.go is the stub built with -tags exercise.

package watchapi

import (
	"net/url"
	"strconv"
)

// Query encodes the options as the apiserver reads them: watch=1, and each
// option only when set, under its ListOptions name. The resourceVersion is
// what makes "list, then watch from the list's resourceVersion" work: the
// watch starts right after the state the list showed, so no change between
// the two is lost (scripts list-then-watch, go-watch).
func (o Options) Query() string {
	q := url.Values{"watch": {"1"}}
	if o.ResourceVersion != "" {
		q.Set("resourceVersion", o.ResourceVersion)
	}
	if o.AllowWatchBookmarks {
		q.Set("allowWatchBookmarks", "true")
	}
	if o.TimeoutSeconds > 0 {
		q.Set("timeoutSeconds", strconv.Itoa(o.TimeoutSeconds))
	}
	if o.LabelSelector != "" {
		q.Set("labelSelector", o.LabelSelector)
	}
	if o.FieldSelector != "" {
		q.Set("fieldSelector", o.FieldSelector)
	}
	return q.Encode()
}
