package robustness

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// Config is one run's shape. Every random choice comes from Seed: each
// writer, watcher slot and the fault schedule draws from its own stream
// (rand.NewPCG(Seed, n)), so a seed replays the same operations; what the
// servers' timing makes of them can differ.
type Config struct {
	Seed      int64
	Duration  time.Duration
	Writers   int // each owns Keys/Writers of the ConfigMaps, Pods/Writers of the Pods
	Keys      int // ConfigMaps key-00 … key-NN
	Pods      int // Pods pod-00 … pod-NN, each on node-a or node-b
	Watchers  int // watcher slots, each opening one watch after another
	Namespace string
	// Faults is how many faults to inject, spread over the run.
	Faults int
}

// Target is a stack to run against: where its clients connect, the faults
// it can take, and the informers to run on it.
type Target struct {
	Name string
	// Config reaches the API server (through the fault proxy, when the
	// target has one).
	Config *rest.Config
	// Faults by kind; each returns what it did, for the history. Writes
	// a fault makes itself (another API server writing while this one is
	// down) are returned too.
	Faults map[string]func(ctx context.Context) (string, []Write, error)
	// Informers builds the informers to run: each gets an ID and a
	// recorder for its handler, and returns its spec, a way to read its
	// cache, and its Run.
	Informers []func(id int, rec HandlerRecorder) (InformerSpec, func() map[string]Object, func(ctx context.Context))
}

// HandlerRecorder records a handler call.
type HandlerRecorder func(kind HandlerKind, obj any)

// recorder collects the history; every method is safe for concurrent use.
type recorder struct {
	start time.Time
	mu    sync.Mutex
	h     History
	ids   int
}

func (r *recorder) since() time.Duration { return time.Since(r.start) }

func (r *recorder) nextID() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ids++
	return r.ids
}

func (r *recorder) write(w Write) {
	r.mu.Lock()
	r.h.Writes = append(r.h.Writes, w)
	r.mu.Unlock()
}

func (r *recorder) event(e Event) {
	r.mu.Lock()
	r.h.Events = append(r.h.Events, e)
	r.mu.Unlock()
}

