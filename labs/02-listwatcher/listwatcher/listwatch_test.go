package listwatcher

import (
	"context"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// Both of client-go's interfaces, so a Reflector can run on a *ListWatch.
var (
	_ cache.ListerWatcherWithContext = (*ListWatch)(nil)
	_ cache.ListerWatcher            = (*ListWatch)(nil)
)

func TestKindFor(t *testing.T) {
	for resource, kind := range map[string]string{"configmaps": "ConfigMap", "pods": "Pod", "endpoints": "Endpoints", "services": "Service"} {
		gvk, err := KindFor(resource)
		if err != nil || gvk.Kind != kind || gvk.Version != "v1" {
			t.Errorf("KindFor(%q) = %v, %v; want v1 %s", resource, gvk, err, kind)
		}
	}
	if _, err := KindFor("deployments"); err == nil || !strings.Contains(err.Error(), "not a core/v1 resource") {
		t.Errorf("KindFor(deployments) error = %v", err)
	}
}

// TestQuery: ListOptions become the query parameters the apiserver reads.
func TestQuery(t *testing.T) {
	f := newFakeAPIServer(t,
		answer(200, list("10", "")), answer(200, list("10", "")), answer(200, list("10", "")),
		stream(), stream())
	lw := f.listWatch("ns")
	lw.LabelSelector = "app=demo"
	ctx := context.Background()
	timeout, yes := int64(30), true
	lw.ListWithContext(ctx, metav1.ListOptions{})
	lw.ListWithContext(ctx, metav1.ListOptions{ResourceVersion: "0"})
	lw.ListWithContext(ctx, metav1.ListOptions{ResourceVersion: "7", ResourceVersionMatch: metav1.ResourceVersionMatchExact, Limit: 2, FieldSelector: "metadata.name=a"})
	w, _ := lw.WatchWithContext(ctx, metav1.ListOptions{ResourceVersion: "10", TimeoutSeconds: &timeout, AllowWatchBookmarks: true})
	drain(w)
	w, _ = lw.WatchWithContext(ctx, metav1.ListOptions{SendInitialEvents: &yes, ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, AllowWatchBookmarks: true})
	drain(w)
	want := []string{
		"/api/v1/namespaces/ns/configmaps?labelSelector=app%3Ddemo",
		"/api/v1/namespaces/ns/configmaps?labelSelector=app%3Ddemo&resourceVersion=0",
		"/api/v1/namespaces/ns/configmaps?fieldSelector=metadata.name%3Da&labelSelector=app%3Ddemo&limit=2&resourceVersion=7&resourceVersionMatch=Exact",
		"/api/v1/namespaces/ns/configmaps?allowWatchBookmarks=true&labelSelector=app%3Ddemo&resourceVersion=10&timeoutSeconds=30&watch=1",
		"/api/v1/namespaces/ns/configmaps?allowWatchBookmarks=true&labelSelector=app%3Ddemo&resourceVersionMatch=NotOlderThan&sendInitialEvents=true&watch=1",
	}
	if got := f.Requests(); !reflect.DeepEqual(got, want) {
		t.Fatalf("requests:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func drain(w watch.Interface) {
	if w != nil {
		for range w.ResultChan() {
		}
	}
}

// TestListAll follows continue tokens; every page must be at the RV of the first.
func TestListAll(t *testing.T) {
	f := newFakeAPIServer(t,
		answer(200, list("10", "tok1", "a", "b")),
		answer(200, list("10", "tok2", "c", "d")),
		answer(200, list("10", "", "e")))
	got, err := f.listWatch("ns").ListAllWithContext(context.Background(), metav1.ListOptions{Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	l := got.(*corev1.ConfigMapList)
	var names []string
	for _, item := range l.Items {
		names = append(names, item.Name)
	}
	if strings.Join(names, ",") != "a,b,c,d,e" || l.ResourceVersion != "10" || l.Continue != "" {
		t.Fatalf("ListAll = %v at rv %q continue %q", names, l.ResourceVersion, l.Continue)
	}
	if r := f.Requests(); r[1] != "/api/v1/namespaces/ns/configmaps?continue=tok1&limit=2" {
		t.Fatalf("second page request %q: want only continue and limit", r[1])
	}

	f = newFakeAPIServer(t, answer(200, list("10", "tok1", "a")), answer(200, list("11", "", "b")))
	if _, err := f.listWatch("ns").ListAllWithContext(context.Background(), metav1.ListOptions{Limit: 1}); err == nil ||
		!strings.Contains(err.Error(), "page at resourceVersion 11, first page at 10") {
		t.Fatalf("pages at two RVs: error %v", err)
	}
}

// TestErrors: a non-200 answer is a *apierrors.StatusError carrying the
// apiserver's Status, or one made from the HTTP code when there is none.
func TestErrors(t *testing.T) {
	f := newFakeAPIServer(t,
		answer(410, `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"The provided continue parameter is too old","reason":"Expired","code":410}`),
		answer(503, "upstream connect error"),
		answer(200, `{"kind":"SecretList","apiVersion":"v1","items":[]}`),
		answer(403, `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"configmaps is forbidden","reason":"Forbidden","code":403}`))
	lw := f.listWatch("ns")
	ctx := context.Background()
	_, err := lw.ListWithContext(ctx, metav1.ListOptions{Continue: "old"})
	if !apierrors.IsResourceExpired(err) || !strings.Contains(err.Error(), "continue parameter is too old") {
		t.Errorf("410 list: %v", err)
	}
	_, err = lw.ListWithContext(ctx, metav1.ListOptions{})
	if !apierrors.IsServiceUnavailable(err) || !strings.Contains(err.Error(), "upstream connect error") {
		t.Errorf("503 without Status: %v", err)
	}
	_, err = lw.ListWithContext(ctx, metav1.ListOptions{})
	if err == nil || !strings.Contains(err.Error(), `answered with kind "SecretList", want "ConfigMapList"`) {
		t.Errorf("wrong list kind: %v", err)
	}
	_, err = lw.WatchWithContext(ctx, metav1.ListOptions{})
	if !apierrors.IsForbidden(err) {
		t.Errorf("403 watch: %v", err)
	}
}

// TestWatchStop: Stop ends a watch the server holds open; goleak (TestMain)
// checks the receive goroutine and the connection are gone.
func TestWatchStop(t *testing.T) {
	f := newFakeAPIServer(t)
	f.handlers = append(f.handlers, f.hold(cm("ADDED", "a", "5")))
	w, err := f.listWatch("ns").WatchWithContext(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ev := <-w.ResultChan()
	if ev.Type != watch.Added || ev.Object.(*corev1.ConfigMap).Name != "a" {
		t.Fatalf("first event %v", ev)
	}
	w.Stop()
	w.Stop() // twice is fine
	if ev, ok := <-w.ResultChan(); ok {
		t.Fatalf("event after Stop: %v", ev)
	}
	f.srv.Client().CloseIdleConnections()
}

// TestWatchBroken: a connection dropped mid-frame ends the watch with an
// ERROR event that says so, not with a silent close.
func TestWatchBroken(t *testing.T) {
	f := newFakeAPIServer(t, cut(cm("ADDED", "a", "5")))
	w, err := f.listWatch("ns").WatchWithContext(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var got []watch.Event
	for ev := range w.ResultChan() {
		got = append(got, ev)
	}
	if len(got) != 2 || got[0].Type != watch.Added || got[1].Type != watch.Error {
		t.Fatalf("events %v", got)
	}
	err = StatusError(got[1].Object)
	if !apierrors.IsInternalError(err) || !strings.Contains(err.Error(), "watch stream broken") {
		t.Fatalf("ERROR event: %v", err)
	}
}
