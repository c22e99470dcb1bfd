package main

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/listwatch-labs/listwatch-labs/labs/02-listwatcher/listwatcher"
	"github.com/listwatch-labs/listwatch-labs/labs/03-watchserver/apiserver"
	"github.com/listwatch-labs/listwatch-labs/labs/04-cacher/miniapiserver"
	"github.com/listwatch-labs/listwatch-labs/labs/05-informer/informer"
)

// namespace is where the view writes its ConfigMaps.
const namespace = "view"

// Stack is the course's stack, as scripts/labs trace builds it: an embedded
// etcd, lab 04's etcd3 store and Cacher, lab 03's API server and
// WatchServer (all in lab 04's miniapiserver), then over HTTP lab 02's
// ListWatch feeding lab 05's SharedIndexInformer, with one handler.
type Stack struct {
	mini    *miniapiserver.Instance
	client  kubernetes.Interface
	inf     *informer.SharedIndexInformer
	streams *streams
	log     *eventLog

	stopInformer context.CancelFunc
	informerDone chan struct{}

	handler handlerStats

	// writes: when each name's latest write was sent, for the handler's lag.
	writesMu sync.Mutex
	writes   map[string]time.Time
	seq      atomic.Int64

	watchersMu sync.Mutex
	watchers   []*viewWatcher
	watcherSeq int

	restarts atomic.Int64
	busy     atomic.Bool // a restart is running

	// real is the real cluster beside the course's stack (real.go), or nil.
	real *realCluster
}

// handlerStats counts the handler's calls and their lag: from the moment
// the view sent the write to the moment the handler saw it (the whole path).
type handlerStats struct {
	mu                     sync.Mutex
	adds, updates, deletes int64
	lastLag                time.Duration
	lags                   []time.Duration // the last 200
}

func (h *handlerStats) record(kind string, lag time.Duration, known bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch kind {
	case "add":
		h.adds++
	case "update":
		h.updates++
	case "delete":
		h.deletes++
	}
	if known {
		h.lastLag = lag
		if len(h.lags) == 200 {
			h.lags = append(h.lags[:0], h.lags[1:]...)
		}
		h.lags = append(h.lags, lag)
	}
}

// startStack starts every layer and waits for the informer's first sync.
// With a kubeconfig it also starts the real cluster's side (real.go), in
// realNamespace there.
func startStack(ctx context.Context, log *eventLog, kubeconfig, realNamespace string) (*Stack, error) {
	s := &Stack{streams: newStreams(), log: log, writes: map[string]time.Time{}}
	mini, err := miniapiserver.Start(miniapiserver.Config{Listen: "127.0.0.1:0", Wrap: s.streams.wrap, ErrorLog: discardLog{}})
	if err != nil {
		return nil, fmt.Errorf("lab 04's miniapiserver: %w", err)
	}
	s.mini = mini
	cfg, err := clientcmd.BuildConfigFromFlags("", mini.KubeconfigPath)
	if err != nil {
		mini.Close()
		return nil, err
	}
	writeCfg := *cfg
	writeCfg.QPS = -1 // a burst of writes is the point; no client-side rate limit
	writeCfg.UserAgent = "view-writer"
	if s.client, err = kubernetes.NewForConfig(&writeCfg); err != nil {
		mini.Close()
		return nil, err
	}
	cfg.UserAgent = "view-informer (lab 02 ListWatch, lab 05 informer)"
	lw, err := listwatcher.New(cfg, "configmaps", namespace)
	if err != nil {
		mini.Close()
		return nil, err
	}
	s.inf = informer.NewSharedIndexInformer(lw, informer.Options{
		Transform: informer.StripManagedFields,
		Indexers:  informer.Indexers{"color": informer.LabelIndexFunc("color")},
		Reflector: informer.ReflectorOptions{WatchErrorHandler: func(err error) {
			s.log.add("Reflector", "error: "+err.Error(), nil)
		}},
	})
	if _, err := s.inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { s.handled("add", obj) },
		UpdateFunc: func(_, obj any) { s.handled("update", obj) },
		DeleteFunc: func(obj any) { s.handled("delete", obj) },
	}); err != nil {
		mini.Close()
		return nil, err
	}
	infCtx, cancel := context.WithCancel(context.Background())
	s.stopInformer, s.informerDone = cancel, make(chan struct{})
	go func() { defer close(s.informerDone); s.inf.Run(infCtx) }()
	syncCtx, cancelSync := context.WithTimeout(ctx, time.Minute)
	defer cancelSync()
	if !cache.WaitForCacheSync(syncCtx.Done(), s.inf.HasSynced) {
		s.Close()
		return nil, errors.New("lab 05's informer did not sync within a minute")
	}
	if kubeconfig != "" {
		if s.real, err = startReal(ctx, kubeconfig, realNamespace, log); err != nil {
			s.Close()
			return nil, err
		}
	}
	return s, nil
}

