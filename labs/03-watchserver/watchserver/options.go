// Upstream: k8s.io/apiserver@v0.37.0/pkg/endpoints/handlers/get.go (listOpts),
// k8s.io/apimachinery@v0.37.0/pkg/apis/meta/internalversion/defaults.go
// (SetListOptionsDefaults) and .../internalversion/validation/validation.go
// (ValidateListOptions, validateWatchOptions).
//
// Upstream decodes the query with a generated url.Values -> ListOptions
// conversion and then defaults and validates the result. We parse the handful
// of parameters a watch uses by hand, so a reader sees each one, and build the
// same errors from the same apimachinery constructors, so the Status a client
// receives (code, reason, message, causes) is byte for byte the real one.
// limit and continue are parsed here and handed on: a LIST passes them to
// its storage, which pages or not (lab 04's etcd3 store pages, lab 03's
// memstorage answers whole lists); a WATCH ignores them.
// Left out: the feature gate itself (`WatchList` is on by default in 1.32 and since v1.34,
// k8s.io/apiserver@v0.37.0/pkg/features/kube_features.go:487-493; we always act
// as if it is on).

package watchserver

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ListOptions is what a LIST or WATCH request asked for, after parsing,
// defaulting and validation. It mirrors metainternalversion.ListOptions.
type ListOptions struct {
	Watch                bool
	ResourceVersion      string // "" and "0" are special; otherwise a decimal RV
	ResourceVersionMatch metav1.ResourceVersionMatch
	// TimeoutSeconds is nil when the client did not ask; the handler then
	// picks a random timeout as upstream does with --min-request-timeout.
	TimeoutSeconds      *int64
	AllowWatchBookmarks bool
	// SendInitialEvents is a *bool because "not set" differs from "false":
	// nil keeps the legacy meaning of resourceVersion.
	SendInitialEvents *bool
	LabelSelector     labels.Selector
	FieldSelector     fields.Selector
	// Limit (0: none) and Continue ("": the first page) are a LIST's paging,
	// for the storage to interpret.
	Limit    int64
	Continue string
}

// queryBool reads a boolean query parameter the way apimachinery's
// Convert_Slice_string_To_bool does: present and not "0"/"false" means true,
// even "?watch=" or "?watch=xyz". That is why `?watch` alone starts a watch.
func queryBool(q url.Values, key string) (value, present bool) {
	vs, ok := q[key]
	if !ok || len(vs) == 0 {
		return false, false
	}
	v := vs[0]
	return !(v == "0" || strings.EqualFold(v, "false")), true
}

