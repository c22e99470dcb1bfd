// Upstream: k8s.io/apiserver@v0.37.0/pkg/registry/generic/registry/store.go
// (genericregistry.Store: NewFunc, NewListFunc, KeyRootFunc, KeyFunc,
// PredicateFunc, TableConvertor: what the generic handlers need to know about
// one resource) and its instances in k8s.io/kubernetes@v1.37.0:
// pkg/registry/core/configmap/storage/storage.go and
// pkg/registry/core/pod/storage/storage.go, with pod/strategy.go
// (GetAttrs/ToSelectableFields, NodeNameTriggerFunc, Indexers).
//
// A Resource is that description, cut down: no strategies (defaulting,
// validation beyond names, status subresources), no per-version conversion.
// The field names follow cacher.Config
// (k8s.io/apiserver@v0.37.0/pkg/storage/cacher/cacher.go: ResourcePrefix,
// KeyFunc, GetAttrsFunc, IndexerFuncs, Indexers, NewFunc, NewListFunc), so
// building a Cacher for a Resource is one assignment per field.

package apiserver

import (
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/client-go/tools/cache"
)

// Resource describes one namespaced core/v1 resource the server serves.
type Resource struct {
	// GroupResource names it in URLs and errors ({"", "configmaps"}).
	GroupResource schema.GroupResource
	Kind          string // ConfigMap
	SingularName  string // configmap
	ShortNames    []string
	// NewFunc and NewListFunc return an empty object and list of the kind.
	NewFunc     func() runtime.Object
	NewListFunc func() runtime.Object
	// ResourcePrefix is where its objects live in the storage:
	// ResourcePrefix/NAMESPACE/NAME, e.g. /registry/configmaps/default/a,
	// the key layout of a real cluster's etcd.
	ResourcePrefix string
	// GetAttrsFunc gives the labels and the selectable fields of an object:
	// what a SelectionPredicate matches label and field selectors against.
	GetAttrsFunc storage.AttrFunc
	// ConvertFieldLabel accepts the field selectors the kind supports
	// (upstream registers it in the scheme per kind).
	ConvertFieldLabel runtime.FieldLabelConversionFunc
	// IndexFields are the fields a watch may be indexed by (pods:
	// spec.nodeName, what every kubelet selects on); IndexerFuncs are the
	// Cacher's trigger functions for them, Indexers the watch cache's
	// store indexes. A storage without indexes ignores all three.
	IndexFields  []string
	IndexerFuncs storage.IndexerFuncs
	Indexers     *cache.Indexers
	// TableColumns and TableRow are what `kubectl get` prints
	// (upstream: the TableConvertor, from pkg/printers/internalversion).
	TableColumns []metav1.TableColumnDefinition
	TableRow     func(obj runtime.Object, now time.Time) []any
	// ReturnDeletedObject: DELETE answers the deleted object, not a Status
	// (genericregistry.Store.ReturnDeletedObject; set for pods).
	ReturnDeletedObject bool
}

// KeyRoot is the key under which every object of namespace lives (all
// namespaces for ""): genericregistry.NamespaceKeyRootFunc.
func (r *Resource) KeyRoot(namespace string) string {
	if namespace == "" {
		return r.ResourcePrefix
	}
	return r.ResourcePrefix + "/" + namespace
}

// Key is the key of one object: genericregistry.NamespaceKeyFunc.
func (r *Resource) Key(namespace, name string) string {
	return r.ResourcePrefix + "/" + namespace + "/" + name
}

// KeyFunc is Key for an object, the signature cacher.Config.KeyFunc takes.
func (r *Resource) KeyFunc(obj runtime.Object) (string, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return "", err
	}
	if m.GetNamespace() == "" || m.GetName() == "" {
		return "", fmt.Errorf("%s key needs a namespace and a name, got %q/%q", r.Kind, m.GetNamespace(), m.GetName())
	}
	return r.Key(m.GetNamespace(), m.GetName()), nil
}

func ageCell(obj metav1.Object, now time.Time) string {
	t := obj.GetCreationTimestamp()
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(t.Time))
}

// ConfigMaps is core/v1 configmaps: selectable by metadata.name and
// metadata.namespace only, no indexes.
var ConfigMaps = &Resource{
	GroupResource:     schema.GroupResource{Resource: "configmaps"},
	Kind:              "ConfigMap",
	SingularName:      "configmap",
	ShortNames:        []string{"cm"},
	NewFunc:           func() runtime.Object { return &corev1.ConfigMap{} },
	NewListFunc:       func() runtime.Object { return &corev1.ConfigMapList{} },
	ResourcePrefix:    "/registry/configmaps",
	GetAttrsFunc:      storage.DefaultNamespaceScopedAttr,
	ConvertFieldLabel: runtime.DefaultMetaV1FieldSelectorConversion,
	// printConfigMap (k8s.io/kubernetes@v1.37.0/pkg/printers/internalversion/printers.go).
	TableColumns: []metav1.TableColumnDefinition{
		{Name: "Name", Type: "string", Format: "name", Description: "The object's name, unique in its namespace."},
		{Name: "Data", Type: "string", Description: "How many keys the ConfigMap holds (data and binaryData)."},
		{Name: "Age", Type: "string", Description: "Time since the object was created."},
	},
	TableRow: func(obj runtime.Object, now time.Time) []any {
		cm := obj.(*corev1.ConfigMap)
		return []any{cm.Name, int64(len(cm.Data) + len(cm.BinaryData)), ageCell(cm, now)}
	},
}

