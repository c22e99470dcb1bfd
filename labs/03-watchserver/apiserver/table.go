// Upstream: k8s.io/apiserver@v0.37.0/pkg/endpoints/handlers/response.go
// (asTable, watchEmbeddedEncoder: headers only on the first event, `NoHeaders`,
// k8s.io/apiserver@v0.37.0/pkg/endpoints/handlers/response.go:88-96) and
// k8s.io/kubernetes@v1.37.0/pkg/printers/internalversion/printers.go
// (printConfigMap, printPod: each resource's columns, in resources.go).
//
// kubectl get asks for a Table (Accept: application/json;as=Table;g=meta.k8s.io;v=v1)
// so the server decides the columns and kubectl only prints them. A Table is
// rendered per request (the Age column depends on "now", the row object on
// ?includeObject), so for a watcher that asks for one, encode-once ends here:
// tableWatcher converts each event into a Table for that watcher alone,
// which the WatchServer then encodes for it alone. Bookmarks and
// errors pass through as they are (upstream turns a bookmark into a Table row
// too; kubectl does not ask for bookmarks).

package apiserver

import (
	"mime"
	"net/http"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// tableRequest reports whether the client asked for a Table, and with which
// includeObject policy (default Metadata, as upstream). A bad policy is 400.
func tableRequest(req *http.Request) (bool, metav1.IncludeObjectPolicy, error) {
	for _, part := range strings.Split(req.Header.Get("Accept"), ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil || mt != "application/json" {
			continue
		}
		if params["as"] == "Table" && params["g"] == "meta.k8s.io" && (params["v"] == "v1" || params["v"] == "v1beta1") {
			policy := metav1.IncludeObjectPolicy(req.URL.Query().Get("includeObject"))
			switch policy {
			case "":
				policy = metav1.IncludeMetadata
			case metav1.IncludeMetadata, metav1.IncludeObject, metav1.IncludeNone:
			default:
				return false, "", apierrors.NewBadRequest("unrecognized includeObject value: \"" + string(policy) + "\"")
			}
			return true, policy, nil
		}
		if params["as"] == "" {
			return false, "", nil // plain JSON comes first in the client's order
		}
	}
	return false, "", nil
}

// table renders objects as a Table. headers=false leaves out the column
// definitions (every watch event after the first).
func (r *resourceHandler) table(objs []runtime.Object, policy metav1.IncludeObjectPolicy, headers bool, now time.Time) *metav1.Table {
	return renderTable(r.Resource, objs, policy, headers, now)
}

func renderTable(r *Resource, objs []runtime.Object, policy metav1.IncludeObjectPolicy, headers bool, now time.Time) *metav1.Table {
	t := &metav1.Table{TypeMeta: metav1.TypeMeta{Kind: "Table", APIVersion: "meta.k8s.io/v1"}}
	if headers {
		t.ColumnDefinitions = r.TableColumns
	}
	t.Rows = []metav1.TableRow{}
	for _, obj := range objs {
		row := metav1.TableRow{Cells: r.TableRow(obj, now)}
		switch policy {
		case metav1.IncludeObject:
			row.Object = runtime.RawExtension{Object: obj}
		case metav1.IncludeMetadata:
			partial := &metav1.PartialObjectMetadata{
				TypeMeta: metav1.TypeMeta{Kind: "PartialObjectMetadata", APIVersion: "meta.k8s.io/v1"},
			}
			if accessor, ok := obj.(metav1.ObjectMetaAccessor); ok {
				if om, ok := accessor.GetObjectMeta().(*metav1.ObjectMeta); ok {
					partial.ObjectMeta = *om
				}
			}
			row.Object = runtime.RawExtension{Object: partial}
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}

// tableWatcher turns a watch's events into Table events for one client.
type tableWatcher struct {
	resource *Resource
	src      watch.Interface
	policy   metav1.IncludeObjectPolicy
	out      chan watch.Event
	done     chan struct{}
	once     sync.Once
}

func newTableWatcher(r *Resource, src watch.Interface, policy metav1.IncludeObjectPolicy) *tableWatcher {
	t := &tableWatcher{resource: r, src: src, policy: policy, out: make(chan watch.Event), done: make(chan struct{})}
	go t.run()
	return t
}

func (t *tableWatcher) run() {
	defer close(t.out)
	headers := true
	for ev := range t.src.ResultChan() {
		if ev.Type != watch.Bookmark && ev.Type != watch.Error {
			obj := ev.Object
			if co, ok := obj.(runtime.CacheableObject); ok {
				obj = co.GetObject() // our own copy, to render
			}
			table := renderTable(t.resource, []runtime.Object{obj}, t.policy, headers, time.Now())
			m, _ := meta.Accessor(obj)
			table.ResourceVersion = m.GetResourceVersion()
			headers = false
			ev = watch.Event{Type: ev.Type, Object: table}
		}
		select {
		case t.out <- ev:
		case <-t.done:
			return
		}
	}
}

func (t *tableWatcher) ResultChan() <-chan watch.Event { return t.out }

// Stop stops the watch underneath; its closed channel ends run.
func (t *tableWatcher) Stop() {
	t.once.Do(func() { close(t.done) })
	t.src.Stop()
}