// Run drives cfg's workload against t while it injects faults, and returns
// the history. It ends with a LIST and each informer's cache, once the
// informers have caught up with the LIST or a minute has passed.
func Run(ctx context.Context, t Target, cfg Config) (*History, error) {
	client, err := kubernetes.NewForConfig(t.Config)
	if err != nil {
		return nil, err
	}
	rec := &recorder{start: time.Now(), h: History{Seed: cfg.Seed, Finals: map[int]map[string]Object{}}}
	runCtx, stopWorkload := context.WithTimeout(ctx, cfg.Duration)
	defer stopWorkload()
	watchCtx, stopWatchers := context.WithCancel(ctx)
	defer stopWatchers()
	infCtx, stopInformers := context.WithCancel(ctx)
	defer stopInformers()

	// Informers first, so they see the run from its start.
	var infWG sync.WaitGroup
	caches := map[int]func() map[string]Object{}
	for i, mk := range t.Informers {
		id := i + 1
		spec, cacheOf, run := mk(id, func(kind HandlerKind, obj any) {
			c := HandlerCall{Informer: id, At: rec.since(), Kind: kind}
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				c.Tombstone, obj = true, d.Obj
			}
			if o, ok := fieldsOf(obj); ok {
				c.Key, c.RV, c.Value = o.key, o.rv, o.value
			}
			rec.mu.Lock()
			rec.h.Calls = append(rec.h.Calls, c)
			rec.mu.Unlock()
		})
		rec.h.Informers = append(rec.h.Informers, spec)
		caches[id] = cacheOf
		infWG.Go(func() { run(infCtx) })
	}

	var wg sync.WaitGroup
	for w := range cfg.Writers {
		wg.Go(func() { writer(runCtx, rec, client, cfg, w) })
	}
	var watchWG sync.WaitGroup
	for s := range cfg.Watchers {
		watchWG.Go(func() { watcherSlot(watchCtx, runCtx, rec, client, cfg, s) })
	}
	wg.Go(func() { injectFaults(runCtx, rec, t, cfg) })
	wg.Wait()

	// The end: a LIST, then the informers' caches once they hold it. At
	// RV "" the LIST is a consistent read, which kube-apiserver serves
	// from its watch cache wherever etcd reports progress
	// (`ShouldDelegateConsistentRead`,
	// k8s.io/apiserver@v0.37.0/pkg/storage/cacher/cacher.go:1467-1472): the
	// gate that turned this on, ConsistentListFromCache, was GA and locked
	// on from 1.34 and is gone in 1.37. A
	// write whose answer was lost can still be applied after the LIST: when
	// a request times out, the apiserver answers 504 but its handler goes
	// on (`NewTimeoutError`,
	// k8s.io/apiserver@v0.37.0/pkg/endpoints/handlers/finisher/finisher.go:127-146).
	// So the LIST is taken again until the caches hold the newest one, or
	// a minute has passed: then the last one stands.
	// Each informer must hold what the LISTs hold for its selector.
	sels := map[int]selector{}
	for _, inf := range rec.h.Informers {
		sel, err := parseSelector(inf.Resource, inf.Selector, inf.FieldSelector)
		if err != nil {
			return nil, fmt.Errorf("informer %d: %v", inf.ID, err)
		}
		sels[inf.ID] = sel
	}
	listCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	listed := false
	_ = wait.PollUntilContextTimeout(listCtx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		cms, err := client.CoreV1().ConfigMaps(cfg.Namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		pods, err := client.CoreV1().Pods(cfg.Namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		listed = true
		rec.h.FinalListAt = rec.since()
		rec.h.FinalList = map[string]Object{}
		objs := map[string]objectFields{}
		for i := range cms.Items {
			objs[cms.Items[i].Namespace+"/"+cms.Items[i].Name], _ = fieldsOf(&cms.Items[i])
		}
		for i := range pods.Items {
			objs[pods.Items[i].Namespace+"/"+pods.Items[i].Name], _ = fieldsOf(&pods.Items[i])
		}
		for key, o := range objs {
			rec.h.FinalList[key] = Object{RV: o.rv, Value: o.value}
		}
		rec.h.FinalListRV = min(rvOf(cms.ResourceVersion), rvOf(pods.ResourceVersion))
		for id, cacheOf := range caches {
			want := map[string]Object{}
			for key, o := range objs {
				if sels[id].matches(key, version{exists: true, resource: o.resource, labels: o.labels, node: o.node}) {
					want[key] = rec.h.FinalList[key]
				}
			}
			if !sameCache(cacheOf(), want) {
				return false, nil
			}
		}
		return true, nil
	})
	if !listed {
		return nil, fmt.Errorf("the final LIST: no answer within a minute")
	}
	for id, cacheOf := range caches {
		rec.h.Finals[id] = cacheOf()
	}
	stopWatchers()
	watchWG.Wait()
	stopInformers()
	infWG.Wait()
	return &rec.h, nil
}

func sameCache(a, b map[string]Object) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// objectFields is what the history keeps of a ConfigMap or a Pod.
type objectFields struct {
	resource string
	key      string // namespace/name
	rv       uint64
	// value is a ConfigMap's data["v"] or a Pod's annotation "v": the
	// write that made this version.
	value  string
	labels map[string]string
	node   string // a Pod's spec.nodeName
}

func fieldsOf(obj any) (objectFields, bool) {
	switch o := obj.(type) {
	case *corev1.ConfigMap:
		return objectFields{resource: "configmaps", key: o.Namespace + "/" + o.Name, rv: rvOf(o.ResourceVersion), value: o.Data["v"], labels: o.Labels}, true
	case *corev1.Pod:
		return objectFields{resource: "pods", key: o.Namespace + "/" + o.Name, rv: rvOf(o.ResourceVersion), value: o.Annotations["v"], labels: o.Labels, node: o.Spec.NodeName}, true
	}
	return objectFields{}, false
}

