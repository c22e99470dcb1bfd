// Package apiserver is the scaffolding around lab 03's lesson: the smallest
// Kubernetes API server that real clients (kubectl, client-go informers,
// curl) accept, for a few core/v1 resources, each served from a
// storage.Interface (k8s.io/apiserver@v0.37.0/pkg/storage/interfaces.go).
// The watch itself is package watchserver's; everything here is what a
// watch needs around it: TLS, a token, routing, discovery, OpenAPI, Tables,
// and get/list/create/update/patch/delete.
//
// Upstream: k8s.io/apiserver@v0.37.0/pkg/endpoints/installer.go (which verbs
// a resource gets, and the routes for them), pkg/endpoints/handlers/get.go
// (ListResource: one handler for LIST and WATCH), create.go, update.go,
// patch.go, delete.go, and pkg/registry/generic/registry/store.go (the
// registry between the handlers and storage.Interface).
//
// Left out: authentication beyond one bearer token, authorization,
// admission, defaulting and validation of objects beyond their names,
// server-side apply, dry run, protobuf and CBOR responses, status
// subresources, deletecollection, graceful deletion (upstream a Pod's
// delete first writes its deletionTimestamp, and deletes it in the same
// request only when the grace period is 0: `CheckGracefulDelete`,
// k8s.io/kubernetes@v1.37.0/pkg/registry/core/pod/strategy.go:175-206;
// `updateForGracefulDeletionAndFinalizers`,
// k8s.io/apiserver@v0.37.0/pkg/registry/generic/registry/store.go:1116-1192; here
// every delete is one write), namespaces as objects (any namespace in a
// path exists). A LIST's limit and continue go to the storage, as upstream's
// `ListPredicate` passes them on
// (k8s.io/apiserver@v0.37.0/pkg/registry/generic/registry/store.go:450-456);
// whether a list pages is the storage's business.
package apiserver

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"reflect"
	"strings"
	"time"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/storage"
	storeerr "k8s.io/apiserver/pkg/storage/errors"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/listwatch-labs/listwatch-labs/labs/03-watchserver/watchserver"
)

// encoder writes every object we answer with, and every watch event: JSON,
// with apiVersion and kind from client-go's scheme when an object lacks them.
var encoder = watchserver.JSONEncoder{Typer: scheme.Scheme}

// server routes the API paths of every resource.
type server struct {
	token     string
	address   string // host:port as clients reach us, for /api discovery
	resources []*resourceHandler
	extra     map[string]http.Handler // Config.Handlers
}

// resourceHandler serves one resource from its storage, as
// genericregistry.Store and the handlers installed for it do together.
type resourceHandler struct {
	*Resource
	storage storage.Interface
	watch   *watchserver.WatchScope
}

func newResourceHandler(r *Resource, s storage.Interface, minRequestTimeout time.Duration, shuttingDown <-chan struct{}, noWatchListCompression bool) *resourceHandler {
	return &resourceHandler{Resource: r, storage: s, watch: &watchserver.WatchScope{
		Storage:           s,
		KeyRoot:           r.KeyRoot,
		Key:               r.Key,
		GetAttrs:          r.GetAttrsFunc,
		IndexFields:       r.IndexFields,
		Encoder:           encoder,
		MinRequestTimeout: minRequestTimeout,
		ShuttingDown:      shuttingDown,

		DisableWatchListCompression: noWatchListCompression,
	}}
}

// handler routes the API paths. Anything else is a 404 Status, as upstream.
func (s *server) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /version", s.version)
	mux.HandleFunc("GET /api", s.apiVersions)
	mux.HandleFunc("GET /api/v1", s.apiResources)
	mux.HandleFunc("GET /apis", s.apiGroups)
	mux.HandleFunc("GET /openapi/v3", s.openAPIRoot)
	mux.HandleFunc("GET /openapi/v3/api/v1", s.openAPICoreV1)
	for _, r := range s.resources {
		plural := r.GroupResource.Resource
		all, one := "/api/v1/namespaces/{namespace}/"+plural, "/api/v1/namespaces/{namespace}/"+plural+"/{name}"
		// LIST and WATCH share one handler, as ListResource does; the
		// legacy /watch/ paths force a watch whatever ?watch says.
		mux.HandleFunc("GET /api/v1/"+plural, r.listResource(false))
		mux.HandleFunc("GET "+all, r.listResource(false))
		mux.HandleFunc("GET /api/v1/watch/"+plural, r.listResource(true))
		mux.HandleFunc("GET /api/v1/watch/namespaces/{namespace}/"+plural, r.listResource(true))
		mux.HandleFunc("GET /api/v1/watch/namespaces/{namespace}/"+plural+"/{name}", r.listResource(true))
		mux.HandleFunc("POST "+all, r.create)
		mux.HandleFunc("GET "+one, r.get)
		mux.HandleFunc("PUT "+one, r.update)
		mux.HandleFunc("PATCH "+one, r.patch)
		mux.HandleFunc("DELETE "+one, r.delete)
	}
	for pattern, h := range s.extra {
		mux.Handle(pattern, h)
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, req *http.Request) {
		writeStatus(w, req, &apierrors.StatusError{ErrStatus: metav1.Status{
			Status: metav1.StatusFailure, Code: http.StatusNotFound, Reason: metav1.StatusReasonNotFound,
			Message: "the server could not find the requested resource", Details: &metav1.StatusDetails{},
		}})
	})
	return s.authenticate(mux)
}

