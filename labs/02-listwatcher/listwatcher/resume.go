//go:build !exercise

// Upstream: k8s.io/client-go@v0.37.0/tools/cache/reflector.go (`handleAnyWatch`
// sets the last sync resourceVersion from each event, through
// `setLastSyncResourceVersion`, k8s.io/client-go@v0.37.0/tools/cache/reflector.go:1075;
// during a streaming list it stops at the bookmark annotated
// k8s.io/initial-events-end, `InitialEventsAnnotationKey`,
// k8s.io/client-go@v0.37.0/tools/cache/reflector.go:1061-1062, and only then
// does the Reflector `Replace` its store and take that bookmark's
// resourceVersion, k8s.io/client-go@v0.37.0/tools/cache/reflector.go:901-905).
//
// This is the solution of the exercise resume-rv (README: "Write it
// yourself"); resume_exercise.go is the stub built with -tags exercise.

package listwatcher

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// resumeFrom returns the RV to resume from once ev (whose object's metadata
// is obj) has been reported, and whether a streaming list is still going on.
// In a live watch every event's RV is newer than the last: resume from it.
// During a streaming list (listing) the objects come in key order with RVs
// in no order, so none of them says "everything up to here is seen"; only
// the BOOKMARK annotated k8s.io/initial-events-end does, and it ends the list.
func resumeFrom(ev watch.Event, obj metav1.Object, rv string, listing bool) (string, bool) {
	switch {
	case !listing:
		return obj.GetResourceVersion(), false
	case ev.Type == watch.Bookmark && obj.GetAnnotations()[metav1.InitialEventsAnnotationKey] == "true":
		return obj.GetResourceVersion(), false
	}
	return rv, listing
}
