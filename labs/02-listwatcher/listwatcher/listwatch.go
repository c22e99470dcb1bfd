// Upstream: k8s.io/client-go@v0.37.0/tools/cache/listwatch.go (ListWatch,
// NewFilteredListWatchFromClient) and rest/request.go (Request.Do,
// Request.Watch, Request.URL), with the query parameters of
// k8s.io/apimachinery@v0.37.0/pkg/apis/meta/v1/types.go (ListOptions).
//
// Left out: protobuf and CBOR (we always ask for JSON), client-side rate
// limiting and request retries (the ListAndWatch loop in loop.go is where we
// retry, so a learner sees every attempt), warning headers, metrics, and
// resources outside core/v1 (the kind is looked up in a scheme that only
// knows core/v1). Upstream builds URLs with a RESTClient that knows every
// group, and decodes the body with the serializer negotiated for its
// Content-Type (rest/request.go, Request.newStreamWatcher), which reads the
// kind from the body; we write the path by hand because the path is the
// lesson, and decode into the one kind we expect.

package listwatcher

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
)

// ListWatch lists and watches one core/v1 resource in one namespace (or in
// all namespaces when Namespace is ""), over plain net/http.
//
// It satisfies cache.ListerWatcherWithContext (ListWithContext,
// WatchWithContext) and the older cache.ListerWatcher (List, Watch), so a
// client-go Reflector can use it unchanged. Every method is safe for
// concurrent use: a ListWatch holds no state between requests.
type ListWatch struct {
	// Client does the HTTP: TLS and the bearer token come from the rest.Config
	// (rest.HTTPClientFor); the requests and their decoding are ours.
	Client *http.Client
	// Server is the apiserver's base URL, e.g. https://127.0.0.1:6443.
	Server string
	// Resource is the plural, lower-case resource name: "configmaps", "pods".
	Resource string
	// Namespace is the namespace to list and watch; "" means all namespaces.
	Namespace string
	// LabelSelector and FieldSelector are applied to every List and Watch
	// whose options do not set their own (upstream's
	// NewFilteredListWatchFromClient runs its optionsModifier on every
	// call, and the usual modifier overwrites the selectors; ours fills in
	// only missing ones, our choice): a Reflector passes options without
	// selectors, and the watch must filter exactly like the list or the two
	// would disagree about what exists.
	LabelSelector string
	FieldSelector string
	// Kind is the kind of one object ("ConfigMap" in group "", version "v1").
	// The list kind is Kind+"List".
	Kind schema.GroupVersionKind
}

// coreScheme maps core/v1 kinds to Go types (ConfigMap -> corev1.ConfigMap).
// It is built on first use, not in init(), and never changes after that.
var coreScheme = sync.OnceValues(func() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	if err := corev1.AddToScheme(s); err != nil {
		return nil, err
	}
	return s, nil
})

// New returns a ListWatch for a core/v1 resource, using cfg (a kubeconfig's
// rest.Config) for the server address and the transport.
func New(cfg *rest.Config, resource, namespace string) (*ListWatch, error) {
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("transport for %s: %w", cfg.Host, err)
	}
	server := cfg.Host
	if !strings.Contains(server, "://") {
		server = "https://" + server
	}
	kind, err := KindFor(resource)
	if err != nil {
		return nil, err
	}
	return &ListWatch{
		Client:    client,
		Server:    strings.TrimSuffix(server, "/"),
		Resource:  resource,
		Namespace: namespace,
		Kind:      kind,
	}, nil
}

// KindFor finds the core/v1 kind whose plural resource name is resource
// ("configmaps" -> ConfigMap). A typed client-go client needs no such map (it
// decodes whatever kind the body names, through its scheme); nor does a
// dynamic client, which is given the resource and decodes whatever kind the
// body names into `unstructured.UnstructuredList`
// (k8s.io/client-go@v0.37.0/dynamic/simple.go:249-262); going from a kind to
// a resource is a RESTMapper's job (kubectl's). A scheme that knows core/v1
// is enough for this lab.
func KindFor(resource string) (schema.GroupVersionKind, error) {
	s, err := coreScheme()
	if err != nil {
		return schema.GroupVersionKind{}, err
	}
	for kind := range s.KnownTypes(corev1.SchemeGroupVersion) {
		gvk := corev1.SchemeGroupVersion.WithKind(kind)
		if strings.HasSuffix(kind, "List") || strings.HasSuffix(kind, "Options") {
			continue
		}
		plural, _ := meta.UnsafeGuessKindToResource(gvk)
		if plural.Resource == resource {
			return gvk, nil
		}
	}
	return schema.GroupVersionKind{}, fmt.Errorf("%q is not a core/v1 resource (try configmaps, pods, secrets, services, events ...)", resource)
}

