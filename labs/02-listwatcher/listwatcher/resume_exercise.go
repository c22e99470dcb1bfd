//go:build exercise

// Exercise resume-rv: the stub of resume.go, built with -tags exercise.
// README: "Write it yourself", resume-rv. Check: scripts/labs check 02 resume-rv.

package listwatcher

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// resumeFrom is called by watchEvents for each event ev (obj is its
// object's metadata). rv is the RV to resume from so far; listing says a
// streaming list (sendInitialEvents=true) is still sending the initial
// objects. It returns the new rv and listing.
//
// TODO(exercise resume-rv): this stub resumes from every event's RV. That is
// right in a live watch, but during a streaming list the objects arrive in
// key order, not RV order: a watch broken after object "a" (RV 7) would
// resume from 7 and never see "b" (RV 3). While listing, keep rv as it is
// until the BOOKMARK annotated metav1.InitialEventsAnnotationKey ("true");
// its RV is where the list ends, and listing stops there.
func resumeFrom(ev watch.Event, obj metav1.Object, rv string, listing bool) (string, bool) {
	return obj.GetResourceVersion(), false
}
