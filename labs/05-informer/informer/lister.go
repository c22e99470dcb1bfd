// Upstream: k8s.io/client-go@v0.37.0/listers/generic_helpers.go
// (ResourceIndexer[T]: List and Get; New and NewNamespaced make the
// cluster-wide and the namespaced lister) and tools/cache/listers.go
// (ListAll, ListAllByNamespace).
//
// Left out: nothing a controller reads with; the cluster-scoped variant is
// the same Lister with namespace "".

package informer

import (
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Lister reads typed objects from an informer's cache. It never talks to
// the server: what it returns is as fresh as the cache, and is shared with
// the cache and every other reader, so it must not be modified.
type Lister[T runtime.Object] struct {
	indexer  *Indexer
	resource schema.GroupResource
}

// NewLister returns a Lister of T over indexer; resource names the
// resource in NotFound errors ("configmaps").
func NewLister[T runtime.Object](indexer *Indexer, resource schema.GroupResource) *Lister[T] {
	return &Lister[T]{indexer: indexer, resource: resource}
}

// List returns the objects in namespace ("" for all) matching selector,
// sorted by key. With a namespace it uses the namespace index if there is
// one, and scans everything if not, as upstream's `ListAllByNamespace` does
// (k8s.io/client-go@v0.37.0/tools/cache/listers.go:61-80).
func (l *Lister[T]) List(namespace string, selector labels.Selector) []T {
	var objs []any
	if namespace != "" {
		var err error
		if objs, err = l.indexer.ByIndex(NamespaceIndex, namespace); err != nil {
			objs = nil
			for _, obj := range l.indexer.List() {
				if m, err := meta.Accessor(obj); err == nil && m.GetNamespace() == namespace {
					objs = append(objs, obj)
				}
			}
		}
	} else {
		objs = l.indexer.List()
	}
	var out []T
	for _, obj := range objs {
		t, ok := obj.(T)
		if !ok {
			continue
		}
		if m, err := meta.Accessor(obj); err == nil && selector.Matches(labels.Set(m.GetLabels())) {
			out = append(out, t)
		}
	}
	return out
}

// Get returns namespace/name, or the NotFound error a client would get
// from the server.
func (l *Lister[T]) Get(namespace, name string) (T, error) {
	key := name
	if namespace != "" {
		key = namespace + "/" + name
	}
	var zero T
	obj, ok, _ := l.indexer.GetByKey(key)
	if !ok {
		return zero, apierrors.NewNotFound(l.resource, name)
	}
	t, ok := obj.(T)
	if !ok {
		return zero, apierrors.NewNotFound(l.resource, name)
	}
	return t, nil
}

// ByIndex returns the objects of T indexed under value in index name.
func (l *Lister[T]) ByIndex(name, value string) ([]T, error) {
	objs, err := l.indexer.ByIndex(name, value)
	if err != nil {
		return nil, err
	}
	out := make([]T, 0, len(objs))
	for _, obj := range objs {
		if t, ok := obj.(T); ok {
			out = append(out, t)
		}
	}
	return out, nil
}