func rvOf(s string) uint64 {
	n, _ := strconv.ParseUint(s, 10, 64)
	return n
}

func colorOf(rng *rand.Rand) string {
	if rng.IntN(2) == 0 {
		return "blue"
	}
	return "green"
}

// writer creates, relabels, updates and deletes its own ConfigMaps and
// Pods. It keeps what it believes of each, and learns from every answer (a
// refused create: it exists; a refused patch: it does not).
//
// A Pod is created already bound to a node: spec.nodeName is set in the
// create, which the API accepts (a scheduler sets it through the
// pods/binding subresource instead, `setPodNodeAndMetadata`,
// k8s.io/kubernetes@v1.37.0/pkg/registry/core/pod/storage/storage.go:213-245,
// which also adds a PodScheduled condition these Pods lack). No kubelet
// runs it. It is deleted with gracePeriodSeconds=0: a bound Pod's period
// is otherwise its terminationGracePeriodSeconds (`CheckGracefulDelete`,
// k8s.io/kubernetes@v1.37.0/pkg/registry/core/pod/strategy.go:175-206),
// and a delete with a period above 0 only marks the Pod, leaving it until
// another DELETE removes it; with 0 (and no finalizers) the same request
// marks it and then deletes it, two writes (`Delete`,
// k8s.io/apiserver@v0.37.0/pkg/registry/generic/registry/store.go:1246-1279;
// see `placeMarks` in check.go). An update changes only its labels and its
// annotation "v": a Pod's spec can barely change
// (`ValidatePodUpdate`,
// k8s.io/kubernetes@v1.37.0/pkg/apis/core/validation/validation.go:5849-6001).
func writer(ctx context.Context, rec *recorder, client kubernetes.Interface, cfg Config, n int) {
	rng := rand.New(rand.NewPCG(uint64(cfg.Seed), uint64(100+n)))
	cms := client.CoreV1().ConfigMaps(cfg.Namespace)
	pods := client.CoreV1().Pods(cfg.Namespace)
	exists := map[string]bool{}
	node := map[string]string{} // the node of each Pod's last create
	var keys []string
	for k := n; k < cfg.Keys; k += cfg.Writers {
		keys = append(keys, fmt.Sprintf("key-%02d", k))
	}
	for k := n; k < cfg.Pods; k += cfg.Writers {
		keys = append(keys, fmt.Sprintf("pod-%02d", k))
	}
	// About a hundred writes a second per writer: enough to keep every
	// watcher busy, few enough for porcupine and the history's size.
	pace := time.NewTicker(10 * time.Millisecond)
	defer pace.Stop()
	// After a write with no answer, the writer waits before the next, 50 ms
	// doubling to 1 s: like a controller's per-item rate limiter, with
	// smaller numbers. client-go's default per-item limiter goes from 5 ms
	// to 1000 s (`DefaultTypedControllerRateLimiter`,
	// k8s.io/client-go@v0.37.0/util/workqueue/default_rate_limiters.go:50-56).
	// While the server is down every request fails at once, and each one
	// may or may not have been applied (the model must branch on it), so a
	// writer that kept its pace would fill the history with hundreds of
	// them.
	var backoff time.Duration
	for ctx.Err() == nil {
		select {
		case <-ctx.Done():
			return
		case <-pace.C:
		}
		if backoff > 0 {
			t := time.NewTimer(backoff)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
		}
		name := keys[rng.IntN(len(keys))]
		id := rec.nextID()
		w := Write{ID: id, Client: n, Key: cfg.Namespace + "/" + name, Start: rec.since()}
		isPod := strings.HasPrefix(name, "pod-")
		if isPod {
			w.Resource = "pods"
		}
		var rv string
		var err error
		// Not ctx: a request under way when the run ends finishes, so
		// writes end Unknown only by a fault.
		reqCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		switch {
		case !exists[name]:
			w.Op, w.Value, w.Labels = Create, "w"+strconv.Itoa(id), map[string]string{"color": colorOf(rng)}
			meta := metav1.ObjectMeta{Name: name, Labels: w.Labels}
			if isPod {
				w.Node = []string{"node-a", "node-b"}[rng.IntN(2)]
				meta.Annotations = map[string]string{"v": w.Value}
				var p *corev1.Pod
				p, err = pods.Create(reqCtx, &corev1.Pod{ObjectMeta: meta, Spec: corev1.PodSpec{
					NodeName:   w.Node,
					Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause"}},
				}}, metav1.CreateOptions{})
				if err == nil {
					rv = p.ResourceVersion
				}
			} else {
				var cm *corev1.ConfigMap
				cm, err = cms.Create(reqCtx, &corev1.ConfigMap{ObjectMeta: meta, Data: map[string]string{"v": w.Value}}, metav1.CreateOptions{})
				if err == nil {
					rv = cm.ResourceVersion
				}
			}
		case rng.IntN(4) == 0:
			w.Op = Delete
			if isPod {
				err = pods.Delete(reqCtx, name, metav1.DeleteOptions{GracePeriodSeconds: new(int64(0))})
			} else {
				err = cms.Delete(reqCtx, name, metav1.DeleteOptions{})
			}
		default:
			w.Op, w.Value, w.Labels = Update, "w"+strconv.Itoa(id), map[string]string{"color": colorOf(rng)}
			if isPod {
				w.Node = node[name]
				patch := fmt.Appendf(nil, `{"metadata":{"labels":{"color":%q},"annotations":{"v":%q}}}`, w.Labels["color"], w.Value)
				var p *corev1.Pod
				p, err = pods.Patch(reqCtx, name, types.MergePatchType, patch, metav1.PatchOptions{})
				if err == nil {
					rv = p.ResourceVersion
				}
			} else {
				patch := fmt.Appendf(nil, `{"metadata":{"labels":{"color":%q}},"data":{"v":%q}}`, w.Labels["color"], w.Value)
				var cm *corev1.ConfigMap
				cm, err = cms.Patch(reqCtx, name, types.MergePatchType, patch, metav1.PatchOptions{})
				if err == nil {
					rv = cm.ResourceVersion
				}
			}
		}
		cancel()
		w.End = rec.since()
		switch {
		case err == nil && w.Op == Delete:
			// client-go's typed `Delete` returns only an error, no
			// object, so no RV
			// (k8s.io/client-go@v0.37.0/gentype/type.go:250-258): the
			// events place it.
			w.Outcome = Applied
			exists[name] = false
		case err == nil:
			w.Outcome, w.RV = OK, rvOf(rv)
			exists[name] = true
		case apierrors.IsAlreadyExists(err):
			w.Outcome, w.Err = Failed, "AlreadyExists"
			exists[name] = true
		case apierrors.IsNotFound(err):
			w.Outcome, w.Err = Failed, "NotFound"
			exists[name] = false
		default:
			// No answer, or an answer that does not say whether it was
			// applied: either may be. A 500 says nothing of it, and a 504
			// after the request's timeout leaves the handler running
			// (`NewTimeoutError`,
			// k8s.io/apiserver@v0.37.0/pkg/endpoints/handlers/finisher/finisher.go:127-146).
			w.Outcome, w.Err = Unknown, err.Error()
			if w.Op == Create {
				exists[name] = rng.IntN(2) == 0 // a guess; the next answer corrects it
			}
		}
		if w.Op == Create && w.Outcome != Failed {
			node[name] = w.Node
		}
		if w.Outcome == Unknown {
			backoff = min(max(2*backoff, 50*time.Millisecond), time.Second)
		} else {
			backoff = 0
		}
		rec.write(w)
	}
}