// newObject returns an empty object of kind (ConfigMap, ConfigMapList ...).
func newObject(kind schema.GroupVersionKind) (runtime.Object, error) {
	s, err := coreScheme()
	if err != nil {
		return nil, err
	}
	return s.New(kind)
}

// collectionURL is the URL of the resource's collection with the query of
// opts: /api/v1/namespaces/NS/RESOURCE?labelSelector=...
func (lw *ListWatch) collectionURL(opts metav1.ListOptions) string {
	path := "/api/v1/" + lw.Resource
	if lw.Namespace != "" {
		path = "/api/v1/namespaces/" + url.PathEscape(lw.Namespace) + "/" + lw.Resource
	}
	if q := lw.query(opts).Encode(); q != "" {
		return lw.Server + path + "?" + q
	}
	return lw.Server + path
}

// query writes ListOptions as the query parameters the apiserver reads. This
// is what upstream's runtime.ParameterCodec does by reflection over the
// struct tags; by hand, every parameter of the lesson is visible.
func (lw *ListWatch) query(opts metav1.ListOptions) url.Values {
	q := url.Values{}
	label, field := opts.LabelSelector, opts.FieldSelector
	if label == "" {
		label = lw.LabelSelector
	}
	if field == "" {
		field = lw.FieldSelector
	}
	if label != "" {
		q.Set("labelSelector", label)
	}
	if field != "" {
		q.Set("fieldSelector", field)
	}
	if opts.Watch {
		q.Set("watch", "1")
	}
	// resourceVersion is sent only when set: "" and absent mean the same, a
	// consistent read: the newest state. At v1.37 both "" and "0" are served
	// from the apiserver's watch cache; "" first asks etcd for its current
	// revision and waits until the cache has caught up with it (always, when
	// etcd supports progress requests: `ConsistentReadSupported`,
	// k8s.io/apiserver@v0.37.0/pkg/storage/cacher/delegator/interface.go:107-109;
	// 1.37 removed the gate ConsistentListFromCache), "0"
	// takes whatever the cache holds now, without waiting. See
	// `waitAndListConsistent` and `waitAndListLatestRV` in
	// k8s.io/apiserver@v0.37.0/pkg/storage/cacher/watch_cache.go:483-506,
	// and the delegation rules in pkg/storage/cacher/delegator.go.
	if opts.ResourceVersion != "" {
		q.Set("resourceVersion", opts.ResourceVersion)
	}
	if opts.ResourceVersionMatch != "" {
		q.Set("resourceVersionMatch", string(opts.ResourceVersionMatch))
	}
	if opts.TimeoutSeconds != nil {
		q.Set("timeoutSeconds", strconv.FormatInt(*opts.TimeoutSeconds, 10))
	}
	if opts.Limit > 0 {
		q.Set("limit", strconv.FormatInt(opts.Limit, 10))
	}
	if opts.Continue != "" {
		q.Set("continue", opts.Continue)
	}
	if opts.AllowWatchBookmarks {
		q.Set("allowWatchBookmarks", "true")
	}
	if opts.SendInitialEvents != nil {
		q.Set("sendInitialEvents", strconv.FormatBool(*opts.SendInitialEvents))
	}
	return q
}

// get sends one GET and returns the response if the server answered 200 OK.
// Any other answer becomes a *apierrors.StatusError (see errors.go).
func (lw *ListWatch) get(ctx context.Context, u string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	// Ask for JSON: for core/v1 the apiserver could also speak protobuf,
	// which is what client-go's typed clients ask for to save CPU.
	req.Header.Set("Accept", "application/json")
	// Accept-Encoding is left to Go's transport: it asks for gzip and, since
	// it asked, decompresses for us (resp.Uncompressed). Since 1.37 a
	// watch-list (sendInitialEvents=true with bookmarks) is gzip on the wire
	// (gate WatchListCompression); had we set Accept-Encoding ourselves, the
	// decoder would get the compressed bytes. TestWatchListArrivesGzip.
	resp, err := lw.Client.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		return nil, errorFromResponse(resp)
	}
	return resp, nil
}