// authenticate checks the bearer token, the one credential we accept.
func (s *server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if s.token != "" && req.Header.Get("Authorization") != "Bearer "+s.token {
			writeStatus(w, req, apierrors.NewUnauthorized("Unauthorized"))
			return
		}
		next.ServeHTTP(w, req)
	})
}

// listResource is ListResource: parse the options, then LIST or WATCH.
func (r *resourceHandler) listResource(forceWatch bool) http.HandlerFunc {
	return func(w http.ResponseWriter, req *http.Request) {
		if !acceptsJSON(req) {
			writeStatus(w, req, apierrors.NewGenericServerResponse(http.StatusNotAcceptable, "get", schema.GroupResource{}, "", "only application/json is served here", 0, false))
			return
		}
		opts, err := watchserver.ParseListOptions(req.URL.Query(), forceWatch, req.PathValue("name"), r.ConvertFieldLabel)
		if err == nil {
			_, _, err = tableRequest(req) // only to reject a bad includeObject
		}
		if err != nil {
			writeStatus(w, req, err)
			return
		}
		if opts.Watch {
			var transform func(w watch.Interface) watch.Interface
			if asTable, policy, _ := tableRequest(req); asTable {
				transform = func(w watch.Interface) watch.Interface { return newTableWatcher(r.Resource, w, policy) }
			}
			if err := watchserver.ServeWatch(w, req, r.watch, req.PathValue("namespace"), opts, transform); err != nil {
				writeStatus(w, req, err)
			}
			return
		}
		r.list(w, req, opts)
	}
}

// list answers a LIST from the storage: genericregistry.Store.ListPredicate.
// limit and continue travel in the predicate, as there: the storage decides
// the page and writes continue and remainingItemCount into the list's
// metadata (lab 04's etcd3 store and Cacher page; memstorage does not).
func (r *resourceHandler) list(w http.ResponseWriter, req *http.Request, opts *watchserver.ListOptions) {
	listObj := r.NewListFunc()
	err := r.storage.GetList(req.Context(), r.KeyRoot(req.PathValue("namespace")), storage.ListOptions{
		ResourceVersion:      opts.ResourceVersion,
		ResourceVersionMatch: opts.ResourceVersionMatch,
		Recursive:            true,
		Predicate: storage.SelectionPredicate{
			Label: opts.LabelSelector, Field: opts.FieldSelector, GetAttrs: r.GetAttrsFunc, IndexFields: r.IndexFields,
			Limit: opts.Limit, Continue: opts.Continue,
		},
	}, listObj)
	if err != nil {
		writeStatus(w, req, storeerr.InterpretListError(err, r.GroupResource))
		return
	}
	listMeta, _ := meta.ListAccessor(listObj)
	if asTable, policy, _ := tableRequest(req); asTable {
		items, _ := meta.ExtractList(listObj)
		table := r.table(items, policy, true, time.Now())
		// A page of a Table is a page of the list: kubectl get follows
		// its continue (--chunk-size, 500 by default).
		table.ResourceVersion = listMeta.GetResourceVersion()
		table.Continue = listMeta.GetContinue()
		table.RemainingItemCount = listMeta.GetRemainingItemCount()
		writeObject(w, req, http.StatusOK, table)
		return
	}
	// List items carry no kind of their own, as upstream's.
	meta.EachListItem(listObj, func(item runtime.Object) error {
		item.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
		return nil
	})
	listObj.GetObjectKind().SetGroupVersionKind(corev1GVK(r.Kind + "List"))
	writeObject(w, req, http.StatusOK, listObj)
}

