// Upstream: k8s.io/apiserver@v0.36.4/pkg/endpoints/handlers/get.go
// (ListResource: one handler for LIST and WATCH; handleWatch: timeout, then
// rest.Watcher.Watch, then serveWatchHandler), create.go, update.go, patch.go,
// delete.go, and pkg/endpoints/installer.go, which registers those handlers on
// the /api/v1/namespaces/{namespace}/configmaps routes.
//
// This is the smallest API server that real clients accept for one resource:
// kubectl, client-go informers and curl. Left out: authentication beyond one
// bearer token, authorization, admission, defaulting and validation of the
// object beyond its name, server-side apply, dry run, protobuf and CBOR
// responses, paging (limit/continue), and every other resource.

package watchserver

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"mime"
	"net/http"
	"strings"
	"time"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/kubernetes/scheme"
)

// Server is the HTTP API over a Store.
type Server struct {
	Store *Store
	// Token, if not empty, is the bearer token every request must carry.
	Token string
	// MinRequestTimeout is kube-apiserver's --min-request-timeout: a watch
	// without timeoutSeconds ends after a random time between one and two
	// times this, so long-lived watches spread over the apiservers of a
	// cluster. Default 30 minutes, as upstream.
	MinRequestTimeout time.Duration
	// ShuttingDown, when closed, ends every watch stream (nil: never).
	ShuttingDown <-chan struct{}
	// Address is host:port as clients reach us, for /api discovery.
	Address string
}

// Handler routes the API paths. Anything else is a 404 Status, as upstream.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /version", s.version)
	mux.HandleFunc("GET /api", s.apiVersions)
	mux.HandleFunc("GET /api/v1", s.apiResources)
	mux.HandleFunc("GET /apis", s.apiGroups)
	mux.HandleFunc("GET /openapi/v3", s.openAPIRoot)
	mux.HandleFunc("GET /openapi/v3/api/v1", s.openAPICoreV1)

	// LIST and WATCH share one handler, as ListResource does; the legacy
	// /watch/ paths force a watch whatever ?watch says.
	mux.HandleFunc("GET /api/v1/configmaps", s.listResource(false))
	mux.HandleFunc("GET /api/v1/namespaces/{namespace}/configmaps", s.listResource(false))
	mux.HandleFunc("GET /api/v1/watch/configmaps", s.listResource(true))
	mux.HandleFunc("GET /api/v1/watch/namespaces/{namespace}/configmaps", s.listResource(true))
	mux.HandleFunc("GET /api/v1/watch/namespaces/{namespace}/configmaps/{name}", s.listResource(true))

	mux.HandleFunc("POST /api/v1/namespaces/{namespace}/configmaps", s.create)
	mux.HandleFunc("GET /api/v1/namespaces/{namespace}/configmaps/{name}", s.get)
	mux.HandleFunc("PUT /api/v1/namespaces/{namespace}/configmaps/{name}", s.update)
	mux.HandleFunc("PATCH /api/v1/namespaces/{namespace}/configmaps/{name}", s.patch)
	mux.HandleFunc("DELETE /api/v1/namespaces/{namespace}/configmaps/{name}", s.delete)
	mux.HandleFunc("/", func(w http.ResponseWriter, req *http.Request) {
		writeStatus(w, req, &apierrors.StatusError{ErrStatus: metav1.Status{
			Status: metav1.StatusFailure, Code: http.StatusNotFound, Reason: metav1.StatusReasonNotFound,
			Message: "the server could not find the requested resource", Details: &metav1.StatusDetails{},
		}})
	})
	return s.authenticate(mux)
}

// authenticate checks the bearer token, the one credential we accept.
func (s *Server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if s.Token != "" && req.Header.Get("Authorization") != "Bearer "+s.Token {
			writeStatus(w, req, apierrors.NewUnauthorized("Unauthorized"))
			return
		}
		next.ServeHTTP(w, req)
	})
}