// Close stops the informer, every watcher and the server, and the real
// cluster's informer.
func (s *Stack) Close() {
	if s.real != nil {
		s.real.Close()
	}
	s.stopInformer()
	<-s.informerDone
	s.watchersMu.Lock()
	for _, w := range s.watchers {
		w.stop()
	}
	s.watchersMu.Unlock()
	s.mini.Close()
}

// handled is the informer's handler: it counts the call and logs the event
// with the path it took.
func (s *Stack) handled(kind string, obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	cm, _ := obj.(*corev1.ConfigMap)
	name, rv := "?", ""
	if cm != nil {
		name, rv = cm.Name, cm.ResourceVersion
	}
	s.writesMu.Lock()
	sent, known := s.writes[name]
	delete(s.writes, name)
	s.writesMu.Unlock()
	lag := time.Since(sent)
	s.handler.record(kind, lag, known)
	text := fmt.Sprintf("On%s %s (RV %s)", map[string]string{"add": "Add", "update": "Update", "delete": "Delete"}[kind], name, rv)
	// The path is known for the view's own writes: each came as a watch
	// event from etcd through every layer. An object the handler meets in a
	// relist came in the Reflector's list (a streaming list: initial events
	// from the Cacher's store), not from etcd just now.
	var path []string
	if known {
		text += fmt.Sprintf(", %.1f ms after the write was sent", float64(lag.Microseconds())/1000)
		path = eventPath
	} else {
		text += ", from a list (not a write of the view's)"
	}
	s.log.add("handler", text, path)
}

// eventPath is the way every event the handler sees has come.
var eventPath = []string{"etcd", "etcd3 watch", "Cacher", "cacheWatcher", "WatchServer", "HTTP", "ListWatch", "Reflector", "RealFIFO", "Indexer", "handler"}

func (s *Stack) sent(name string) {
	s.writesMu.Lock()
	s.writes[name] = time.Now()
	s.writesMu.Unlock()
}

func (s *Stack) newName() string { return fmt.Sprintf("cm-%05d", s.seq.Add(1)) }

// color alternates blue and green, so a label selector has something to
// select.
func color(name string) string {
	if len(name) > 0 && (name[len(name)-1]-'0')%2 == 0 {
		return "blue"
	}
	return "green"
}

// Create writes one new ConfigMap.
func (s *Stack) Create(ctx context.Context) (string, error) {
	name := s.newName()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: map[string]string{"color": color(name)}},
		Data: map[string]string{"v": "1"}}
	s.sent(name)
	_, err := s.client.CoreV1().ConfigMaps(namespace).Create(ctx, cm, metav1.CreateOptions{})
	if err == nil && s.real != nil {
		s.real.create(ctx, cm)
	}
	return name, err
}

// pick returns the name of an object in the informer's cache: the newest
// or the oldest by name.
func (s *Stack) pick(newest bool) (string, bool) {
	keys := s.inf.GetIndexer().ListKeys()
	if len(keys) == 0 {
		return "", false
	}
	sort.Strings(keys)
	k := keys[0]
	if newest {
		k = keys[len(keys)-1]
	}
	_, name, _ := cache.SplitMetaNamespaceKey(k)
	return name, true
}

