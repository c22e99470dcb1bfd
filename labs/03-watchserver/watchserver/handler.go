// Upstream: k8s.io/apiserver@v0.37.0/pkg/endpoints/handlers/get.go
// (handleWatch: choose the timeout, call rest.Watcher.Watch with a context
// that ends at that timeout, then serveWatchHandler) and
// pkg/registry/generic/registry/store.go (Store.Watch and WatchPredicate:
// turn the request into a storage key and storage.ListOptions, and call
// storage.Interface.Watch).
//
// Upstream's call chain is handleWatch -> rest.Watcher.Watch (the registry,
// genericregistry.Store.Watch) -> Store.WatchPredicate ->
// storage.Interface.Watch, which is a CacheDelegator handing the watch to
// Cacher.Watch (registry/storage_factory.go, storage/cacher/delegator.go). We
// fold the two registry steps into
// ServeWatch: the scope names the storage and how keys are built, which is
// all the registry adds for a watch.

package watchserver

import (
	"context"
	"math/rand/v2"
	"net/http"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/storage"
)

// WatchScope is what the watch handler needs to know about one resource:
// where its objects are stored and how to filter and encode them. It is a
// small part of upstream's handlers.RequestScope plus genericregistry.Store.
type WatchScope struct {
	// Storage is the resource's storage.Interface: lab 03's memstorage, or
	// lab 04's Cacher over etcd.
	Storage storage.Interface
	// KeyRoot is the key under which all objects of a namespace live ("" for
	// all namespaces); Key is the key of one object.
	KeyRoot func(namespace string) string
	Key     func(namespace, name string) string
	// GetAttrs gives an object's labels and selectable fields.
	GetAttrs storage.AttrFunc
	// IndexFields names the fields a storage may index watchers by (pods:
	// spec.nodeName), as PredicateFunc sets SelectionPredicate.IndexFields.
	IndexFields []string
	// Encoder encodes each event's object.
	Encoder runtime.Encoder
	// MinRequestTimeout is kube-apiserver's --min-request-timeout: a watch
	// without timeoutSeconds ends after a random time between one and two
	// times this, so long-lived watches spread over the apiservers.
	MinRequestTimeout time.Duration
	// ShuttingDown, when closed, ends every watch stream (nil: never).
	ShuttingDown <-chan struct{}
	// DisableWatchListCompression turns off gzip for watch-lists: upstream's
	// gate WatchListCompression set to false (it is on by default in 1.37).
	DisableWatchListCompression bool
}

// ServeWatch serves a watch request whose options have been parsed. It
// returns an error, for the caller to answer as a Status, only if the watch
// could not start; after that the response is the stream. transform, if not
// nil, wraps the storage's watch (the API server renders Tables with it).
func ServeWatch(w http.ResponseWriter, req *http.Request, scope *WatchScope, namespace string, opts *ListOptions,
	transform func(watch.Interface) watch.Interface) error {
	// timeoutSeconds wins; without it the server picks a random timeout in
	// [MinRequestTimeout, 2*MinRequestTimeout).
	var timeout time.Duration
	if opts.TimeoutSeconds != nil {
		timeout = time.Duration(*opts.TimeoutSeconds) * time.Second
	}
	if timeout == 0 && scope.MinRequestTimeout > 0 {
		timeout = time.Duration(float64(scope.MinRequestTimeout) * (1 + rand.Float64()))
	}
	// The storage sees the deadline through the context: that is how the
	// Cacher schedules the pre-timeout bookmark. A negative timeoutSeconds
	// makes a context that is already done, as upstream's does; what the
	// storage answers then is its business (memstorage: an ERROR event for
	// RV "", an empty stream otherwise, as upstream's Cacher).
	// A timeout of 0 (no timeoutSeconds and MinRequestTimeout 0) means no
	// deadline: our choice for tests. Upstream always sets one, and its
	// --min-request-timeout is never 0 by default (1800 s, `MinRequestTimeout`,
	// k8s.io/apiserver@v0.37.0/pkg/server/config.go:454).
	ctx, cancel := req.Context(), context.CancelFunc(func() {})
	if timeout != 0 {
		ctx, cancel = context.WithTimeout(ctx, timeout)
	}
	defer cancel()

	watcher, err := scope.Storage.Watch(ctx, watchKey(scope, namespace, opts), storage.ListOptions{
		ResourceVersion:      opts.ResourceVersion,
		ResourceVersionMatch: opts.ResourceVersionMatch,
		SendInitialEvents:    opts.SendInitialEvents,
		Recursive:            !isSingle(scope, namespace, opts),
		Predicate: storage.SelectionPredicate{
			Label:               opts.LabelSelector,
			Field:               opts.FieldSelector,
			GetAttrs:            scope.GetAttrs,
			IndexFields:         scope.IndexFields,
			AllowWatchBookmarks: opts.AllowWatchBookmarks,
		},
	})
	if err != nil {
		// A malformed resourceVersion fails in the storage, which upstream
		// reports as it comes: a 500 with no reason.
		return err
	}
	if transform != nil {
		watcher = transform(watcher)
	}
	server := &WatchServer{
		Watching:     watcher,
		Encoder:      scope.Encoder,
		MediaType:    "application/json",
		Timeout:      timeout,
		ShuttingDown: scope.ShuttingDown,
		// After defaulting: a watch from RV ""/"0" with neither
		// sendInitialEvents nor resourceVersionMatch is a watch-list too,
		// when it also allows bookmarks (isListWatchRequest).
		IsWatchListRequest:   opts.SendInitialEvents != nil && *opts.SendInitialEvents && opts.AllowWatchBookmarks,
		WatchListCompression: !scope.DisableWatchListCompression,
	}
	server.ServeHTTP(w, req)
	return nil
}

// isSingle is WatchPredicate's test: a watch whose field selector names one
// object in one namespace watches that object's key, not a prefix.
func isSingle(scope *WatchScope, namespace string, opts *ListOptions) bool {
	_, ok := opts.FieldSelector.RequiresExactMatch("metadata.name")
	return ok && namespace != ""
}

func watchKey(scope *WatchScope, namespace string, opts *ListOptions) string {
	if name, ok := opts.FieldSelector.RequiresExactMatch("metadata.name"); ok && namespace != "" {
		return scope.Key(namespace, name)
	}
	return scope.KeyRoot(namespace)
}
