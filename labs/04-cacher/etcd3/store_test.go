package etcd3_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/storage"
	storeerr "k8s.io/apiserver/pkg/storage/errors"

	"github.com/listwatch-labs/listwatch-labs/labs/04-cacher/embeddedetcd"
	"github.com/listwatch-labs/listwatch-labs/labs/04-cacher/etcd3"
	"github.com/listwatch-labs/listwatch-labs/labs/04-cacher/internal/labtest"
)

// One real etcd for the package: starting one takes about a second.
var etcdServer *embeddedetcd.Server

func TestMain(m *testing.M) {
	s, err := embeddedetcd.Start(embeddedetcd.Config{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	etcdServer = s
	// Warm the client up, so that its connection goroutines exist before
	// any test's goleak.IgnoreCurrent.
	if _, err := s.Client.Get(context.Background(), "/warmup"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	s.Close()
	os.Exit(code)
}

func newStore(t *testing.T) *etcd3.Store {
	t.Helper()
	return storeWith(t, labtest.ConfigMapStorage(etcdServer.Client))
}

// storeWith is a Store with cfg; a bad cfg fails the test.
func storeWith(t *testing.T, cfg etcd3.Config) *etcd3.Store {
	t.Helper()
	s, err := etcd3.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func cm(ns, name, value string) *v1.ConfigMap {
	return &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: map[string]string{"v": value}}
}

func key(ns, name string) string { return "/configmaps/" + ns + "/" + name }

func TestCreateGetAndRawKey(t *testing.T) {
	checkLeaks(t)
	ctx := context.Background()
	s := newStore(t)
	out := &v1.ConfigMap{}
	if err := s.Create(ctx, key("create", "a"), cm("create", "a", "1"), out, 0); err != nil {
		t.Fatal(err)
	}
	// The value sits under /registry/<resource>/<namespace>/<name>, as JSON,
	// and the object's resourceVersion is that key's ModRevision.
	raw, err := etcdServer.Client.Get(ctx, "/registry/configmaps/create/a")
	if err != nil || len(raw.Kvs) != 1 {
		t.Fatalf("raw get: %v, %d kvs", err, len(raw.Kvs))
	}
	if got, want := out.ResourceVersion, strconv.FormatInt(raw.Kvs[0].ModRevision, 10); got != want {
		t.Errorf("resourceVersion %s, want ModRevision %s", got, want)
	}
	if v := string(raw.Kvs[0].Value); v[0] != '{' {
		t.Errorf("value is not JSON: %q", v)
	}
	err = s.Create(ctx, key("create", "a"), cm("create", "a", "2"), nil, 0)
	if !storage.IsExist(err) {
		t.Fatalf("second create: %v, want a key-exists error", err)
	}
	if se := storeerr.InterpretCreateError(err, schema.GroupResource{Resource: "configmaps"}, "a"); !apierrors.IsAlreadyExists(se) {
		t.Errorf("second create maps to %v, want 409 AlreadyExists", se)
	}
	got := &v1.ConfigMap{}
	if err := s.Get(ctx, key("create", "a"), storage.GetOptions{}, got); err != nil || got.Data["v"] != "1" {
		t.Fatalf("get: %v %v", err, got.Data)
	}
	err = s.Get(ctx, key("create", "missing"), storage.GetOptions{}, got)
	if !storage.IsNotFound(err) {
		t.Errorf("get missing: %v, want not found", err)
	}
	if err := s.Get(ctx, "/secrets/x/y", storage.GetOptions{}, got); err == nil {
		t.Errorf("a key outside /configmaps was accepted")
	}
}

func TestGuaranteedUpdatePreconditionsAndRetry(t *testing.T) {
	checkLeaks(t)
	ctx := context.Background()
	s := newStore(t)
	created := &v1.ConfigMap{}
	obj := cm("update", "a", "0")
	obj.UID = "uid-1"
	if err := s.Create(ctx, key("update", "a"), obj, created, 0); err != nil {
		t.Fatal(err)
	}
	// A stale resourceVersion precondition fails; the API server turns
	// that storage error into 409 Conflict.
	stale := "1"
	err := s.GuaranteedUpdate(ctx, key("update", "a"), &v1.ConfigMap{}, false,
		&storage.Preconditions{ResourceVersion: &stale}, setValue("x"), nil)
	if err == nil {
		t.Fatal("update with a stale resourceVersion succeeded")
	}
	if apiErr := storeerr.InterpretUpdateError(err, schema.GroupResource{Resource: "configmaps"}, "a"); !apierrors.IsConflict(apiErr) {
		t.Errorf("stale RV maps to %v, want 409 Conflict", apiErr)
	}
	wrongUID := types.UID("uid-2")
	err = s.GuaranteedUpdate(ctx, key("update", "a"), &v1.ConfigMap{}, false,
		&storage.Preconditions{UID: &wrongUID}, setValue("x"), nil)
	if !storage.IsInvalidObj(err) {
		t.Errorf("wrong uid: %v, want a precondition failure", err)
	}

	// Four writers each increment the value 10 times: the compare-and-swap
	// retries lost races, so no increment is lost.
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 10 {
				err := s.GuaranteedUpdate(ctx, key("update", "a"), &v1.ConfigMap{}, false, nil,
					func(in runtime.Object, _ storage.ResponseMeta) (runtime.Object, *uint64, error) {
						c := in.(*v1.ConfigMap)
						n, _ := strconv.Atoi(c.Data["v"])
						c.Data["v"] = strconv.Itoa(n + 1)
						return c, nil, nil
					}, nil)
				if err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	got := &v1.ConfigMap{}
	if err := s.Get(ctx, key("update", "a"), storage.GetOptions{}, got); err != nil {
		t.Fatal(err)
	}
	if got.Data["v"] != "40" {
		t.Errorf("after 40 concurrent increments the value is %s", got.Data["v"])
	}
	// An update that changes nothing writes nothing: same resourceVersion.
	same := &v1.ConfigMap{}
	if err := s.GuaranteedUpdate(ctx, key("update", "a"), same, false, nil, setValue("40"), nil); err != nil {
		t.Fatal(err)
	}
	if same.ResourceVersion != got.ResourceVersion {
		t.Errorf("no-op update moved resourceVersion %s -> %s", got.ResourceVersion, same.ResourceVersion)
	}
	// Updating a missing key is NotFound.
	err = s.GuaranteedUpdate(ctx, key("update", "missing"), &v1.ConfigMap{}, false, nil, setValue("1"), nil)
	if !storage.IsNotFound(err) {
		t.Errorf("update missing: %v", err)
	}
}

func setValue(v string) storage.UpdateFunc {
	return func(in runtime.Object, _ storage.ResponseMeta) (runtime.Object, *uint64, error) {
		c := in.(*v1.ConfigMap)
		c.Data = map[string]string{"v": v}
		return c, nil, nil
	}
}

func TestDelete(t *testing.T) {
	checkLeaks(t)
	ctx := context.Background()
	s := newStore(t)
	created := &v1.ConfigMap{}
	if err := s.Create(ctx, key("delete", "a"), cm("delete", "a", "1"), created, 0); err != nil {
		t.Fatal(err)
	}
	stale := "1"
	err := s.Delete(ctx, key("delete", "a"), &v1.ConfigMap{}, &storage.Preconditions{ResourceVersion: &stale}, nil, nil, storage.DeleteOptions{})
	if !storage.IsInvalidObj(err) {
		t.Errorf("delete with stale RV: %v, want a precondition failure", err)
	}
	out := &v1.ConfigMap{}
	rv := created.ResourceVersion
	if err := s.Delete(ctx, key("delete", "a"), out, &storage.Preconditions{ResourceVersion: &rv}, storage.ValidateAllObjectFunc, nil, storage.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if out.Data["v"] != "1" || out.ResourceVersion == rv {
		t.Errorf("deleted object %v at RV %s; want the last state at the deletion's revision", out.Data, out.ResourceVersion)
	}
	err = s.Delete(ctx, key("delete", "a"), out, nil, nil, nil, storage.DeleteOptions{})
	if !storage.IsNotFound(err) {
		t.Errorf("second delete: %v, want not found", err)
	}
}

func TestGetListPagingAndExactRV(t *testing.T) {
	checkLeaks(t)
	ctx := context.Background()
	s := newStore(t)
	for i := range 7 {
		c := cm("list", fmt.Sprintf("c%d", i), "1")
		if i%2 == 0 {
			c.Labels = map[string]string{"even": "true"}
		}
		if err := s.Create(ctx, key("list", c.Name), c, nil, 0); err != nil {
			t.Fatal(err)
		}
	}
	all := &v1.ConfigMapList{}
	opts := storage.ListOptions{Recursive: true, Predicate: labtest.Predicate(nil, nil)}
	if err := s.GetList(ctx, "/configmaps/list", opts, all); err != nil {
		t.Fatal(err)
	}
	if len(all.Items) != 7 {
		t.Fatalf("list: %d items", len(all.Items))
	}
	// Pages of 3: 3 + 3 + 1, all read at the first page's revision even
	// though we write in between.
	var names []string
	opts.Predicate.Limit = 3
	page := &v1.ConfigMapList{}
	if err := s.GetList(ctx, "/configmaps/list", opts, page); err != nil {
		t.Fatal(err)
	}
	if page.RemainingItemCount == nil || *page.RemainingItemCount != 4 {
		t.Errorf("remainingItemCount %v, want 4", page.RemainingItemCount)
	}
	firstRV := page.ResourceVersion
	if err := s.Create(ctx, key("list", "c99"), cm("list", "c99", "1"), nil, 0); err != nil {
		t.Fatal(err)
	}
	for {
		for _, it := range page.Items {
			names = append(names, it.Name)
		}
		if page.Continue == "" {
			break
		}
		if page.ResourceVersion != firstRV {
			t.Errorf("page at RV %s, first at %s", page.ResourceVersion, firstRV)
		}
		opts.Predicate.Continue = page.Continue
		page = &v1.ConfigMapList{}
		if err := s.GetList(ctx, "/configmaps/list", opts, page); err != nil {
			t.Fatal(err)
		}
	}
	if fmt.Sprint(names) != "[c0 c1 c2 c3 c4 c5 c6]" {
		t.Errorf("paged names %v", names)
	}
	// A label selector with a limit reads on until the page is full.
	even := &v1.ConfigMapList{}
	sel := labtest.Predicate(labels.SelectorFromSet(labels.Set{"even": "true"}), nil)
	sel.Limit = 3
	if err := s.GetList(ctx, "/configmaps/list", storage.ListOptions{Recursive: true, Predicate: sel}, even); err != nil {
		t.Fatal(err)
	}
	if len(even.Items) != 3 || even.Items[2].Name != "c4" || even.Continue == "" {
		t.Errorf("even page: %d items, continue %q", len(even.Items), even.Continue)
	}
	// Exact RV reads history: at firstRV c99 did not exist.
	exact := &v1.ConfigMapList{}
	err := s.GetList(ctx, "/configmaps/list", storage.ListOptions{Recursive: true, ResourceVersion: firstRV,
		ResourceVersionMatch: metav1.ResourceVersionMatchExact, Predicate: labtest.Predicate(nil, nil)}, exact)
	if err != nil || len(exact.Items) != 7 {
		t.Errorf("exact list at %s: %v, %d items (want 7)", firstRV, err, len(exact.Items))
	}
}

func TestWatchFromRevisionAndSelectors(t *testing.T) {
	checkLeaks(t)
	ctx := context.Background()
	s := newStore(t)
	before := &v1.ConfigMap{}
	if err := s.Create(ctx, key("watch", "old"), cm("watch", "old", "1"), before, 0); err != nil {
		t.Fatal(err)
	}
	// RV "0": the current state as ADDED first.
	w0, err := s.Watch(ctx, "/configmaps/watch", storage.ListOptions{ResourceVersion: "0", Recursive: true, Predicate: labtest.Predicate(nil, nil)})
	if err != nil {
		t.Fatal(err)
	}
	defer w0.Stop()
	expectEvent(t, w0, watch.Added, "old")

	// A watch for label app=web, from the revision of "old".
	sel := labtest.Predicate(labels.SelectorFromSet(labels.Set{"app": "web"}), nil)
	w, err := s.Watch(ctx, "/configmaps/watch", storage.ListOptions{ResourceVersion: before.ResourceVersion, Recursive: true, Predicate: sel})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	a := cm("watch", "a", "1")
	a.Labels = map[string]string{"app": "web"}
	if err := s.Create(ctx, key("watch", "a"), a, a, 0); err != nil {
		t.Fatal(err)
	}
	if err := s.Create(ctx, key("watch", "b"), cm("watch", "b", "1"), nil, 0); err != nil {
		t.Fatal(err)
	}
	// Relabel a: it stops matching, so this watcher sees it DELETED.
	if err := s.GuaranteedUpdate(ctx, key("watch", "a"), &v1.ConfigMap{}, false, nil,
		func(in runtime.Object, _ storage.ResponseMeta) (runtime.Object, *uint64, error) {
			c := in.(*v1.ConfigMap)
			c.Labels = map[string]string{"app": "db"}
			return c, nil, nil
		}, nil); err != nil {
		t.Fatal(err)
	}
	expectEvent(t, w, watch.Added, "a")
	del := expectEvent(t, w, watch.Deleted, "a")
	if del.(*v1.ConfigMap).Labels["app"] != "web" {
		t.Errorf("DELETED carries %v, want the last matching state", del.(*v1.ConfigMap).Labels)
	}
	expectEvent(t, w0, watch.Added, "a")
	expectEvent(t, w0, watch.Added, "b")
	expectEvent(t, w0, watch.Modified, "a")
}

func TestWatchProgressNotify(t *testing.T) {
	checkLeaks(t)
	ctx := context.Background()
	s := newStore(t)
	rv, err := s.GetCurrentResourceVersion(ctx)
	if err != nil {
		t.Fatal(err)
	}
	w, err := s.Watch(ctx, "/configmaps/progress", storage.ListOptions{ResourceVersion: strconv.FormatUint(rv, 10), Recursive: true,
		ProgressNotify: true, Predicate: labtest.Predicate(nil, nil)})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	// Another resource's write moves etcd's revision; our watch has no event
	// for it, but a progress notification tells us etcd's revision.
	if err := s.Create(ctx, key("progress-other", "x"), cm("progress-other", "x", "1"), nil, 0); err != nil {
		t.Fatal(err)
	}
	deadline := time.After(10 * time.Second)
	for {
		if err := s.RequestWatchProgress(ctx); err != nil {
			t.Fatal(err)
		}
		select {
		case ev := <-w.ResultChan():
			if ev.Type != watch.Bookmark {
				t.Fatalf("got %v, want BOOKMARK", ev.Type)
			}
			got, _ := s.Versioner().ObjectResourceVersion(ev.Object)
			if got > rv {
				return
			}
		case <-time.After(100 * time.Millisecond):
		case <-deadline:
			t.Fatal("no progress notification after 10s")
		}
	}
}

func TestCompactionIsGone(t *testing.T) {
	checkLeaks(t)
	ctx := context.Background()
	s := newStore(t)
	first := &v1.ConfigMap{}
	if err := s.Create(ctx, key("compact", "a"), cm("compact", "a", "1"), first, 0); err != nil {
		t.Fatal(err)
	}
	// Two more writes: a watch from RV N starts at revision N+1, so the
	// compaction must pass N+1 for the watch to find its start gone.
	last := &v1.ConfigMap{}
	for _, v := range []string{"2", "3"} {
		if err := s.GuaranteedUpdate(ctx, key("compact", "a"), last, false, nil, setValue(v), nil); err != nil {
			t.Fatal(err)
		}
	}
	lastRev, _ := strconv.ParseInt(last.ResourceVersion, 10, 64)
	if _, err := etcdServer.Client.Compact(ctx, lastRev, clientv3Physical()...); err != nil {
		t.Fatal(err)
	}
	// A watch from before the compaction: one ERROR event, 410 Expired.
	w, err := s.Watch(ctx, "/configmaps/compact", storage.ListOptions{ResourceVersion: first.ResourceVersion, Recursive: true, Predicate: labtest.Predicate(nil, nil)})
	if err != nil {
		t.Fatal(err)
	}
	ev := <-w.ResultChan()
	status, ok := ev.Object.(*metav1.Status)
	if ev.Type != watch.Error || !ok || status.Code != 410 || status.Reason != metav1.StatusReasonExpired {
		t.Fatalf("got %v %#v, want ERROR 410 Expired", ev.Type, ev.Object)
	}
	if _, open := <-w.ResultChan(); open {
		t.Error("the watch stayed open after its ERROR event")
	}
	w.Stop()
	// An exact list at a compacted revision: 410 too.
	err = s.GetList(ctx, "/configmaps/compact", storage.ListOptions{Recursive: true, ResourceVersion: first.ResourceVersion,
		ResourceVersionMatch: metav1.ResourceVersionMatchExact, Predicate: labtest.Predicate(nil, fields.Everything())}, &v1.ConfigMapList{})
	if !apierrors.IsResourceExpired(err) {
		t.Errorf("list at a compacted revision: %v, want 410 Expired", err)
	}
}

func expectEvent(t *testing.T, w watch.Interface, typ watch.EventType, name string) runtime.Object {
	t.Helper()
	select {
	case ev, ok := <-w.ResultChan():
		if !ok {
			t.Fatalf("watch closed, want %s %s", typ, name)
		}
		c, _ := ev.Object.(*v1.ConfigMap)
		if ev.Type != typ || c == nil || c.Name != name {
			t.Fatalf("got %s %#v, want %s %s", ev.Type, ev.Object, typ, name)
		}
		return ev.Object
	case <-time.After(10 * time.Second):
		t.Fatalf("no event after 10s, want %s %s", typ, name)
	}
	return nil
}

// TestCompactedContinueOffersAnInconsistentToken: continuing a paged list
// whose revision etcd has compacted is 410 Expired, and the Status carries
// a new continue token: the same next key, revision -1 ("the latest").
// Listing with it finishes the list at the current revision, including what
// was written since the first page. (Compared with the real apiserver's
// answer in the lab's TestChunkingContinuesInconsistentlyAfterCompaction.)
func TestCompactedContinueOffersAnInconsistentToken(t *testing.T) {
	checkLeaks(t)
	ctx := context.Background()
	s := newStore(t)
	for i := range 4 {
		if err := s.Create(ctx, key("incons", fmt.Sprintf("c%d", i)), cm("incons", fmt.Sprintf("c%d", i), "1"), nil, 0); err != nil {
			t.Fatal(err)
		}
	}
	opts := storage.ListOptions{Recursive: true, Predicate: labtest.Predicate(nil, nil)}
	opts.Predicate.Limit = 2
	first := &v1.ConfigMapList{}
	if err := s.GetList(ctx, "/configmaps/incons", opts, first); err != nil {
		t.Fatal(err)
	}
	// A write after the first page, then a compaction at it: the first
	// page's revision is gone.
	later := &v1.ConfigMap{}
	if err := s.Create(ctx, key("incons", "c9"), cm("incons", "c9", "1"), later, 0); err != nil {
		t.Fatal(err)
	}
	laterRev, _ := strconv.ParseInt(later.ResourceVersion, 10, 64)
	if _, err := etcdServer.Client.Compact(ctx, laterRev, clientv3Physical()...); err != nil {
		t.Fatal(err)
	}
	opts.Predicate.Continue = first.Continue
	err := s.GetList(ctx, "/configmaps/incons", opts, &v1.ConfigMapList{})
	status, ok := err.(apierrors.APIStatus)
	if !ok || !apierrors.IsResourceExpired(err) || !strings.Contains(err.Error(), "use the continue token in this response") {
		t.Fatalf("continue after compaction: %v, want 410 Expired offering a token", err)
	}
	token := status.Status().ListMeta.Continue
	wantToken, _ := storage.EncodeContinue("/registry/configmaps/incons/c1\x00", "/registry/configmaps/incons/", -1)
	if token != wantToken {
		t.Fatalf("token %q, want %q (start c1\\x00, rv -1)", token, wantToken)
	}
	opts.Predicate.Continue = token
	rest := &v1.ConfigMapList{}
	if err := s.GetList(ctx, "/configmaps/incons", opts, rest); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, it := range rest.Items {
		names = append(names, it.Name)
	}
	if fmt.Sprint(names) != "[c2 c3]" || rest.ResourceVersion == first.ResourceVersion || rest.Continue == "" {
		t.Fatalf("inconsistent continue: %v at %s (first page at %s), continue %q", names, rest.ResourceVersion, first.ResourceVersion, rest.Continue)
	}
}