// Update changes the newest ConfigMap's data.
func (s *Stack) Update(ctx context.Context) (string, error) {
	name, ok := s.pick(true)
	if !ok {
		return "", errors.New("nothing to update: create a ConfigMap first")
	}
	cms := s.client.CoreV1().ConfigMaps(namespace)
	cm, err := cms.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return name, err
	}
	value := fmt.Sprint(time.Now().UnixNano())
	cm.Data["v"] = value
	s.sent(name)
	_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
	if err == nil && s.real != nil {
		s.real.update(ctx, name, value)
	}
	return name, err
}

// Delete removes the oldest ConfigMap.
func (s *Stack) Delete(ctx context.Context) (string, error) {
	name, ok := s.pick(false)
	if !ok {
		return "", errors.New("nothing to delete: create a ConfigMap first")
	}
	s.sent(name)
	err := s.client.CoreV1().ConfigMaps(namespace).Delete(ctx, name, metav1.DeleteOptions{})
	if err == nil && s.real != nil {
		s.real.del(ctx, name)
	}
	return name, err
}

// Burst writes n ConfigMaps from 4 writers at once.
func (s *Stack) Burst(ctx context.Context, n int) (int, error) {
	var wg sync.WaitGroup
	var ok atomic.Int64
	var firstErr atomic.Pointer[error]
	next := make(chan struct{})
	for range 4 {
		wg.Go(func() {
			for range next {
				if _, err := s.Create(ctx); err != nil {
					firstErr.CompareAndSwap(nil, &err)
					continue
				}
				ok.Add(1)
			}
		})
	}
	for range n {
		next <- struct{}{}
	}
	close(next)
	wg.Wait()
	if e := firstErr.Load(); e != nil {
		return int(ok.Load()), *e
	}
	return int(ok.Load()), nil
}

// Compact compacts etcd to its current revision (lab 04's miniapiserver).
func (s *Stack) Compact(ctx context.Context) (int64, error) { return s.mini.Compact(ctx) }

// Restart stops the API server, the Cachers and etcd and starts them again
// on the same data: the informer's watch breaks, its Reflector backs off,
// then watches again from its last resourceVersion. If others > 0, that
// many ConfigMaps are written to etcd while the API server is down, as
// another API server of the same cluster would: the restarted Cacher then
// starts past the informer's resourceVersion, the informer's watch gets 410
// Expired, and its Reflector relists.
func (s *Stack) Restart(others int) error {
	if !s.busy.CompareAndSwap(false, true) {
		return errors.New("a restart is already running")
	}
	defer s.busy.Store(false)
	s.watchersMu.Lock()
	for _, w := range s.watchers {
		w.stop() // in-process watchers hold the old Cacher
	}
	s.watchersMu.Unlock()
	var whileDown func(map[string]storage.Interface) error
	if others > 0 {
		whileDown = func(stores map[string]storage.Interface) error {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			for range others {
				name := "other-" + s.newName()
				cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: map[string]string{"color": color(name)}}}
				if err := stores["configmaps"].Create(ctx, apiserver.ConfigMaps.Key(namespace, name), cm, &corev1.ConfigMap{}, 0); err != nil {
					return err
				}
			}
			s.log.add("etcd", fmt.Sprintf("%d ConfigMaps written straight to etcd while the API server was down (as another API server would)", others), nil)
			return nil
		}
	}
	err := s.mini.RestartWith(whileDown)
	if err == nil {
		s.restarts.Add(1)
	}
	return err
}

// viewWatcher is a watch the learner added, opened in process on the
// ConfigMaps Cacher with mostly the options lab 03's WatchServer would pass
// it (but no request timeout, so no bookmark before one). In process, a slow reader
// is slow at once; behind HTTP, the TCP and HTTP/2 buffers would first hold
// megabytes of events.
type viewWatcher struct {
	ID       int
	Kind     string
	Options  string
	received atomic.Int64
	last     atomic.Pointer[string]
	ended    atomic.Pointer[string]
	w        watch.Interface
	cancel   context.CancelFunc
	done     chan struct{}
}

func (w *viewWatcher) stop() {
	w.cancel()
	w.w.Stop()
	<-w.done
}