func (r *resourceHandler) get(w http.ResponseWriter, req *http.Request) {
	asTable, policy, err := tableRequest(req)
	if err != nil {
		writeStatus(w, req, err)
		return
	}
	name := req.PathValue("name")
	obj := r.NewFunc()
	err = r.storage.Get(req.Context(), r.Key(req.PathValue("namespace"), name),
		storage.GetOptions{ResourceVersion: req.URL.Query().Get("resourceVersion")}, obj)
	if err != nil {
		writeStatus(w, req, storeerr.InterpretGetError(err, r.GroupResource, name))
		return
	}
	if asTable {
		table := r.table([]runtime.Object{obj}, policy, true, time.Now())
		m, _ := meta.Accessor(obj)
		table.ResourceVersion = m.GetResourceVersion()
		writeObject(w, req, http.StatusOK, table)
		return
	}
	writeObject(w, req, http.StatusOK, obj)
}

// strictCodecs decode like scheme.Codecs but also report unknown and
// duplicate fields, for ?fieldValidation=Strict|Warn.
var strictCodecs = serializer.NewCodecFactory(scheme.Scheme, serializer.EnableStrict)

func corev1GVK(kind string) schema.GroupVersionKind {
	return schema.GroupVersionKind{Version: "v1", Kind: kind}
}

// readObject decodes an object of the resource's kind from a request body.
// kubectl sends built-in types as protobuf, curl as JSON (or YAML): the
// universal deserializer reads all three into a typed object.
// fieldValidation decides what an unknown field costs: Strict, a 400
// (kubectl's default); Warn (the server's default), a Warning header;
// Ignore, nothing.
func (r *resourceHandler) readObject(w http.ResponseWriter, req *http.Request) (runtime.Object, error) {
	body, err := io.ReadAll(io.LimitReader(req.Body, 3<<20))
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	directive := req.URL.Query().Get("fieldValidation")
	switch directive {
	case "":
		directive = "Warn" // upstream's default (`fieldValidation`, k8s.io/apiserver@v0.37.0/pkg/endpoints/handlers/rest.go:409-414)
	case "Ignore", "Warn", "Strict":
	default:
		return nil, apierrors.NewBadRequest(fmt.Sprintf("fieldValidation must be one of \"Ignore\", \"Warn\", or \"Strict\", not %q", directive))
	}
	// A body without kind/apiVersion is taken to be what the URL says.
	defaultGVK := corev1GVK(r.Kind)
	decoded, gvk, err := strictCodecs.UniversalDeserializer().Decode(body, &defaultGVK, nil)
	if strictErr, isStrict := runtime.AsStrictDecodingError(err); isStrict && decoded != nil && directive != "Strict" {
		if directive == "Warn" {
			for _, e := range strictErr.Errors() {
				w.Header().Add("Warning", fmt.Sprintf("299 - %q", e.Error()))
			}
		}
		err = nil
	}
	if err != nil {
		// `transformDecodeError`, k8s.io/apiserver@v0.37.0/pkg/endpoints/handlers/rest.go:245: the same words as upstream.
		if gvk != nil && gvk.Kind != "" {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a %s: %v", gvk.Kind, gvk.Version, r.Kind, err))
		}
		return nil, apierrors.NewBadRequest(err.Error())
	}
	if reflect.TypeOf(decoded) != reflect.TypeOf(r.NewFunc()) {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("expected a v1 %s, got %s", r.Kind, gvk))
	}
	if got := decoded.GetObjectKind().GroupVersionKind(); got.Kind != "" && got != defaultGVK {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the API version in the data (%s) does not match the expected API version (v1)", got.GroupVersion()))
	}
	return decoded, nil
}

// checkObject is the little validation we do: names and namespace.
func (r *resourceHandler) checkObject(obj runtime.Object, ns string) (metav1.Object, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	if m.GetNamespace() != "" && m.GetNamespace() != ns {
		return nil, apierrors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request")
	}
	m.SetNamespace(ns)
	var errs field.ErrorList
	if m.GetName() == "" {
		errs = append(errs, field.Required(field.NewPath("metadata", "name"), "name or generateName is required"))
	} else {
		for _, msg := range validation.IsDNS1123Subdomain(m.GetName()) {
			errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), m.GetName(), msg))
		}
	}
	if len(errs) > 0 {
		return nil, apierrors.NewInvalid(schema.GroupKind{Kind: r.Kind}, m.GetName(), errs)
	}
	obj.GetObjectKind().SetGroupVersionKind(corev1GVK(r.Kind))
	m.SetManagedFields(nil) // we do not track field managers
	return m, nil
}

