package informer

// fakeServer is a fake apiserver for one resource (ConfigMaps in one
// namespace), for the unit and differential tests of this package only: it
// keeps objects and an event history, serves LIST (with pages), watches
// (from a resourceVersion, or streaming with sendInitialEvents and the
// k8s.io/initial-events-end bookmark), honours timeoutSeconds, answers 410
// for a compacted resourceVersion, and lets a test end watches, expire them
// and send bookmarks. It is what client-go's tests call a fake
// ListerWatcher; the real apiserver is tested in ../lab_test.go.

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/clock"
)

const fakeNamespace = "ns"

type fakeServer struct {
	clock clock.Clock
	// mu guards everything below.
	mu        sync.Mutex
	rv        int64
	objects   map[string]*corev1.ConfigMap // by name
	history   []watch.Event                // every change, oldest first
	compacted int64                        // watches from before this RV get 410
	watchers  map[*fakeWatcher]bool
	// what was asked, for tests that check the requests
	lists   []metav1.ListOptions
	watches []metav1.ListOptions
	// refuse makes every request fail with connection refused.
	refuse bool
	// pages: continue token -> the rest of a paginated LIST
	pages map[string][]corev1.ConfigMap
	uid   int
}

func newFakeServer(c clock.Clock) *fakeServer {
	if c == nil {
		c = clock.RealClock{}
	}
	return &fakeServer{clock: c, objects: map[string]*corev1.ConfigMap{}, watchers: map[*fakeWatcher]bool{}, pages: map[string][]corev1.ConfigMap{}}
}

// --- the server side: what a test does to the "cluster" ---

func (s *fakeServer) write(t watch.EventType, name, value string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rv++
	var obj *corev1.ConfigMap
	switch t {
	case watch.Added:
		s.uid++
		obj = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: fakeNamespace, UID: types.UID(fmt.Sprintf("uid-%d", s.uid)),
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "test", Operation: metav1.ManagedFieldsOperationApply}}}}
	case watch.Modified:
		obj = s.objects[name].DeepCopy()
	case watch.Deleted:
		obj = s.objects[name].DeepCopy()
	}
	if obj == nil {
		panic(fmt.Sprintf("fakeServer: %s of %s, which does not exist", t, name))
	}
	obj.ResourceVersion = strconv.FormatInt(s.rv, 10)
	if t != watch.Deleted {
		obj.Data = map[string]string{"v": value}
		s.objects[name] = obj
	} else {
		delete(s.objects, name)
	}
	ev := watch.Event{Type: t, Object: obj}
	s.history = append(s.history, ev)
	for w := range s.watchers {
		w.send(copyEvent(ev))
	}
}

func (s *fakeServer) create(name, value string) { s.write(watch.Added, name, value) }
func (s *fakeServer) update(name, value string) { s.write(watch.Modified, name, value) }
func (s *fakeServer) remove(name string)        { s.write(watch.Deleted, name, "") }

// bookmark sends a BOOKMARK at the current RV to watches that allow them.
func (s *fakeServer) bookmark() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for w := range s.watchers {
		if w.bookmarks {
			w.send(bookmarkEvent(s.rv, false))
		}
	}
}

// advance moves the resourceVersion on by n with no event for these
// watches, as writes to other resources move etcd's revision.
func (s *fakeServer) advance(n int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rv += n
}

// endWatches closes every watch normally (as a server's timeout does).
func (s *fakeServer) endWatches() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for w := range s.watchers {
		w.end()
		delete(s.watchers, w)
	}
}

// expire compacts the history and ends every watch with ERROR 410, as the
// apiserver does when a watcher falls out of its window.
func (s *fakeServer) expire() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.compacted = s.rv + 1 // every resourceVersion so far is too old
	for w := range s.watchers {
		w.send(watch.Event{Type: watch.Error, Object: &apierrors.NewResourceExpired("too old resource version").ErrStatus})
		w.end()
		delete(s.watchers, w)
	}
}

func (s *fakeServer) requests() (lists, watches []metav1.ListOptions) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]metav1.ListOptions(nil), s.lists...), append([]metav1.ListOptions(nil), s.watches...)
}

func (s *fakeServer) setRefuse(refuse bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refuse = refuse
}

// --- the client side: cache.ListerWatcherWithContext ---

var errConnectionRefused = fmt.Errorf("dial tcp 127.0.0.1:6443: connect: %w", syscallECONNREFUSED)

func (s *fakeServer) sortedLocked() []corev1.ConfigMap {
	names := make([]string, 0, len(s.objects))
	for n := range s.objects {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make([]corev1.ConfigMap, len(names))
	for i, n := range names {
		out[i] = *s.objects[n].DeepCopy()
	}
	return out
}

func (s *fakeServer) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lists = append(s.lists, opts)
	if s.refuse {
		return nil, errConnectionRefused
	}
	var items []corev1.ConfigMap
	listRV := s.rv
	if opts.Continue != "" {
		rest, ok := s.pages[opts.Continue]
		if !ok {
			return nil, apierrors.NewResourceExpired("continue token expired")
		}
		delete(s.pages, opts.Continue)
		items = rest
		listRV, _ = strconv.ParseInt(opts.Continue[:indexByte(opts.Continue, ':')], 10, 64)
	} else {
		items = s.sortedLocked()
	}
	list := &corev1.ConfigMapList{ListMeta: metav1.ListMeta{ResourceVersion: strconv.FormatInt(listRV, 10)}}
	if opts.Limit > 0 && int64(len(items)) > opts.Limit {
		token := fmt.Sprintf("%d:%d", listRV, len(s.pages)+len(s.lists))
		s.pages[token] = items[opts.Limit:]
		items = items[:opts.Limit]
		list.Continue = token
	}
	list.Items = items
	return list, nil
}

