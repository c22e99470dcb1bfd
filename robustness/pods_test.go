package robustness

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// TestPodDeleteOnBothStacks: a bound Pod deleted with gracePeriodSeconds=0
// is two writes on kube-apiserver, a MODIFIED that sets its
// deletionTimestamp (with the period, 0) and then the DELETED, at two
// resourceVersions; on the course's stack, whose lab 03 leaves graceful
// deletion out, it is one, the DELETED. What the checker's `placeMarks`
// allows for, shown on the real components.
func TestPodDeleteOnBothStacks(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a kube-apiserver on a three-member etcd")
	}
	c := haCluster(t)
	ns := fmt.Sprintf("pod-delete-%d", time.Now().UnixNano()%1e6)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	realStack, err := StartRealStack(ctx, c, ns)
	if err != nil {
		t.Fatal(err)
	}
	defer realStack.Close()
	course, err := StartCourseStack(ns, c)
	if err != nil {
		t.Fatal(err)
	}
	defer course.Close()
	for _, tc := range []struct {
		name string
		cfg  *rest.Config
		want []string
	}{
		{"kube-apiserver", realStack.Config, []string{"MODIFIED deletionTimestamp set, deletionGracePeriodSeconds=0", "DELETED"}},
		{"course", course.Config, []string{"DELETED"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pods := kubernetes.NewForConfigOrDie(tc.cfg).CoreV1().Pods(ns)
			created, err := pods.Create(ctx, &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: "doomed"},
				Spec:       corev1.PodSpec{NodeName: "node-a", Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause"}}},
			}, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			w, err := pods.Watch(ctx, metav1.ListOptions{ResourceVersion: created.ResourceVersion, FieldSelector: "metadata.name=doomed"})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			if err := pods.Delete(ctx, "doomed", metav1.DeleteOptions{GracePeriodSeconds: new(int64(0))}); err != nil {
				t.Fatal(err)
			}
			var got []string
			var rvs []string
			deadline := time.After(30 * time.Second)
			for !slices.Contains(got, "DELETED") {
				select {
				case <-deadline:
					t.Fatalf("no DELETED within 30s; got %q", got)
				case ev, ok := <-w.ResultChan():
					if !ok {
						t.Fatalf("the watch ended before the DELETED; got %q", got)
					}
					p, ok := ev.Object.(*corev1.Pod)
					if !ok {
						t.Fatalf("a %s event with a %T", ev.Type, ev.Object)
					}
					s := string(ev.Type)
					if ev.Type == watch.Modified && p.DeletionTimestamp != nil && p.DeletionGracePeriodSeconds != nil {
						s += fmt.Sprintf(" deletionTimestamp set, deletionGracePeriodSeconds=%d", *p.DeletionGracePeriodSeconds)
					}
					got, rvs = append(got, s), append(rvs, p.ResourceVersion)
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("the events of a delete with gracePeriodSeconds=0: got %q, want %q", got, tc.want)
			}
			if len(rvs) == 2 && rvs[0] == rvs[1] {
				t.Errorf("the two writes share resourceVersion %s", rvs[0])
			}
			t.Logf("%s: %q at resourceVersions %v", tc.name, got, rvs)
		})
	}
}