func (r *resourceHandler) create(w http.ResponseWriter, req *http.Request) {
	obj, err := r.readObject(w, req)
	if err != nil {
		writeStatus(w, req, err)
		return
	}
	if m, _ := meta.Accessor(obj); m != nil && m.GetName() == "" && m.GetGenerateName() != "" {
		m.SetName(m.GetGenerateName() + randomSuffix())
	}
	m, err := r.checkObject(obj, req.PathValue("namespace"))
	if err != nil {
		writeStatus(w, req, err)
		return
	}
	m.SetUID(newUID())
	m.SetCreationTimestamp(metav1.NewTime(time.Now().Truncate(time.Second)))
	m.SetResourceVersion("")
	out := r.NewFunc()
	if err := r.storage.Create(req.Context(), r.Key(m.GetNamespace(), m.GetName()), obj, out, 0); err != nil {
		writeStatus(w, req, storeerr.InterpretCreateError(err, r.GroupResource, m.GetName()))
		return
	}
	writeObject(w, req, http.StatusCreated, out)
}

// optimisticLockErrorMsg is genericregistry's OptimisticLockErrorMsg.
const optimisticLockErrorMsg = "the object has been modified; please apply your changes to the latest version and try again"

// updateFunc is the tryUpdate that genericregistry.Store.Update hands to
// GuaranteedUpdate: compute the new object from the current one. An object
// that names a resourceVersion must name the current one (optimistic
// concurrency); fields the client may not change are kept.
func (r *resourceHandler) updateFunc(name string, newObject func(current runtime.Object) (runtime.Object, error)) storage.UpdateFunc {
	return func(current runtime.Object, _ storage.ResponseMeta) (runtime.Object, *uint64, error) {
		obj, err := newObject(current)
		if err != nil {
			return nil, nil, err
		}
		m, _ := meta.Accessor(obj)
		cur, _ := meta.Accessor(current)
		if rv := m.GetResourceVersion(); rv != "" && rv != cur.GetResourceVersion() {
			return nil, nil, apierrors.NewConflict(r.GroupResource, name, errors.New(optimisticLockErrorMsg))
		}
		m.SetUID(cur.GetUID())
		m.SetCreationTimestamp(cur.GetCreationTimestamp())
		m.SetResourceVersion(cur.GetResourceVersion())
		return obj, nil, nil
	}
}

func (r *resourceHandler) update(w http.ResponseWriter, req *http.Request) {
	ns, name := req.PathValue("namespace"), req.PathValue("name")
	obj, err := r.readObject(w, req)
	if err == nil {
		if m, _ := meta.Accessor(obj); m.GetName() != name {
			err = apierrors.NewBadRequest("the name of the object (" + m.GetName() + ") does not match the name on the URL (" + name + ")")
		}
	}
	if err == nil {
		_, err = r.checkObject(obj, ns)
	}
	if err != nil {
		writeStatus(w, req, err)
		return
	}
	out := r.NewFunc()
	err = r.storage.GuaranteedUpdate(req.Context(), r.Key(ns, name), out, false, nil,
		r.updateFunc(name, func(runtime.Object) (runtime.Object, error) { return obj.DeepCopyObject(), nil }), nil)
	if err != nil {
		writeStatus(w, req, storeerr.InterpretUpdateError(err, r.GroupResource, name))
		return
	}
	writeObject(w, req, http.StatusOK, out)
}

// patch applies a JSON patch, a JSON merge patch or a strategic merge patch
// (kubectl's default) to the current object, inside GuaranteedUpdate's
// tryUpdate, as upstream's patcher does: if another write lands between
// reading and storing, the storage runs tryUpdate again on the new current
// object, so no concurrent patch is lost. A patch that sets
// metadata.resourceVersion asks for exactly that check; its Conflict is final.
func (r *resourceHandler) patch(w http.ResponseWriter, req *http.Request) {
	ns, name := req.PathValue("namespace"), req.PathValue("name")
	mediaType, _, _ := mime.ParseMediaType(req.Header.Get("Content-Type"))
	switch types.PatchType(mediaType) {
	case types.MergePatchType, types.StrategicMergePatchType, types.JSONPatchType:
	default:
		writeStatus(w, req, apierrors.NewGenericServerResponse(http.StatusUnsupportedMediaType, "patch", r.GroupResource, name,
			fmt.Sprintf("the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json (not %q)", mediaType), 0, false))
		return
	}
	body, err := io.ReadAll(io.LimitReader(req.Body, 3<<20))
	if err != nil {
		writeStatus(w, req, apierrors.NewBadRequest(err.Error()))
		return
	}
	out := r.NewFunc()
	err = r.storage.GuaranteedUpdate(req.Context(), r.Key(ns, name), out, false, nil,
		r.updateFunc(name, func(current runtime.Object) (runtime.Object, error) {
			return r.applyPatch(current, types.PatchType(mediaType), body, ns, name)
		}), nil)
	if err != nil {
		writeStatus(w, req, storeerr.InterpretUpdateError(err, r.GroupResource, name))
		return
	}
	writeObject(w, req, http.StatusOK, out)
}

