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
// TODO(exercise resume-rv): Goal: the RV to resume from is always one that
// promises "every object up to here has been seen", so that a watch broken
// at any moment, even during a streaming list (sendInitialEvents=true),
// resumes without losing an object.
//
// As shipped, this stub resumes from every event's RV. During a streaming
// list a watch broken after one of the initial objects then resumes from
// that object's RV and can miss others. TestListAndWatchStreamingList shows
// the resume points the loop reports, as a diff from the expected ones.
func resumeFrom(ev watch.Event, obj metav1.Object, rv string, listing bool) (string, bool) {
	return obj.GetResourceVersion(), false
}
