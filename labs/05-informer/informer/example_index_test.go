package informer

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ExampleLabelIndexFunc indexes ConfigMaps by their "app" label and asks
// which ones belong to the app "demo": the index of your own that the
// README suggests ("An index of your own"). Change the label, or write
// another IndexFunc beside LabelIndexFunc in index.go, and run it with
// go test -count=1 -run '^ExampleLabelIndexFunc$' -v ./informer.
func ExampleLabelIndexFunc() {
	cache := NewIndexer(Indexers{"app": LabelIndexFunc("app")})
	for name, app := range map[string]string{"web-config": "demo", "colors": "demo", "db-config": "db", "unlabelled": ""} {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}}
		if app != "" {
			cm.Labels = map[string]string{"app": app}
		}
		if err := cache.Add(cm); err != nil {
			fmt.Println(err)
		}
	}
	demo, err := cache.ByIndex("app", "demo")
	if err != nil {
		fmt.Println(err)
	}
	for _, obj := range demo {
		fmt.Println(obj.(*corev1.ConfigMap).Name)
	}
	fmt.Println("apps:", cache.ListIndexFuncValues("app"))
	// Output:
	// colors
	// web-config
	// apps: [db demo]
}
