package watchserver

import (
	"net/url"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// The expected Statuses were recorded from the embedded kube-apiserver
// (1.36); TestBadRequestsMatchRealServer (lab root) checks them live at v1.37.0.
func TestParseListOptionsErrors(t *testing.T) {
	for _, tc := range []struct {
		query   string
		code    int32
		reason  string
		message string
	}{
		{"watch=1&timeoutSeconds=abc", 400, "BadRequest", `strconv.ParseInt: parsing "abc": invalid syntax`},
		{"watch=1&resourceVersionMatch=NotOlderThan", 422, "Invalid", `ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided`},
		{"watch=1&sendInitialEvents=true", 422, "Invalid", `ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan`},
		{"watch=1&sendInitialEvents=true&resourceVersionMatch=Exact", 422, "Invalid", `ListOptions.meta.k8s.io "" is invalid: [resourceVersionMatch: Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan, resourceVersionMatch: Unsupported value: "Exact": supported values: "NotOlderThan"]`},
		{"watch=1&resourceVersionMatch=Bogus", 422, "Invalid", `ListOptions.meta.k8s.io "" is invalid: [resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided, resourceVersionMatch: Unsupported value: "Bogus": supported values: "NotOlderThan"]`},
		{"resourceVersionMatch=Exact", 422, "Invalid", `ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided`},
		{"sendInitialEvents=true", 422, "Invalid", `ListOptions.meta.k8s.io "" is invalid: sendInitialEvents: Forbidden: sendInitialEvents is forbidden for list`},
		{"watch=1&labelSelector=a%20in", 400, "BadRequest", `unable to parse requirement: found '' expected: '('`},
		{"watch=1&fieldSelector=data.x%3Dy", 400, "BadRequest", `"data.x" is not a known field selector: only "metadata.name", "metadata.namespace"`},
		{"watch=1&fieldSelector=a%3D%3D%3Db", 400, "BadRequest", `invalid field selector: unescaped character in value: 61`},
		{"limit=abc", 400, "BadRequest", `strconv.ParseInt: parsing "abc": invalid syntax`},
	} {
		q, _ := url.ParseQuery(tc.query)
		_, err := ParseListOptions(q, false, "", nil)
		status, ok := err.(apierrors.APIStatus)
		if !ok {
			t.Errorf("%s: err = %v, want a Status error", tc.query, err)
			continue
		}
		s := status.Status()
		if s.Code != tc.code || string(s.Reason) != tc.reason || s.Message != tc.message {
			t.Errorf("%s:\n got %d %s %q\nwant %d %s %q", tc.query, s.Code, s.Reason, s.Message, tc.code, tc.reason, tc.message)
		}
	}
}

func TestWatchListDefaulting(t *testing.T) {
	for _, tc := range []struct {
		query       string
		initial     string // "nil", "true", "false"
		match       string
		bookmarks   bool
		description string
	}{
		{"watch=1", "true", "NotOlderThan", false, `RV "" becomes a streaming list`},
		{"watch=1&resourceVersion=0&allowWatchBookmarks=true", "true", "NotOlderThan", true, `so does RV "0"`},
		{"watch=1&resourceVersion=5", "nil", "", false, "an explicit RV keeps its meaning"},
		{"watch=1&sendInitialEvents=false&resourceVersionMatch=NotOlderThan", "false", "NotOlderThan", false, "explicit parameters are not overridden"},
		{"watch=xyz", "true", "NotOlderThan", false, "any value but 0/false turns watch on"},
	} {
		q, _ := url.ParseQuery(tc.query)
		opts, err := ParseListOptions(q, false, "", nil)
		if err != nil {
			t.Fatalf("%s: %v", tc.query, err)
		}
		initial := "nil"
		if opts.SendInitialEvents != nil {
			initial = map[bool]string{true: "true", false: "false"}[*opts.SendInitialEvents]
		}
		if !opts.Watch || initial != tc.initial || string(opts.ResourceVersionMatch) != tc.match || opts.AllowWatchBookmarks != tc.bookmarks {
			t.Errorf("%s (%s): watch=%v sendInitialEvents=%s resourceVersionMatch=%q bookmarks=%v", tc.query, tc.description, opts.Watch, initial, opts.ResourceVersionMatch, opts.AllowWatchBookmarks)
		}
	}
}

func TestNameMustAgreeWithFieldSelector(t *testing.T) {
	q, _ := url.ParseQuery("fieldSelector=metadata.name%3Db")
	if _, err := ParseListOptions(q, true, "a", nil); err == nil || err.Error() != "fieldSelector metadata.name doesn't match requested name" {
		t.Fatalf("err = %v", err)
	}
	opts, err := ParseListOptions(url.Values{}, true, "a", nil)
	if err != nil || opts.FieldSelector.String() != "metadata.name=a" {
		t.Fatalf("opts %v, err %v: a named watch is a metadata.name selector", opts, err)
	}
}