// listResource is ListResource: parse the options, then LIST or WATCH.
func (s *Server) listResource(forceWatch bool) http.HandlerFunc {
	return func(w http.ResponseWriter, req *http.Request) {
		if !acceptsJSON(req) {
			writeStatus(w, req, apierrors.NewGenericServerResponse(http.StatusNotAcceptable, "get", schema.GroupResource{}, "", "only application/json is served here", 0, false))
			return
		}
		opts, err := ParseListOptions(req.URL.Query(), forceWatch, req.PathValue("name"))
		if err == nil {
			_, _, err = tableRequest(req) // only to reject a bad includeObject
		}
		if err != nil {
			writeStatus(w, req, err)
			return
		}
		if opts.Watch {
			s.serveWatch(w, req, opts)
			return
		}
		s.list(w, req, opts)
	}
}

// matcher turns the selectors into the predicate the store filters with.
func matcher(opts *ListOptions) func(*corev1.ConfigMap) bool {
	return func(cm *corev1.ConfigMap) bool {
		return opts.LabelSelector.Matches(labels.Set(cm.Labels)) &&
			opts.FieldSelector.Matches(fields.Set{"metadata.name": cm.Name, "metadata.namespace": cm.Namespace})
	}
}

// serveWatch is handleWatch: choose the timeout, start a watcher, hand it to
// a WatchServer. From here on the request is one long response.
func (s *Server) serveWatch(w http.ResponseWriter, req *http.Request, opts *ListOptions) {
	// timeoutSeconds wins; without it the server picks a random timeout in
	// [MinRequestTimeout, 2*MinRequestTimeout).
	var timeout time.Duration
	if opts.TimeoutSeconds != nil {
		timeout = time.Duration(*opts.TimeoutSeconds) * time.Second
	}
	if timeout == 0 && s.MinRequestTimeout > 0 {
		timeout = time.Duration(float64(s.MinRequestTimeout) * (1 + mrand.Float64()))
	}

	var source EventSource
	if timeout < 0 {
		// Upstream builds a context that has already expired, and the
		// storage answers with an ERROR event carrying the context's error
		// inside a 200 stream. We reproduce that answer rather than reject
		// the request: it is what clients see from a real server.
		status := internalStatus("context deadline exceeded")
		source = finished(ErrorEvent(&status))
	} else {
		watcher, err := s.Store.Watch(WatchOptions{
			Namespace:           req.PathValue("namespace"),
			ResourceVersion:     opts.ResourceVersion,
			SendInitialEvents:   opts.SendInitialEvents,
			AllowWatchBookmarks: opts.AllowWatchBookmarks,
			Match:               matcher(opts),
			Deadline:            deadline(timeout),
		})
		if err != nil {
			// A malformed resourceVersion fails in the storage layer,
			// which upstream reports as a plain 500 with no reason.
			writeStatus(w, req, err)
			return
		}
		source = watcher
	}
	if asTable, policy, _ := tableRequest(req); asTable {
		source = newTableSource(source, policy) // per-client rendering: table.go
	}
	server := &WatchServer{
		Watching:     source,
		MediaType:    "application/json",
		Timeout:      timeout,
		ShuttingDown: s.ShuttingDown,
	}
	server.ServeHTTP(w, req)
}

func deadline(timeout time.Duration) time.Time {
	if timeout <= 0 {
		return time.Time{}
	}
	return time.Now().Add(timeout)
}

// finishedSource is an EventSource that yields the given events and ends.
type finishedSource chan *Event

func finished(events ...*Event) finishedSource {
	ch := make(chan *Event, len(events))
	for _, ev := range events {
		ch <- ev
	}
	close(ch)
	return ch
}

func (f finishedSource) ResultChan() <-chan *Event { return f }
func (f finishedSource) Stop()                     {}