// podFields are the fields a pod selector may use, as pod.ToSelectableFields
// gives them (less status.podIPs, which is only a conversion alias there).
func podFields(pod *corev1.Pod) fields.Set {
	podIP := ""
	if len(pod.Status.PodIPs) > 0 {
		podIP = pod.Status.PodIPs[0].IP
	}
	return fields.Set{
		"metadata.name":            pod.Name,
		"metadata.namespace":       pod.Namespace,
		"spec.nodeName":            pod.Spec.NodeName,
		"spec.restartPolicy":       string(pod.Spec.RestartPolicy),
		"spec.schedulerName":       pod.Spec.SchedulerName,
		"spec.serviceAccountName":  pod.Spec.ServiceAccountName,
		"spec.hostNetwork":         strconv.FormatBool(pod.Spec.HostNetwork),
		"status.phase":             string(pod.Status.Phase),
		"status.podIP":             podIP,
		"status.nominatedNodeName": pod.Status.NominatedNodeName,
	}
}

// Pods is core/v1 pods: selectable by spec.nodeName (every kubelet watches
// `fieldSelector=spec.nodeName=NODE`) and a few more fields, and indexed by
// spec.nodeName so a Cacher can wake only the watchers of that node.
var Pods = &Resource{
	GroupResource:  schema.GroupResource{Resource: "pods"},
	Kind:           "Pod",
	SingularName:   "pod",
	ShortNames:     []string{"po"},
	NewFunc:        func() runtime.Object { return &corev1.Pod{} },
	NewListFunc:    func() runtime.Object { return &corev1.PodList{} },
	ResourcePrefix: "/registry/pods",
	GetAttrsFunc: func(obj runtime.Object) (labels.Set, fields.Set, error) {
		pod, ok := obj.(*corev1.Pod)
		if !ok {
			return nil, nil, fmt.Errorf("not a pod: %T", obj)
		}
		return labels.Set(pod.Labels), podFields(pod), nil
	},
	ConvertFieldLabel: func(label, value string) (string, string, error) {
		// k8s.io/kubernetes@v1.37.0/pkg/apis/core/v1/conversion.go, the Pod case.
		if label == "spec.host" {
			return "spec.nodeName", value, nil // what old clients sent
		}
		if _, ok := podFields(&corev1.Pod{})[label]; ok {
			return label, value, nil
		}
		return "", "", fmt.Errorf("field label not supported: %s", label)
	},
	ReturnDeletedObject: true,
	IndexFields:         []string{"spec.nodeName"},
	IndexerFuncs: storage.IndexerFuncs{
		// pod.NodeNameTriggerFunc: which watchers an event can concern.
		"spec.nodeName": func(obj runtime.Object) string { return obj.(*corev1.Pod).Spec.NodeName },
	},
	Indexers: &cache.Indexers{
		// pod.Indexers: the watch cache's store, indexed the same way.
		storage.FieldIndex("spec.nodeName"): func(obj any) ([]string, error) {
			pod, ok := obj.(*corev1.Pod)
			if !ok {
				return nil, fmt.Errorf("not a pod")
			}
			return []string{pod.Spec.NodeName}, nil
		},
	},
	// printPod, cut down: no IP, NODE or readiness-gate columns.
	TableColumns: []metav1.TableColumnDefinition{
		{Name: "Name", Type: "string", Format: "name", Description: "The object's name, unique in its namespace."},
		{Name: "Ready", Type: "string", Description: "Ready containers / all containers."},
		{Name: "Status", Type: "string", Description: "The pod's phase (or the reason it is in it)."},
		{Name: "Restarts", Type: "string", Description: "Container restarts, summed."},
		{Name: "Age", Type: "string", Description: "Time since the object was created."},
	},
	TableRow: func(obj runtime.Object, now time.Time) []any {
		pod := obj.(*corev1.Pod)
		ready, restarts := 0, int64(0)
		for _, c := range pod.Status.ContainerStatuses {
			if c.Ready {
				ready++
			}
			restarts += int64(c.RestartCount)
		}
		status := string(pod.Status.Phase)
		if pod.Status.Reason != "" {
			status = pod.Status.Reason
		}
		if status == "" {
			status = "Pending"
		}
		return []any{pod.Name, fmt.Sprintf("%d/%d", ready, len(pod.Spec.Containers)), status, restarts, ageCell(pod, now)}
	},
}

// DefaultResources are what the server serves unless Config says otherwise.
func DefaultResources() []*Resource { return []*Resource{ConfigMaps, Pods} }