// watcherSlot opens one watch after another until watchCtx ends (new
// watches stop when runCtx does): each either resumes from the last RV the
// previous one saw, or is a new kind of watch.
func watcherSlot(watchCtx, runCtx context.Context, rec *recorder, client kubernetes.Interface, cfg Config, n int) {
	rng := rand.New(rand.NewPCG(uint64(cfg.Seed), uint64(200+n)))
	resume := ""
	for runCtx.Err() == nil {
		spec := WatchSpec{ID: rec.nextID(), Bookmarks: rng.IntN(2) == 0, Slow: rng.IntN(8) == 0}
		// One watch in three is of Pods. A resourceVersion is etcd's
		// revision, one sequence for every resource (the etcd3 store
		// gives an object its key's `ModRevision`,
		// k8s.io/apiserver@v0.37.0/pkg/storage/etcd3/store.go:273), so a
		// slot may resume a Pod watch from the last RV of a ConfigMap
		// watch.
		var w resourceWatcher = client.CoreV1().ConfigMaps(cfg.Namespace)
		if cfg.Pods > 0 && rng.IntN(3) == 0 {
			spec.Resource, w = "pods", client.CoreV1().Pods(cfg.Namespace)
		}
		switch k := rng.IntN(7); {
		case resume != "" && k < 2:
			spec.StartRV = resume
		case k == 2:
			spec.StartRV = "0"
		case k == 3:
			spec.SendInitialEvents, spec.Bookmarks = true, true
		case k == 4:
			spec.Selector = "color=blue"
			if resume != "" {
				spec.StartRV = resume
			}
		case k == 5:
			// One object by name, the field selector every resource
			// serves: what `kubectl get cm NAME -w` asks for
			// (`WatchSingle`,
			// k8s.io/cli-runtime@v0.37.0/pkg/resource/helper.go:173-182).
			spec.FieldSelector = fmt.Sprintf("metadata.name=key-%02d", rng.IntN(cfg.Keys))
			if spec.Resource == "pods" {
				spec.FieldSelector = fmt.Sprintf("metadata.name=pod-%02d", rng.IntN(cfg.Pods))
				if rng.IntN(2) == 0 {
					// The Pods of one node: what each kubelet lists and
					// watches (`NewSourceApiserver`,
					// k8s.io/kubernetes@v1.37.0/pkg/kubelet/config/apiserver.go:35-37).
					// The pod registry gives the Cacher a `TriggerFunc` on
					// spec.nodeName
					// (k8s.io/kubernetes@v1.37.0/pkg/registry/core/pod/storage/storage.go:96),
					// so a watch that asks for one node is filed under it
					// (`triggerValue`,
					// k8s.io/apiserver@v0.37.0/pkg/storage/cacher/cacher.go:555-565)
					// and an event wakes only the watchers of its node,
					// the old and the new, and those without a node
					// (`valueWatchers`,
					// k8s.io/apiserver@v0.37.0/pkg/storage/cacher/cacher.go:1128-1138).
					spec.FieldSelector = "spec.nodeName=" + []string{"node-a", "node-b"}[rng.IntN(2)]
				}
			}
			if resume != "" && rng.IntN(2) == 0 {
				spec.StartRV = resume
			}
		}
		timeout := int64(2 + rng.IntN(6))
		opts := metav1.ListOptions{ResourceVersion: spec.StartRV, LabelSelector: spec.Selector, FieldSelector: spec.FieldSelector, AllowWatchBookmarks: spec.Bookmarks, TimeoutSeconds: &timeout}
		if spec.SendInitialEvents {
			opts.SendInitialEvents = new(true)
			opts.ResourceVersionMatch = metav1.ResourceVersionMatchNotOlderThan
		}
		spec.Start = rec.since()
		rec.mu.Lock()
		rec.h.Watches = append(rec.h.Watches, spec)
		rec.mu.Unlock()
		last, err := watchOnce(watchCtx, rec, w, spec, opts)
		end := WatchEnd{Watcher: spec.ID, At: rec.since()}
		if err != nil {
			end.Err = err.Error()
		}
		rec.mu.Lock()
		rec.h.Ends = append(rec.h.Ends, end)
		rec.mu.Unlock()
		if last != 0 {
			resume = strconv.FormatUint(last, 10)
		}
		if err != nil && watchCtx.Err() == nil {
			// A refused watch (the server restarting): try again shortly.
			select {
			case <-watchCtx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
}

// resourceWatcher is the Watch of client-go's typed client for ConfigMaps
// or Pods.
type resourceWatcher interface {
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
}

// watchOnce records one watch's events; it returns the last RV seen.
func watchOnce(ctx context.Context, rec *recorder, rw resourceWatcher, spec WatchSpec, opts metav1.ListOptions) (uint64, error) {
	w, err := rw.Watch(ctx, opts)
	if err != nil {
		return 0, err
	}
	defer w.Stop()
	var last uint64
	for {
		select {
		case <-ctx.Done():
			return last, nil
		case ev, ok := <-w.ResultChan():
			if !ok {
				return last, nil
			}
			e := Event{Watcher: spec.ID, At: rec.since(), Type: EventType(ev.Type)}
			if o, ok := fieldsOf(ev.Object); ok {
				e.RV = o.rv
				if ev.Type == watch.Bookmark {
					e.InitialEventsEnd = ev.Object.(metav1.Object).GetAnnotations()[metav1.InitialEventsAnnotationKey] == "true"
				} else {
					e.Key, e.Value, e.Labels = o.key, o.value, o.labels
				}
				last = e.RV
			} else if st, ok := ev.Object.(*metav1.Status); ok {
				e.Code = int(st.Code)
			} else {
				e.Type = Error
			}
			rec.event(e)
			if ev.Type == watch.Error {
				return last, errors.New("ERROR event")
			}
			if spec.Slow {
				// A consumer that falls behind: 20 ms an event is a
				// fifth of the writers' pace.
				t := time.NewTimer(20 * time.Millisecond)
				select {
				case <-ctx.Done():
					t.Stop()
					return last, nil
				case <-t.C:
				}
			}
		}
	}
}

// injectFaults spreads cfg.Faults faults over the run, each of a kind
// drawn from the target's.
func injectFaults(ctx context.Context, rec *recorder, t Target, cfg Config) {
	if cfg.Faults == 0 || len(t.Faults) == 0 {
		return
	}
	rng := rand.New(rand.NewPCG(uint64(cfg.Seed), 300))
	var kinds []string
	for k := range t.Faults {
		kinds = append(kinds, k)
	}
	slices.Sort(kinds)
	gap := cfg.Duration / time.Duration(cfg.Faults+1)
	for range cfg.Faults {
		select {
		case <-ctx.Done():
			return
		case <-time.After(gap/2 + time.Duration(rng.Int64N(int64(gap)))):
		}
		kind := kinds[rng.IntN(len(kinds))]
		at := rec.since()
		// Not ctx: a fault under way when the run ends completes (a
		// restart half done would leave the next run a broken stack).
		fctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		detail, writes, err := t.Faults[kind](fctx)
		cancel()
		if err != nil {
			detail = "failed: " + err.Error()
		}
		end := rec.since()
		detail += fmt.Sprintf(" (%.1fs)", (end - at).Seconds())
		for _, w := range writes {
			// Another API server's writes: sent and answered within the
			// fault.
			w.ID, w.Start, w.End = rec.nextID(), at, end
			rec.write(w)
		}
		rec.mu.Lock()
		rec.h.Faults = append(rec.h.Faults, Fault{At: at, Kind: kind, Detail: detail})
		rec.mu.Unlock()
	}
}