// list answers a LIST: the current state and the RV it is consistent with.
// We keep no old snapshots, so every list is served from the latest state;
// what the resourceVersion parameter still decides is whether that is
// acceptable to the client.
func (s *Server) list(w http.ResponseWriter, req *http.Request, opts *ListOptions) {
	rv, err := parseRV(opts.ResourceVersion)
	if err != nil {
		writeStatus(w, req, apierrors.NewBadRequest("invalid resource version: "+err.Error()))
		return
	}
	items, current := s.Store.List(req.PathValue("namespace"), matcher(opts))
	switch {
	case rv > current:
		// Upstream waits up to 3 s for its cache to catch up, then gives
		// up with this Status. We are the source of truth: no wait helps.
		err := apierrors.NewTimeoutError(fmt.Sprintf("Too large resource version: %d, current: %d", rv, current), 1)
		err.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: metav1.CauseTypeResourceVersionTooLarge, Message: "Too large resource version"}}
		writeStatus(w, req, err)
		return
	case opts.ResourceVersionMatch == metav1.ResourceVersionMatchExact && rv != current:
		writeStatus(w, req, apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %d (%d)", rv, current)))
		return
	}
	if asTable, policy, _ := tableRequest(req); asTable {
		table := configMapTable(items, policy, true, time.Now())
		table.ResourceVersion = formatRV(current)
		writeJSON(w, req, http.StatusOK, table)
		return
	}
	list := &corev1.ConfigMapList{TypeMeta: metav1.TypeMeta{Kind: "ConfigMapList", APIVersion: "v1"}}
	list.ResourceVersion = formatRV(current)
	list.Items = make([]corev1.ConfigMap, 0, len(items))
	for _, item := range items {
		cm := *item
		cm.TypeMeta = metav1.TypeMeta{} // list items carry no kind, as upstream
		list.Items = append(list.Items, cm)
	}
	writeJSON(w, req, http.StatusOK, list)
}

func (s *Server) get(w http.ResponseWriter, req *http.Request) {
	obj, err := s.Store.Get(req.PathValue("namespace"), req.PathValue("name"))
	asTable, policy, terr := tableRequest(req)
	if err == nil {
		err = terr
	}
	if err != nil {
		writeStatus(w, req, err)
		return
	}
	if asTable {
		table := configMapTable([]*corev1.ConfigMap{obj}, policy, true, time.Now())
		table.ResourceVersion = obj.ResourceVersion
		writeJSON(w, req, http.StatusOK, table)
		return
	}
	writeJSON(w, req, http.StatusOK, obj)
}

// strictCodecs decode like scheme.Codecs but also report unknown and
// duplicate fields, for ?fieldValidation=Strict|Warn.
var strictCodecs = serializer.NewCodecFactory(scheme.Scheme, serializer.EnableStrict)

// readObject decodes a ConfigMap from a request body. kubectl sends built-in
// types as protobuf, curl as JSON (or YAML): the universal deserializer reads
// all three into a typed object. fieldValidation decides what an unknown
// field costs: Strict, a 400 (kubectl's default); Warn (the server's
// default), a Warning header; Ignore, nothing.
func readObject(w http.ResponseWriter, req *http.Request) (*corev1.ConfigMap, error) {
	body, err := io.ReadAll(io.LimitReader(req.Body, 3<<20))
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	directive := req.URL.Query().Get("fieldValidation")
	switch directive {
	case "":
		directive = "Warn" // upstream's default (handlers/rest.go, fieldValidation)
	case "Ignore", "Warn", "Strict":
	default:
		return nil, apierrors.NewBadRequest(fmt.Sprintf("fieldValidation must be one of \"Ignore\", \"Warn\", or \"Strict\", not %q", directive))
	}
	// A body without kind/apiVersion is taken to be what the URL says.
	defaultGVK := &schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	decoded, gvk, err := strictCodecs.UniversalDeserializer().Decode(body, defaultGVK, nil)
	if strictErr, isStrict := runtime.AsStrictDecodingError(err); isStrict && decoded != nil && directive != "Strict" {
		if directive == "Warn" {
			for _, e := range strictErr.Errors() {
				w.Header().Add("Warning", fmt.Sprintf("299 - %q", e.Error()))
			}
		}
		err = nil
	}
	if err != nil {
		// handlers/rest.go, transformDecodeError: the same words as upstream.
		if gvk != nil && gvk.Kind != "" {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a ConfigMap: %v", gvk.Kind, gvk.Version, err))
		}
		return nil, apierrors.NewBadRequest(err.Error())
	}
	obj, ok := decoded.(*corev1.ConfigMap)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("expected a v1 ConfigMap, got %s", gvk))
	}
	if obj.Kind != "" && (obj.Kind != "ConfigMap" || obj.APIVersion != "v1") {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the API version in the data (%s) does not match the expected API version (v1)", obj.APIVersion))
	}
	return obj, nil
}