// AddWatcher opens a watch on the ConfigMaps Cacher: normal (reads every
// event at once), slow (reads one a second), selector (color=blue), or
// oldrv (from resourceVersion 1, older than the ring holds once it has
// wrapped: 410).
func (s *Stack) AddWatcher(kind string) (*viewWatcher, error) {
	store := s.mini.Storage(apiserver.ConfigMaps)
	if store == nil {
		return nil, errors.New("the API server is restarting")
	}
	st, _ := s.mini.State("configmaps")
	opts := storage.ListOptions{ResourceVersion: fmt.Sprint(st.ResourceVersion), Recursive: true, Predicate: storage.Everything}
	opts.Predicate.AllowWatchBookmarks = true
	desc := "from RV " + opts.ResourceVersion + ", bookmarks"
	switch kind {
	case "normal", "slow":
	case "selector":
		opts.Predicate = storage.SelectionPredicate{Label: labels.SelectorFromSet(labels.Set{"color": "blue"}), Field: storage.Everything.Field,
			GetAttrs: apiserver.ConfigMaps.GetAttrsFunc, AllowWatchBookmarks: true}
		desc = "color=blue, " + desc
	case "oldrv":
		opts.ResourceVersion = "1"
		desc = "from RV 1, bookmarks"
	default:
		return nil, fmt.Errorf("unknown watcher kind %q: want normal, slow, selector or oldrv", kind)
	}
	ctx, cancel := context.WithCancel(context.Background())
	w, err := store.Watch(ctx, apiserver.ConfigMaps.KeyRoot(namespace), opts)
	if err != nil {
		cancel()
		return nil, err
	}
	s.watchersMu.Lock()
	s.watcherSeq++
	vw := &viewWatcher{ID: s.watcherSeq, Kind: kind, Options: desc, w: w, cancel: cancel, done: make(chan struct{})}
	s.watchers = append(s.watchers, vw)
	s.watchersMu.Unlock()
	go s.consume(ctx, vw)
	return vw, nil
}

func (s *Stack) consume(ctx context.Context, vw *viewWatcher) {
	defer close(vw.done)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		if vw.Kind == "slow" {
			select {
			case <-tick.C:
			case <-ctx.Done():
				vw.ended.CompareAndSwap(nil, ptr("stopped"))
				return
			}
		}
		select {
		case ev, ok := <-vw.w.ResultChan():
			if !ok {
				vw.ended.CompareAndSwap(nil, ptr("its stream ended (the Cacher closed it)"))
				s.log.add("watcher", fmt.Sprintf("watcher %d (%s): stream closed by the Cacher", vw.ID, vw.Kind), nil)
				return
			}
			vw.received.Add(1)
			text := describeEvent(ev)
			vw.last.Store(&text)
			if ev.Type == watch.Error {
				vw.ended.CompareAndSwap(nil, ptr(text))
				s.log.add("watcher", fmt.Sprintf("watcher %d (%s): %s", vw.ID, vw.Kind, text), nil)
			}
		case <-ctx.Done():
			vw.ended.CompareAndSwap(nil, ptr("stopped"))
			return
		}
	}
}

func describeEvent(ev watch.Event) string {
	if st, ok := ev.Object.(*metav1.Status); ok {
		return fmt.Sprintf("ERROR %d %s: %s", st.Code, st.Reason, st.Message)
	}
	if m, ok := ev.Object.(metav1.Object); ok {
		if ev.Type == watch.Bookmark {
			return fmt.Sprintf("BOOKMARK at RV %s", m.GetResourceVersion())
		}
		return fmt.Sprintf("%s %s (RV %s)", ev.Type, m.GetName(), m.GetResourceVersion())
	}
	return string(ev.Type)
}

func ptr[T any](v T) *T { return &v }

type discardLog struct{}

func (discardLog) Write(p []byte) (int, error) { return len(p), nil }

// StopWatcher stops a watcher the learner added.
func (s *Stack) StopWatcher(id int) error {
	s.watchersMu.Lock()
	defer s.watchersMu.Unlock()
	for _, w := range s.watchers {
		if w.ID == id {
			w.stop()
			return nil
		}
	}
	return fmt.Errorf("no watcher %d", id)
}