// ParseListOptions turns a request's query into ListOptions, in upstream's
// order: decode (400 BadRequest on a malformed value), default, validate
// (422 Invalid on a forbidden combination), then convert field selector
// labels (400 BadRequest). forceWatch is true on the legacy /watch/ paths.
// name is the object name of a single-object request, or "". convertField
// is the kind's field label conversion (upstream: the scheme's
// FieldLabelConversionFunc for the kind); nil means the two metadata fields
// every object has (runtime.DefaultMetaV1FieldSelectorConversion).
func ParseListOptions(q url.Values, forceWatch bool, name string, convertField runtime.FieldLabelConversionFunc) (*ListOptions, error) {
	opts := &ListOptions{}

	// 1. Decode. Each failure here is the conversion error itself, wrapped
	// in a BadRequest, as listOpts does with DecodeParameters' error.
	opts.Watch, _ = queryBool(q, "watch")
	opts.ResourceVersion = q.Get("resourceVersion")
	opts.ResourceVersionMatch = metav1.ResourceVersionMatch(q.Get("resourceVersionMatch"))
	if v, ok := q["timeoutSeconds"]; ok && len(v) > 0 {
		n, err := strconv.ParseInt(v[0], 10, 64)
		if err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
		opts.TimeoutSeconds = &n
	}
	if v, ok := q["limit"]; ok && len(v) > 0 {
		n, err := strconv.ParseInt(v[0], 10, 64)
		if err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
		opts.Limit = n
	}
	opts.Continue = q.Get("continue")
	opts.AllowWatchBookmarks, _ = queryBool(q, "allowWatchBookmarks")
	if v, ok := queryBool(q, "sendInitialEvents"); ok {
		opts.SendInitialEvents = &v
	}
	var err error
	if opts.LabelSelector, err = labels.Parse(q.Get("labelSelector")); err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	if opts.FieldSelector, err = fields.ParseSelector(q.Get("fieldSelector")); err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}

	// 2. Default: with the WatchList feature on, a watch that did not say
	// where to start ("" or "0") and did not use the new parameters becomes
	// a streaming list: initial state as ADDED events, then changes. For an
	// old client nothing visible changes in the events (it always got the
	// initial state for RV ""/"0"); a client that also allows bookmarks
	// additionally gets the BOOKMARK that marks the end of the initial
	// events, and, since 1.37, if it sent Accept-Encoding: gzip, a body of
	// gzip members (a watch-list, compression.go): Go's transport decodes it
	// unnoticed when it added the header itself, curl --compressed fails
	// after the first member.
	if opts.SendInitialEvents == nil && opts.ResourceVersionMatch == "" &&
		opts.Watch && (opts.ResourceVersion == "" || opts.ResourceVersion == "0") {
		on := true
		opts.SendInitialEvents = &on
		opts.ResourceVersionMatch = metav1.ResourceVersionMatchNotOlderThan
	}

	// 3. Validate. All errors are collected, then reported together as one
	// 422 Invalid on the kind ListOptions.meta.k8s.io with an empty name.
	if errs := validateListOptions(opts, opts.Continue); len(errs) > 0 {
		return nil, apierrors.NewInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: "ListOptions"}, "", errs)
	}

	// 4. Field selectors: each kind knows its own selectable fields (a
	// ConfigMap only the two metadata fields, a Pod also spec.nodeName and
	// a few more). The conversion's error is the message, as in listOpts.
	if convertField == nil {
		convertField = runtime.DefaultMetaV1FieldSelectorConversion
	}
	if opts.FieldSelector, err = opts.FieldSelector.Transform(fields.TransformFunc(convertField)); err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}

	// The legacy /watch/ paths watch no matter what ?watch says, but only from
	// here on: as upstream's ListResource, which passes forceWatch beside
	// the options listOpts made, the query was defaulted and validated as a
	// LIST's (sendInitialEvents on a /watch/ path is "forbidden for list";
	// TestLegacyWatchPathForcesAWatch).
	opts.Watch = opts.Watch || forceWatch

	// A request for one object (/configmaps/NAME) is a field selector on
	// metadata.name; a conflicting explicit selector is an error.
	if name != "" {
		if !opts.FieldSelector.Empty() {
			if selected, ok := opts.FieldSelector.RequiresExactMatch("metadata.name"); !ok || selected != name {
				return nil, apierrors.NewBadRequest("fieldSelector metadata.name doesn't match requested name")
			}
		} else {
			opts.FieldSelector = fields.OneTermEqualSelector("metadata.name", name)
		}
	}
	return opts, nil
}

// validateListOptions is ValidateListOptions with the feature gate on.
// The messages are upstream's words, since clients and tests match on them.
func validateListOptions(opts *ListOptions, cont string) field.ErrorList {
	var errs field.ErrorList
	match := opts.ResourceVersionMatch
	rvm := field.NewPath("resourceVersionMatch")
	if opts.Watch {
		if opts.SendInitialEvents != nil && match != metav1.ResourceVersionMatchNotOlderThan {
			errs = append(errs, field.Forbidden(rvm, fmt.Sprintf("sendInitialEvents requires setting resourceVersionMatch to %s", metav1.ResourceVersionMatchNotOlderThan)))
		}
		if match != "" {
			if opts.SendInitialEvents == nil {
				errs = append(errs, field.Forbidden(rvm, "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided"))
			}
			if match != metav1.ResourceVersionMatchNotOlderThan {
				errs = append(errs, field.NotSupported(rvm, match, []string{string(metav1.ResourceVersionMatchNotOlderThan)}))
			}
			if cont != "" {
				errs = append(errs, field.Forbidden(rvm, "resourceVersionMatch is forbidden when continue is provided"))
			}
		}
		return errs
	}
	if match != "" {
		if opts.ResourceVersion == "" {
			errs = append(errs, field.Forbidden(rvm, "resourceVersionMatch is forbidden unless resourceVersion is provided"))
		}
		if cont != "" {
			errs = append(errs, field.Forbidden(rvm, "resourceVersionMatch is forbidden when continue is provided"))
		}
		if match != metav1.ResourceVersionMatchExact && match != metav1.ResourceVersionMatchNotOlderThan {
			errs = append(errs, field.NotSupported(rvm, match, []string{string(metav1.ResourceVersionMatchExact), string(metav1.ResourceVersionMatchNotOlderThan), ""}))
		}
		if match == metav1.ResourceVersionMatchExact && opts.ResourceVersion == "0" {
			errs = append(errs, field.Forbidden(rvm, "resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\""))
		}
	}
	if opts.SendInitialEvents != nil {
		errs = append(errs, field.Forbidden(field.NewPath("sendInitialEvents"), "sendInitialEvents is forbidden for list"))
	}
	return errs
}