// checkObject is the little validation we do: names and namespace.
func checkObject(obj *corev1.ConfigMap, ns string) error {
	if obj.Namespace != "" && obj.Namespace != ns {
		return apierrors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request")
	}
	obj.Namespace = ns
	var errs field.ErrorList
	if obj.Name == "" {
		errs = append(errs, field.Required(field.NewPath("metadata", "name"), "name or generateName is required"))
	} else {
		for _, msg := range validation.IsDNS1123Subdomain(obj.Name) {
			errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), obj.Name, msg))
		}
	}
	if len(errs) > 0 {
		return apierrors.NewInvalid(schema.GroupKind{Kind: "ConfigMap"}, obj.Name, errs)
	}
	obj.TypeMeta = configMapType
	obj.ManagedFields = nil // we do not track field managers
	return nil
}

func (s *Server) create(w http.ResponseWriter, req *http.Request) {
	obj, err := readObject(w, req)
	if err == nil && obj.Name == "" && obj.GenerateName != "" {
		obj.Name = obj.GenerateName + randomSuffix()
	}
	if err == nil {
		err = checkObject(obj, req.PathValue("namespace"))
	}
	if err != nil {
		writeStatus(w, req, err)
		return
	}
	obj.UID = newUID()
	obj.CreationTimestamp = metav1.NewTime(time.Now().Truncate(time.Second))
	obj.ResourceVersion = ""
	created, err := s.Store.Create(obj)
	if err != nil {
		writeStatus(w, req, err)
		return
	}
	writeJSON(w, req, http.StatusCreated, created)
}

func (s *Server) update(w http.ResponseWriter, req *http.Request) {
	obj, err := readObject(w, req)
	if err == nil && obj.Name != req.PathValue("name") {
		err = apierrors.NewBadRequest("the name of the object (" + obj.Name + ") does not match the name on the URL (" + req.PathValue("name") + ")")
	}
	if err == nil {
		err = checkObject(obj, req.PathValue("namespace"))
	}
	if err == nil {
		obj, err = s.Store.Update(obj)
	}
	if err != nil {
		writeStatus(w, req, err)
		return
	}
	writeJSON(w, req, http.StatusOK, obj)
}

// patch applies a JSON merge patch (or a JSON patch) to the current object
// and stores the result as an update. kubectl's default strategic merge
// patch is accepted as a merge patch: for a ConfigMap (maps, no lists with
// merge keys) the two give the same result.
func (s *Server) patch(w http.ResponseWriter, req *http.Request) {
	ns, name := req.PathValue("namespace"), req.PathValue("name")
	mediaType, _, _ := mime.ParseMediaType(req.Header.Get("Content-Type"))
	switch mediaType {
	case "application/merge-patch+json", "application/strategic-merge-patch+json", "application/json-patch+json":
	default:
		writeStatus(w, req, apierrors.NewGenericServerResponse(http.StatusUnsupportedMediaType, "patch", configMapsGR, name,
			fmt.Sprintf("the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json (not %q)", mediaType), 0, false))
		return
	}
	body, err := io.ReadAll(io.LimitReader(req.Body, 3<<20))
	if err != nil {
		writeStatus(w, req, apierrors.NewBadRequest(err.Error()))
		return
	}
	// The patch is applied to the current object and stored only if nothing
	// changed in between (Update's resourceVersion check). If something did,
	// apply it again to the new current object, as upstream's patcher does;
	// a patch that sets metadata.resourceVersion itself asks for exactly
	// that check, so its Conflict is final.
	for attempt := 0; ; attempt++ {
		obj, err := s.applyPatch(ns, name, mediaType, body)
		if err == nil {
			writeJSON(w, req, http.StatusOK, obj)
			return
		}
		if !apierrors.IsConflict(err) || attempt == 4 || bytes.Contains(body, []byte(`"resourceVersion"`)) {
			writeStatus(w, req, err)
			return
		}
	}
}