// ListWithContext GETs one page of the collection and returns it as the typed
// list (*corev1.ConfigMapList for configmaps). Its ListMeta carries the
// resourceVersion to watch from and, when opts.Limit cut the page short, the
// continue token of the next page.
func (lw *ListWatch) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	opts.Watch = false
	resp, err := lw.get(ctx, lw.collectionURL(opts))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	listKind := lw.Kind.GroupVersion().WithKind(lw.Kind.Kind + "List")
	list, err := newObject(listKind)
	if err != nil {
		return nil, err
	}
	// A list is one JSON document, possibly large: json.Decoder reads it from
	// the body as it arrives rather than from a []byte of the whole body.
	if err := json.NewDecoder(resp.Body).Decode(list); err != nil {
		return nil, fmt.Errorf("decoding %s: %w", listKind.Kind, err)
	}
	if got := list.GetObjectKind().GroupVersionKind(); got != listKind {
		return nil, fmt.Errorf("list of %s answered with kind %q, want %q", lw.Resource, got.Kind, listKind.Kind)
	}
	return list, nil
}

// List is ListWithContext without a context, for cache.ListerWatcher.
func (lw *ListWatch) List(opts metav1.ListOptions) (runtime.Object, error) {
	return lw.ListWithContext(context.Background(), opts)
}

// ListAllWithContext lists page by page (opts.Limit objects per page, all of
// them when Limit is 0) with ListPages, and returns one list holding every item.
func (lw *ListWatch) ListAllWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	return ListPages(ctx, lw.ListWithContext, opts)
}

// ListPages LISTs page by page through list (any ListerWatcher's
// ListWithContext: lab 05's Reflector pages through it too), following
// continue tokens, and returns one list holding every item. All pages are
// served at the resourceVersion of the first page: the continue token
// carries it, so a paginated list is as consistent as a single one. If a
// continue token expires (410 Expired: etcd compacted the first page's
// revision meanwhile), it lists everything again in one request as opts
// asked, as upstream's pager does with `FullListIfExpired`
// (k8s.io/client-go@v0.37.0/tools/pager/pager.go:110-121), on in every pager
// `pager.New` makes (k8s.io/client-go@v0.37.0/tools/pager/pager.go:61-65).
// Upstream: k8s.io/client-go@v0.37.0/tools/pager/pager.go (ListPager.list).
func ListPages(ctx context.Context, list func(context.Context, metav1.ListOptions) (runtime.Object, error), opts metav1.ListOptions) (runtime.Object, error) {
	first, err := list(ctx, opts)
	if err != nil {
		return nil, err
	}
	firstMeta, err := meta.ListAccessor(first)
	if err != nil {
		return nil, err
	}
	items, err := meta.ExtractList(first)
	if err != nil {
		return nil, err
	}
	for next := firstMeta.GetContinue(); next != ""; {
		// Only the continue token, the selectors and the limit may be sent
		// with a continue: the resourceVersion is inside the token.
		page, err := list(ctx, metav1.ListOptions{
			LabelSelector: opts.LabelSelector, FieldSelector: opts.FieldSelector,
			Limit: opts.Limit, Continue: next,
		})
		if apierrors.IsResourceExpired(err) {
			opts.Limit, opts.Continue = 0, ""
			return list(ctx, opts)
		}
		if err != nil {
			return nil, err
		}
		pageMeta, err := meta.ListAccessor(page)
		if err != nil {
			return nil, err
		}
		if pageMeta.GetResourceVersion() != firstMeta.GetResourceVersion() {
			return nil, fmt.Errorf("page at resourceVersion %s, first page at %s", pageMeta.GetResourceVersion(), firstMeta.GetResourceVersion())
		}
		more, err := meta.ExtractList(page)
		if err != nil {
			return nil, err
		}
		items = append(items, more...)
		next = pageMeta.GetContinue()
	}
	if err := meta.SetList(first, items); err != nil {
		return nil, err
	}
	firstMeta.SetContinue("")
	return first, nil
}

// WatchWithContext GETs the collection with watch=1 and returns the stream as
// a watch.Interface. The request lives as long as ctx or until Stop.
func (lw *ListWatch) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	opts.Watch = true
	// The connection must outlive this call, so it gets its own context,
	// cancelled by Stop or when ctx ends.
	ctx, cancel := context.WithCancel(ctx)
	resp, err := lw.get(ctx, lw.collectionURL(opts))
	if err != nil {
		cancel()
		return nil, err
	}
	return newStreamWatcher(ctx, cancel, NewDecoder(resp.Body, lw.Kind), resp.Body), nil
}

// Watch is WatchWithContext without a context, for cache.ListerWatcher.
func (lw *ListWatch) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return lw.WatchWithContext(context.Background(), opts)
}
