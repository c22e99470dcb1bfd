package robustness

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
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
	ctx, ns, realStack := realStackIn(t, "pod-delete")
	course, err := StartCourseStack(ns, haCluster(t))
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
			var rvs []string
			got := untilDeleted(t, w, func(ev watch.Event, p *corev1.Pod) string {
				rvs = append(rvs, p.ResourceVersion)
				s := string(ev.Type)
				if ev.Type == watch.Modified && p.DeletionTimestamp != nil && p.DeletionGracePeriodSeconds != nil {
					s += fmt.Sprintf(" deletionTimestamp set, deletionGracePeriodSeconds=%d", *p.DeletionGracePeriodSeconds)
				}
				return s
			})
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

// TestUpdateOfAPodMarkedDeletingDeletesIt: on kube-apiserver, an update of
// a Pod that has a deletionTimestamp with a grace period of 0, and that
// leaves it no finalizers, deletes it, and is answered 200 with the object
// the update asked for at the stored object's old resourceVersion
// (`ShouldDeleteDuringUpdate`,
// k8s.io/apiserver@v0.37.0/pkg/registry/generic/registry/store.go:633-654;
// `deleteWithoutFinalizers`,
// k8s.io/apiserver@v0.37.0/pkg/registry/generic/registry/store.go:658-679).
// A finalizer holds the Pod marked here; in the robustness runs a delete
// that failed between its two writes (its connection cut, or etcd failing
// the second) left it so. What `deletesDuringUpdate` in the checker reads.
func TestUpdateOfAPodMarkedDeletingDeletesIt(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a kube-apiserver on a three-member etcd")
	}
	ctx, ns, realStack := realStackIn(t, "pod-marked")
	pods := kubernetes.NewForConfigOrDie(realStack.Config).CoreV1().Pods(ns)
	created, err := pods.Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "held", Finalizers: []string{"listwatch-labs.example/hold"}, Annotations: map[string]string{"v": "before"}},
		Spec:       corev1.PodSpec{NodeName: "node-a", Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := pods.Watch(ctx, metav1.ListOptions{ResourceVersion: created.ResourceVersion, FieldSelector: "metadata.name=held"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if err := pods.Delete(ctx, "held", metav1.DeleteOptions{GracePeriodSeconds: new(int64(0))}); err != nil {
		t.Fatal(err)
	}
	marked, err := pods.Get(ctx, "held", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the Pod held by its finalizer: %v", err)
	}
	if marked.DeletionTimestamp == nil || marked.DeletionGracePeriodSeconds == nil || *marked.DeletionGracePeriodSeconds != 0 {
		t.Fatalf("after a delete with gracePeriodSeconds=0 the Pod has deletionTimestamp %v, deletionGracePeriodSeconds %v; want both set, the period 0", marked.DeletionTimestamp, marked.DeletionGracePeriodSeconds)
	}
	patch := []byte(`{"metadata":{"finalizers":null,"annotations":{"v":"after"}}}`)
	answer, err := pods.Patch(ctx, "held", types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		t.Fatalf("the update: %v", err)
	}
	if answer.ResourceVersion != marked.ResourceVersion || answer.Annotations["v"] != "after" {
		t.Errorf("the update's answer: resourceVersion %s, v=%q; want the marked Pod's resourceVersion %s and the update's v=\"after\"", answer.ResourceVersion, answer.Annotations["v"], marked.ResourceVersion)
	}
	if _, err := pods.Get(ctx, "held", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("after the update, GET: %v; want NotFound (the update deleted it)", err)
	}
	got := untilDeleted(t, w, func(ev watch.Event, p *corev1.Pod) string {
		return fmt.Sprintf("%s v=%s rv=%s", ev.Type, p.Annotations["v"], p.ResourceVersion)
	})
	// The mark, then the delete of what was stored: the update's content
	// was never stored.
	if len(got) != 2 || !strings.HasPrefix(got[0], "MODIFIED v=before ") || !strings.HasPrefix(got[1], "DELETED v=before ") {
		t.Errorf("the watch: got %q, want a MODIFIED and a DELETED, both v=before", got)
	}
	t.Logf("the Pod marked deleting at resourceVersion %s; the update answered 200 with v=%s at resourceVersion %s; then GET: NotFound; the watch: %q",
		marked.ResourceVersion, answer.Annotations["v"], answer.ResourceVersion, got)
}

// realStackIn starts the real stack (on the test binary's three-member
// cluster) in a new namespace named from prefix, stopped when t ends.
func realStackIn(t *testing.T, prefix string) (context.Context, string, *RealStack) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	ns := fmt.Sprintf("%s-%d", prefix, time.Now().UnixNano()%1e6)
	st, err := StartRealStack(ctx, haCluster(t), ns)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	return ctx, ns, st
}

// untilDeleted reads w until a DELETED event, or fails after 30 s or when
// the watch ends first; it returns each event as describe puts it.
func untilDeleted(t *testing.T, w watch.Interface, describe func(watch.Event, *corev1.Pod) string) []string {
	t.Helper()
	var got []string
	deadline := time.After(30 * time.Second)
	for {
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
			got = append(got, describe(ev, p))
			if ev.Type == watch.Deleted {
				return got
			}
		}
	}
}