func indexByte(s string, b byte) int {
	for i := 0; i < len(s); i++ {
		if s[i] == b {
			return i
		}
	}
	return len(s)
}

func (s *fakeServer) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.watches = append(s.watches, opts)
	if s.refuse {
		return nil, errConnectionRefused
	}
	from := int64(0)
	if opts.ResourceVersion != "" {
		var err error
		if from, err = strconv.ParseInt(opts.ResourceVersion, 10, 64); err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid resource version %q", opts.ResourceVersion))
		}
	}
	initial := opts.SendInitialEvents != nil && *opts.SendInitialEvents
	if initial && from != 0 && from < s.compacted {
		return nil, apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %d (%d)", from, s.compacted))
	}
	w := newFakeWatcher(opts.AllowWatchBookmarks)
	switch {
	case initial || from == 0:
		for _, obj := range s.sortedLocked() {
			w.send(watch.Event{Type: watch.Added, Object: &obj})
		}
		if initial {
			w.send(bookmarkEvent(s.rv, true))
		}
	case from < s.compacted:
		// The apiserver's watch cache answers 200, then an ERROR event.
		w.send(watch.Event{Type: watch.Error, Object: &apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %d (%d)", from, s.compacted)).ErrStatus})
		w.end()
		return w, nil
	default:
		for _, ev := range s.history {
			if rvOf(ev.Object) > from {
				w.send(copyEvent(ev))
			}
		}
	}
	s.watchers[w] = true
	go func() {
		var timeout <-chan time.Time
		if opts.TimeoutSeconds != nil {
			t := s.clock.NewTimer(time.Duration(*opts.TimeoutSeconds) * time.Second)
			defer t.Stop()
			timeout = t.C()
		}
		select {
		case <-ctx.Done():
			w.Stop()
		case <-timeout:
			s.mu.Lock()
			if s.watchers[w] {
				delete(s.watchers, w)
				w.end()
			}
			s.mu.Unlock()
		case <-w.stopped:
		case <-w.ended:
		}
		s.mu.Lock()
		delete(s.watchers, w)
		s.mu.Unlock()
	}()
	return w, nil
}

func rvOf(obj runtime.Object) int64 {
	switch o := obj.(type) {
	case *corev1.ConfigMap:
		n, _ := strconv.ParseInt(o.ResourceVersion, 10, 64)
		return n
	}
	return 0
}

func copyEvent(ev watch.Event) watch.Event {
	return watch.Event{Type: ev.Type, Object: ev.Object.DeepCopyObject()}
}

func bookmarkEvent(rv int64, initialEventsEnd bool) watch.Event {
	obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{ResourceVersion: strconv.FormatInt(rv, 10)}}
	if initialEventsEnd {
		obj.Annotations = map[string]string{metav1.InitialEventsAnnotationKey: "true"}
	}
	return watch.Event{Type: watch.Bookmark, Object: obj}
}

// fakeWatcher is a watch.Interface whose events queue without bound (a
// server never waits for a slow client in these tests) and are pumped to
// ResultChan by one goroutine.
type fakeWatcher struct {
	bookmarks bool
	result    chan watch.Event
	// mu guards queue and ending.
	mu       sync.Mutex
	queue    []watch.Event
	ending   bool
	wake     chan struct{}
	stopped  chan struct{}
	ended    chan struct{}
	stopOnce sync.Once
	endOnce  sync.Once
}

func newFakeWatcher(bookmarks bool) *fakeWatcher {
	w := &fakeWatcher{bookmarks: bookmarks, result: make(chan watch.Event), wake: make(chan struct{}, 1),
		stopped: make(chan struct{}), ended: make(chan struct{})}
	go w.pump()
	return w
}

func (w *fakeWatcher) send(ev watch.Event) {
	w.mu.Lock()
	w.queue = append(w.queue, ev)
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// end closes the result channel once everything queued is delivered.
func (w *fakeWatcher) end() {
	w.endOnce.Do(func() {
		w.mu.Lock()
		w.ending = true
		w.mu.Unlock()
		close(w.ended)
		select {
		case w.wake <- struct{}{}:
		default:
		}
	})
}

func (w *fakeWatcher) pump() {
	defer close(w.result)
	for {
		w.mu.Lock()
		if len(w.queue) == 0 {
			ending := w.ending
			w.mu.Unlock()
			if ending {
				return
			}
			select {
			case <-w.wake:
				continue
			case <-w.stopped:
				return
			}
		}
		ev := w.queue[0]
		w.queue = w.queue[1:]
		w.mu.Unlock()
		select {
		case w.result <- ev:
		case <-w.stopped:
			return
		}
	}
}

func (w *fakeWatcher) Stop()                          { w.stopOnce.Do(func() { close(w.stopped) }) }
func (w *fakeWatcher) ResultChan() <-chan watch.Event { return w.result }

// List and Watch make the fake a cache.ListerWatcher too, which is what
// client-go's NewSharedIndexInformer takes; it then uses the WithContext
// methods (cache.ToListerWatcherWithContext).
func (s *fakeServer) List(opts metav1.ListOptions) (runtime.Object, error) {
	return s.ListWithContext(context.Background(), opts)
}

func (s *fakeServer) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return s.WatchWithContext(context.Background(), opts)
}
