package cacher

import (
	"bytes"
	"context"
	"io"
	"strconv"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/utils/clock"

	"github.com/listwatch-labs/listwatch-labs/labs/04-cacher/internal/labtest"
)

func TestCachingObjectEncodesOncePerEncoder(t *testing.T) {
	pod := &v1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", ResourceVersion: "7"}}
	co, err := newCachingObject(pod)
	if err != nil {
		t.Fatal(err)
	}
	calls := 0
	encode := func(obj runtime.Object, w io.Writer) error {
		calls++
		_, err := w.Write([]byte(obj.(*v1.Pod).Name))
		return err
	}
	for range 3 {
		var buf bytes.Buffer
		if err := co.CacheEncode("json", encode, &buf); err != nil || buf.String() != "a" {
			t.Fatalf("CacheEncode: %q, %v", buf.String(), err)
		}
	}
	if calls != 1 {
		t.Errorf("3 encodings with one encoder made %d encode calls, want 1", calls)
	}
	var other bytes.Buffer
	_ = co.CacheEncode("protobuf", encode, &other)
	if calls != 2 {
		t.Errorf("a second encoder identifier did not encode anew")
	}
	// The real codec (apimachinery's versioning codec over the JSON
	// serializer) takes the CacheEncode path, and writes what it writes for
	// the plain object.
	codec := labtest.Codec()
	plain, err := runtime.Encode(codec, pod)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		cached, err := runtime.Encode(codec, co)
		if err != nil || !bytes.Equal(cached, plain) {
			t.Fatalf("codec over cachingObject: %s, %v; want %s", cached, err, plain)
		}
	}
	if n := len(co.serializations); n != 3 {
		t.Errorf("%d cached encodings, want 3 (json, protobuf, the codec)", n)
	}
	// meta.Accessor works on it, and GetObject is a private copy.
	if m, err := meta.Accessor(co); err != nil || m.GetName() != "a" || m.GetResourceVersion() != "7" {
		t.Errorf("accessor: %v %v", m, err)
	}
	if co.GetObject() == runtime.Object(pod) {
		t.Error("GetObject returned the shared object")
	}
}

// Every watcher of a live event gets the same cachingObject: one encoding
// for all.
func TestWatchersShareOneCachingObject(t *testing.T) {
	checkLeaks(t)
	e := newPodEnv(t, clock.RealClock{})
	ctx := context.Background()
	rv, _ := e.store.GetCurrentResourceVersion(ctx)
	opts := storage.ListOptions{ResourceVersion: strconv.FormatUint(rv, 10), Recursive: true, Predicate: everything()}
	w1, err := e.cacher.Watch(ctx, e.prefix, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer w1.Stop()
	w2, err := e.cacher.Watch(ctx, e.prefix, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Stop()
	e.create(t, "ns", "a", "", nil)
	o1, o2 := next(t, w1).Object, next(t, w2).Object
	co, ok := o1.(*cachingObject)
	if !ok || o1 != o2 {
		t.Fatalf("watchers got %T and %T (same: %v), want one shared *cachingObject", o1, o2, o1 == o2)
	}
	if co.GetName() != "a" {
		t.Errorf("name %q", co.GetName())
	}
}