func (r *resourceHandler) applyPatch(current runtime.Object, patchType types.PatchType, body []byte, ns, name string) (runtime.Object, error) {
	original, err := json.Marshal(current)
	if err != nil {
		return nil, err
	}
	var patched []byte
	switch patchType {
	case types.JSONPatchType:
		var p jsonpatch.Patch
		if p, err = jsonpatch.DecodePatch(body); err == nil {
			patched, err = p.Apply(original)
		}
	case types.StrategicMergePatchType:
		patched, err = strategicpatch.StrategicMergePatch(original, body, r.NewFunc())
	default:
		patched, err = jsonpatch.MergePatch(original, body)
	}
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	obj := r.NewFunc()
	if err := json.Unmarshal(patched, obj); err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	if m, _ := meta.Accessor(obj); m.GetName() != name {
		return nil, apierrors.NewBadRequest("metadata.name cannot be changed by a patch")
	}
	if _, err := r.checkObject(obj, ns); err != nil {
		return nil, err
	}
	return obj, nil
}

// delete removes one object. A body may carry DeleteOptions whose
// preconditions (uid, resourceVersion) the storage checks. Like upstream,
// a ConfigMap's deletion answers a Status, a Pod's the deleted object
// (the pod registry sets ReturnDeletedObject).
func (r *resourceHandler) delete(w http.ResponseWriter, req *http.Request) {
	ns, name := req.PathValue("namespace"), req.PathValue("name")
	// client-go sends DeleteOptions as protobuf, curl as JSON: the
	// universal deserializer reads both.
	var options metav1.DeleteOptions
	if body, _ := io.ReadAll(io.LimitReader(req.Body, 1<<20)); len(bytes.TrimSpace(body)) > 0 {
		defaultGVK := corev1GVK("DeleteOptions")
		if _, _, err := scheme.Codecs.UniversalDeserializer().Decode(body, &defaultGVK, &options); err != nil {
			writeStatus(w, req, apierrors.NewBadRequest(err.Error()))
			return
		}
	}
	var preconditions *storage.Preconditions
	if p := options.Preconditions; p != nil {
		preconditions = &storage.Preconditions{UID: p.UID, ResourceVersion: p.ResourceVersion}
	}
	out := r.NewFunc()
	err := r.storage.Delete(req.Context(), r.Key(ns, name), out, preconditions, storage.ValidateAllObjectFunc, nil, storage.DeleteOptions{})
	if err != nil {
		writeStatus(w, req, storeerr.InterpretDeleteError(err, r.GroupResource, name))
		return
	}
	if r.ReturnDeletedObject {
		writeObject(w, req, http.StatusOK, out)
		return
	}
	m, _ := meta.Accessor(out)
	writeObject(w, req, http.StatusOK, &metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusSuccess,
		Details:  &metav1.StatusDetails{Name: name, Kind: r.GroupResource.Resource, UID: m.GetUID()},
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
	writeObject(w, req, int(status.Code), &status)
}

// writeObject writes one API object. Like the real apiserver, it indents the
// JSON for curl and wget users, so a learner can read it.
func writeObject(w http.ResponseWriter, req *http.Request, code int, obj runtime.Object) {
	var body bytes.Buffer
	if err := encoder.Encode(obj, &body); err != nil {
		code = http.StatusInternalServerError
		body.Reset()
		fmt.Fprintf(&body, `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":%q,"code":500}`+"\n", err.Error())
	}
	writeJSON(w, req, code, body.Bytes())
}

// writeAny writes a document that is not an API object (OpenAPI, /version).
func writeAny(w http.ResponseWriter, req *http.Request, doc any) {
	body, _ := json.Marshal(doc)
	writeJSON(w, req, http.StatusOK, append(body, '\n'))
}

// writeJSON writes JSON bytes, indented for curl and wget.
func writeJSON(w http.ResponseWriter, req *http.Request, code int, body []byte) {
	ua := req.UserAgent()
	if strings.HasPrefix(ua, "curl/") || strings.HasPrefix(ua, "Wget/") || req.URL.Query().Has("pretty") {
		var indented bytes.Buffer
		if json.Indent(&indented, body, "", "  ") == nil {
			body = indented.Bytes()
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-cache, private")
	w.WriteHeader(code)
	w.Write(body)
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
