// Upstream: k8s.io/client-go@v0.37.0/tools/cache/index.go
// (MetaNamespaceIndexFunc, NamespaceIndex). The spec.nodeName and label
// indexes are ours, of the kind a controller adds to an upstream informer
// with AddIndexers.

package informer

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
)

// The index names used in this lab. NamespaceIndex is upstream's own name
// (`NamespaceIndex`: k8s.io/client-go@v0.37.0/tools/cache/index.go:80-81).
const (
	NamespaceIndex = "namespace"
	NodeNameIndex  = "spec.nodeName"
)

// NamespaceIndexFunc indexes an object under its namespace.
func NamespaceIndexFunc(obj any) ([]string, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, fmt.Errorf("object has no meta: %w", err)
	}
	return []string{m.GetNamespace()}, nil
}

// NodeNameIndexFunc indexes a Pod under the node it is bound to; a pod not
// yet scheduled is in no index entry. Any other type is an error.
func NodeNameIndexFunc(obj any) ([]string, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return nil, fmt.Errorf("spec.nodeName index: want *v1.Pod, got %T", obj)
	}
	if pod.Spec.NodeName == "" {
		return nil, nil
	}
	return []string{pod.Spec.NodeName}, nil
}

// LabelIndexFunc returns an IndexFunc that indexes objects under the value
// of one label: the model for an index of your own (the exercise in the
// README: index ConfigMaps by their "app" label and ask ByIndex for one app).
func LabelIndexFunc(label string) IndexFunc {
	return func(obj any) ([]string, error) {
		m, err := meta.Accessor(obj)
		if err != nil {
			return nil, fmt.Errorf("object has no meta: %w", err)
		}
		if v, ok := m.GetLabels()[label]; ok {
			return []string{v}, nil
		}
		return nil, nil
	}
}
