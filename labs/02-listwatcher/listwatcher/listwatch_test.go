package listwatcher

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/watch"
	restclientwatch "k8s.io/client-go/rest/watch"
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

// TestWatchBroken: how a watch ends when its stream breaks, ours and
// upstream's side by side. Both read the same bytes from a fake apiserver
// (httptest): ours through ListWatch.WatchWithContext, upstream's through
// k8s.io/apimachinery's watch.StreamWatcher over client-go's watch Decoder,
// with the reporter rest.Request.Watch gives it. A body cut inside a frame,
// a reset connection and a clean end close the channel silently; a frame that
// is not a watch event first sends an ERROR (500, ClientWatchDecoding).
func TestWatchBroken(t *testing.T) {
	// reset sends one event, waits until the client has it (so the RST
	// cannot overtake the data), then closes with a TCP RST.
	reset := func(received <-chan struct{}) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			stream(cm("ADDED", "a", "5"))(w, r)
			<-received
			conn, _, err := http.NewResponseController(w).Hijack()
			if err != nil {
				t.Error(err)
				return
			}
			conn.(*net.TCPConn).SetLinger(0) // close with a TCP RST: "connection reset by peer"
			conn.Close()
		}
	}
	always := func(h http.HandlerFunc) func(<-chan struct{}) http.HandlerFunc {
		return func(<-chan struct{}) http.HandlerFunc { return h }
	}
	const decodeError = "ADDED ERROR 500 InternalError UnexpectedServerResponse ClientWatchDecoding"
	for name, tc := range map[string]struct {
		handler func(received <-chan struct{}) http.HandlerFunc
		want    string
	}{
		"clean end":             {always(stream(cm("ADDED", "a", "5"))), "ADDED"},
		"cut inside a frame":    {always(cut(cm("ADDED", "a", "5"))), "ADDED"},
		"connection reset":      {reset, "ADDED"},
		"not a watch event":     {always(stream(cm("ADDED", "a", "5"), `<html>502 Bad Gateway</html>`)), decodeError},
		"an unknown event type": {always(stream(cm("ADDED", "a", "5"), strings.Replace(cm("ADDED", "b", "6"), "ADDED", "CHANGED", 1))), decodeError},
	} {
		t.Run(name, func(t *testing.T) {
			received := make(chan struct{})
			ours := newFakeAPIServer(t, tc.handler(received))
			w, err := ours.listWatch("ns").WatchWithContext(context.Background(), metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got := eventTypes(w, received); got != tc.want {
				t.Errorf("ours: %s, want %s", got, tc.want)
			}
			ours.srv.Client().CloseIdleConnections()

			received = make(chan struct{})
			theirs := newFakeAPIServer(t, tc.handler(received))
			resp, err := theirs.srv.Client().Get(theirs.srv.URL + "/api/v1/namespaces/ns/configmaps?watch=1")
			if err != nil {
				t.Fatal(err)
			}
			if got := eventTypes(upstreamStreamWatcher(t, resp.Body), received); got != tc.want {
				t.Errorf("upstream: %s, want %s", got, tc.want)
			}
			theirs.srv.Client().CloseIdleConnections()
		})
	}
}

// eventTypes drains w: each event's type, and for an ERROR its code, reason
// and causes. It closes received after the first event (or at the end).
func eventTypes(w watch.Interface, received chan struct{}) string {
	var once sync.Once
	signal := func() { once.Do(func() { close(received) }) }
	defer signal()
	var got []string
	for ev := range w.ResultChan() {
		signal()
		line := string(ev.Type)
		if status, ok := ev.Object.(*metav1.Status); ok && ev.Type == watch.Error {
			line = fmt.Sprintf("ERROR %d %s", status.Code, status.Reason)
			if status.Details != nil {
				for _, cause := range status.Details.Causes {
					line += " " + string(cause.Type)
				}
			}
		}
		got = append(got, line)
	}
	return strings.Join(got, " ")
}

// upstreamStreamWatcher is the watch client-go builds for a JSON watch
// response (`Request.Watch` and `newStreamWatcher`,
// k8s.io/client-go@v0.37.0/rest/request.go:833-856): the JSON framer, the streaming decoder, rest/watch's
// Decoder, and a StreamWatcher reporting decode errors as ClientWatchDecoding.
func upstreamStreamWatcher(t *testing.T, body io.ReadCloser) watch.Interface {
	scheme := k8sruntime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	codecs := serializer.NewCodecFactory(scheme)
	info, ok := k8sruntime.SerializerInfoForMediaType(codecs.SupportedMediaTypes(), "application/json")
	if !ok {
		t.Fatal("no JSON serializer")
	}
	frames := info.StreamSerializer.Framer.NewFrameReader(body)
	decoder := restclientwatch.NewDecoder(streaming.NewDecoder(frames, info.StreamSerializer.Serializer),
		serializer.WithoutConversionCodecFactory{CodecFactory: codecs}.DecoderToVersion(info.Serializer, corev1.SchemeGroupVersion))
	return watch.NewStreamWatcher(decoder, apierrors.NewClientErrorReporter(http.StatusInternalServerError, http.MethodGet, "ClientWatchDecoding"))
}

// TestListPagesExpiredContinue: a continue token that expired (410 Expired:
// etcd compacted the first page's revision) is answered, as upstream's
// pager does, by one LIST of everything as first asked (no limit, no token).
func TestListPagesExpiredContinue(t *testing.T) {
	expired := `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Expired","code":410,"message":"The provided continue parameter is too old to display a consistent list result."}`
	f := newFakeAPIServer(t,
		answer(200, list("10", "tok1", "a")),
		answer(410, expired),
		answer(200, list("12", "", "a", "b")))
	got, err := f.listWatch("ns").ListAllWithContext(context.Background(), metav1.ListOptions{Limit: 1, ResourceVersion: "0"})
	if err != nil {
		t.Fatal(err)
	}
	l := got.(*corev1.ConfigMapList)
	if len(l.Items) != 2 || l.ResourceVersion != "12" {
		t.Fatalf("after the expired token: %d items at rv %q, want the full list's 2 at 12", len(l.Items), l.ResourceVersion)
	}
	if r := f.Requests(); len(r) != 3 || r[2] != "/api/v1/namespaces/ns/configmaps?resourceVersion=0" {
		t.Fatalf("requests %q: want the third a LIST as first asked, without limit or continue", r)
	}
}
