package informer

import (
	"fmt"
	"sort"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
)

// recorder is a cache.ResourceEventHandler that writes each call as a line,
// so the same handler can be registered on our informer and on client-go's.
// Lines are grouped in segments: the test cuts a segment after each step.
type recorder struct {
	// mu guards segments.
	mu       sync.Mutex
	segments [][]callLine
	// block, if set, is received from before each call (a slow handler).
	block chan struct{}
}

// callLine is one handler call: the object key, for sorting, and the text.
type callLine struct{ key, text string }

func newRecorder() *recorder { return &recorder{segments: [][]callLine{nil}} }

func (r *recorder) record(key, text string) {
	if r.block != nil {
		<-r.block
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.segments[len(r.segments)-1] = append(r.segments[len(r.segments)-1], callLine{key, text})
}

func (r *recorder) OnAdd(obj any, isInInitialList bool) {
	initial := ""
	if isInInitialList {
		initial = " (initial list)"
	}
	r.record(keyOf(obj), "OnAdd "+describeObj(obj)+initial)
}

func (r *recorder) OnUpdate(old, new any) {
	r.record(keyOf(new), "OnUpdate "+describeObj(old)+" -> "+describeObj(new))
}

func (r *recorder) OnDelete(obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		r.record(d.Key, "OnDelete "+describeObj(d.Obj)+" (final state unknown)")
		return
	}
	r.record(keyOf(obj), "OnDelete "+describeObj(obj))
}

// cut starts a new segment.
func (r *recorder) cut() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.segments = append(r.segments, nil)
}

// lines is every call in order.
func (r *recorder) lines() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, s := range r.segments {
		for _, l := range s {
			out = append(out, l.text)
		}
	}
	return out
}

// canonical is the segments with each one's calls stably sorted by object
// key: the order of calls for one object is kept, the interleaving of
// different objects within one step is not. Upstream hands a streaming
// list's objects over in Go map order (`temporaryStore.List`:
// k8s.io/client-go@v0.37.0/tools/cache/reflector.go:901), and a late
// handler's copy of the cache too (`s.indexer.List`:
// k8s.io/client-go@v0.37.0/tools/cache/shared_informer.go:1046), which is
// random, so only this much of the order is comparable.
func (r *recorder) canonical() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var b strings.Builder
	for i, s := range r.segments {
		s = append([]callLine(nil), s...)
		sort.SliceStable(s, func(i, j int) bool { return s[i].key < s[j].key })
		fmt.Fprintf(&b, "-- step %d\n", i)
		for _, l := range s {
			b.WriteString(l.text + "\n")
		}
	}
	return b.String()
}

func (r *recorder) count() int { return len(r.lines()) }

func keyOf(obj any) string {
	k, err := MetaNamespaceKey(obj)
	if err != nil {
		return fmt.Sprintf("<%v>", err)
	}
	return k
}

// describeObj is name, resourceVersion and data of a ConfigMap or Pod.
func describeObj(obj any) string {
	switch o := obj.(type) {
	case *corev1.ConfigMap:
		keys := make([]string, 0, len(o.Data))
		for k := range o.Data {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var kv []string
		for _, k := range keys {
			kv = append(kv, k+"="+o.Data[k])
		}
		mf := ""
		if len(o.ManagedFields) > 0 {
			mf = " managedFields"
		}
		return fmt.Sprintf("%s rv%s %s%s", o.Name, o.ResourceVersion, strings.Join(kv, ","), mf)
	case *corev1.Pod:
		return fmt.Sprintf("%s rv%s node=%s", o.Name, o.ResourceVersion, o.Spec.NodeName)
	case nil:
		return "<nil>"
	}
	return fmt.Sprintf("%T", obj)
}

// cacheContent is a cache's objects, one line each, sorted by key.
func cacheContent(objs []any) string {
	var lines []string
	for _, o := range objs {
		lines = append(lines, keyOf(o)+" "+describeObj(o))
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}