// applyPatch is one attempt: read, patch, validate, store.
func (s *Server) applyPatch(ns, name, mediaType string, body []byte) (*corev1.ConfigMap, error) {
	current, err := s.Store.Get(ns, name)
	if err != nil {
		return nil, err
	}
	original := encodeObject(current)
	var patched []byte
	if mediaType == "application/json-patch+json" {
		var p jsonpatch.Patch
		if p, err = jsonpatch.DecodePatch(body); err == nil {
			patched, err = p.Apply(original)
		}
	} else {
		patched, err = jsonpatch.MergePatch(original, body)
	}
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	obj := &corev1.ConfigMap{}
	if err := json.Unmarshal(patched, obj); err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	if obj.Name != name {
		return nil, apierrors.NewBadRequest("metadata.name cannot be changed by a patch")
	}
	if err := checkObject(obj, ns); err != nil {
		return nil, err
	}
	return s.Store.Update(obj)
}

func (s *Server) delete(w http.ResponseWriter, req *http.Request) {
	gone, err := s.Store.Delete(req.PathValue("namespace"), req.PathValue("name"))
	if err != nil {
		writeStatus(w, req, err)
		return
	}
	writeJSON(w, req, http.StatusOK, &metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusSuccess,
		Details:  &metav1.StatusDetails{Name: gone.Name, Kind: "configmaps", UID: gone.UID},
	})
}

// acceptsJSON is content negotiation cut down to its only outcome: we serve
// JSON if the client takes it (or takes anything).
func acceptsJSON(req *http.Request) bool {
	accept := req.Header.Get("Accept")
	if accept == "" {
		return true
	}
	for _, part := range strings.Split(accept, ",") {
		// A Table (kubectl get) is application/json too: see table.go.
		mt, _, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		if mt == "application/json" || mt == "*/*" || mt == "application/*" {
			return true
		}
	}
	return false
}

func internalStatus(msg string) metav1.Status {
	return metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusFailure, Code: http.StatusInternalServerError,
		Reason: metav1.StatusReasonInternalError, Message: msg,
	}
}

func internalError(msg string) error {
	return &apierrors.StatusError{ErrStatus: internalStatus(msg)}
}

// writeStatus answers an error as a Status, as responsewriters.ErrorNegotiated
// does: a StatusError keeps its code and reason; any other error becomes a
// 500 with only a message (no reason), which is what upstream sends too.
func writeStatus(w http.ResponseWriter, req *http.Request, err error) {
	var status metav1.Status
	if se, ok := err.(apierrors.APIStatus); ok {
		status = se.Status()
	} else {
		status = metav1.Status{Status: metav1.StatusFailure, Code: http.StatusInternalServerError, Message: err.Error()}
	}
	status.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
	writeJSON(w, req, int(status.Code), &status)
}

// writeJSON writes one API object. Like the real apiserver, it indents the
// JSON for curl and wget users, so a learner can read it.
func writeJSON(w http.ResponseWriter, req *http.Request, code int, obj any) {
	var body []byte
	ua := req.UserAgent()
	if strings.HasPrefix(ua, "curl/") || strings.HasPrefix(ua, "Wget/") || req.URL.Query().Has("pretty") {
		body, _ = json.MarshalIndent(obj, "", "  ")
	} else {
		body, _ = json.Marshal(obj)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-cache, private")
	w.WriteHeader(code)
	w.Write(append(body, '\n'))
}

func newUID() types.UID {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40 // version 4
	b[8] = b[8]&0x3f | 0x80 // RFC 4122 variant
	return types.UID(fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:]))
}

func randomSuffix() string {
	const chars = "bcdfghjklmnpqrstvwxz2456789"
	var b [5]byte
	rand.Read(b[:])
	for i := range b {
		b[i] = chars[int(b[i])%len(chars)]
	}
	return string(b[:])
}
