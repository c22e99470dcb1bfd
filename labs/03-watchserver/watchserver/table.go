// Upstream: k8s.io/apiserver@v0.36.4/pkg/endpoints/handlers/response.go
// (asTable, watchEmbeddedEncoder: headers only on the first event) and
// k8s.io/kubernetes@v1.36.4/pkg/printers/internalversion/printers.go
// (printConfigMap: the Name, Data, Age columns).
//
// kubectl get asks for a Table (Accept: application/json;as=Table;g=meta.k8s.io;v=v1)
// so the server decides the columns and kubectl only prints them. A Table is
// rendered per request (the Age column depends on "now", the row object on
// ?includeObject), so for a watcher that asks for one, encode-once ends here:
// tableSource re-encodes each event for that watcher alone. Bookmarks and
// errors pass through as they are (upstream turns a bookmark into a Table row
// too; kubectl does not ask for bookmarks).

package watchserver

import (
	"mime"
	"net/http"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
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

// configMapColumns are the columns of `kubectl get configmaps`.
var configMapColumns = []metav1.TableColumnDefinition{
	{Name: "Name", Type: "string", Format: "name", Description: "The object's name, unique in its namespace."},
	{Name: "Data", Type: "string", Description: "How many keys the ConfigMap holds (data and binaryData)."},
	{Name: "Age", Type: "string", Description: "Time since the object was created."},
}

// configMapTable renders objects as a Table. headers=false leaves out the
// column definitions (every watch event after the first).
func configMapTable(objs []*corev1.ConfigMap, policy metav1.IncludeObjectPolicy, headers bool, now time.Time) *metav1.Table {
	t := &metav1.Table{TypeMeta: metav1.TypeMeta{Kind: "Table", APIVersion: "meta.k8s.io/v1"}}
	if headers {
		t.ColumnDefinitions = configMapColumns
	}
	t.Rows = []metav1.TableRow{}
	for _, obj := range objs {
		age := "<unknown>"
		if !obj.CreationTimestamp.IsZero() {
			age = duration.HumanDuration(now.Sub(obj.CreationTimestamp.Time))
		}
		row := metav1.TableRow{Cells: []any{obj.Name, int64(len(obj.Data) + len(obj.BinaryData)), age}}
		switch policy {
		case metav1.IncludeObject:
			row.Object = runtime.RawExtension{Raw: encodeObject(obj)}
		case metav1.IncludeMetadata:
			partial := &metav1.PartialObjectMetadata{
				TypeMeta:   metav1.TypeMeta{Kind: "PartialObjectMetadata", APIVersion: "meta.k8s.io/v1"},
				ObjectMeta: obj.ObjectMeta,
			}
			row.Object = runtime.RawExtension{Raw: encodeObject(partial)}
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}

// tableSource turns a watcher's events into Table events for one client.
type tableSource struct {
	src    EventSource
	policy metav1.IncludeObjectPolicy
	out    chan *Event
	done   chan struct{}
	once   sync.Once
}

func newTableSource(src EventSource, policy metav1.IncludeObjectPolicy) *tableSource {
	t := &tableSource{src: src, policy: policy, out: make(chan *Event, watcherBufSize), done: make(chan struct{})}
	go t.run()
	return t
}

func (t *tableSource) run() {
	defer close(t.out)
	headers := true
	for ev := range t.src.ResultChan() {
		if ev.Object != nil && ev.Type != watch.Bookmark {
			table := configMapTable([]*corev1.ConfigMap{ev.Object}, t.policy, headers, time.Now())
			table.ResourceVersion = ev.Object.ResourceVersion
			headers = false
			ev = &Event{Type: ev.Type, Object: ev.Object, RV: ev.RV, Frame: encodeFrame(ev.Type, encodeObject(table))}
		}
		select {
		case t.out <- ev:
		case <-t.done:
			return
		}
	}
}

func (t *tableSource) ResultChan() <-chan *Event { return t.out }

// Stop stops the watcher underneath; its closed channel ends run.
func (t *tableSource) Stop() {
	t.once.Do(func() { close(t.done) })
	t.src.Stop()
}
