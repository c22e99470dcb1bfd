// Package podsbynode is the lab's capstone: a controller on our informer
// that keeps, in a ConfigMap, how many pods each node runs. It is the shape
// of every Kubernetes controller (k8s.io/kubernetes@v1.37.0/pkg/controller/
// and the sample-controller): event handlers only enqueue keys; a worker
// takes a key from the queue and reconciles it by reading the informer's
// cache (here, the spec.nodeName index), never the event that woke it. That
// is what keeps it exact under churn: events can be merged, repeated, or
// replaced by a relist's DeletedFinalStateUnknown, and the count is still
// computed from the cache, which the informer keeps equal to the server.
//
// Upstream pieces it stands for: k8s.io/client-go@v0.37.0/util/workqueue
// (a queue that holds each key once; ours leaves out rate limiting and
// retries with backoff), and the controllers' syncHandler pattern.
package podsbynode

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/listwatch-labs/listwatch-labs/labs/05-informer/informer"
)

// Publisher is where the controller writes its result: the count of pods on
// one node (0: the node has none, remove it). The cmd writes a ConfigMap;
// tests write a map.
type Publisher interface {
	Publish(ctx context.Context, node string, pods int) error
}

// Controller counts pods per node. Create it with New, register it on a pod
// informer that has the spec.nodeName index, and Run it.
type Controller struct {
	indexer *informer.Indexer
	publish Publisher
	queue   *queue
}

// New returns a controller reading inf's cache; it adds its handler to inf,
// so call it before inf.Run.
func New(inf *informer.SharedIndexInformer, publish Publisher) (*Controller, informer.Registration, error) {
	c := &Controller{indexer: inf.GetIndexer(), publish: publish, queue: newQueue()}
	reg, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { c.enqueueNodeOf(obj) },
		UpdateFunc: func(old, new any) {
			// A pod's node only changes from "" (pending) to a node (bound),
			// but both ends are enqueued: a reconcile of an unchanged node
			// costs one index lookup.
			c.enqueueNodeOf(old)
			c.enqueueNodeOf(new)
		},
		DeleteFunc: func(obj any) {
			// After a relist the informer hands us the last state it knew,
			// wrapped: it still says which node the pod was on.
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			c.enqueueNodeOf(obj)
		},
	})
	return c, reg, err
}

func (c *Controller) enqueueNodeOf(obj any) {
	if pod, ok := obj.(*corev1.Pod); ok && pod.Spec.NodeName != "" {
		c.queue.add(pod.Spec.NodeName)
	}
}

// retryDelay is how long a node whose publish failed waits to be retried.
const retryDelay = 500 * time.Millisecond

// Run reconciles queued nodes until ctx ends.
func (c *Controller) Run(ctx context.Context) {
	go func() {
		<-ctx.Done()
		c.queue.shutDown()
	}()
	for {
		node, ok := c.queue.get()
		if !ok {
			return
		}
		if err := c.reconcile(ctx, node); err != nil && ctx.Err() == nil {
			// Try again later (the apiserver may be restarting). Upstream's
			// rate-limiting queue backs off per key from 5ms to 1000s
			// (`DefaultTypedControllerRateLimiter`:
			// k8s.io/client-go@v0.37.0/util/workqueue/default_rate_limiters.go:50-56);
			// a fixed retryDelay is enough for the lesson.
			timer := time.AfterFunc(retryDelay, func() { c.queue.add(node) })
			context.AfterFunc(ctx, func() { timer.Stop() })
		}
		c.queue.done(node)
	}
}

// reconcile makes the published count of node equal to the cache's.
func (c *Controller) reconcile(ctx context.Context, node string) error {
	keys, err := c.indexer.IndexKeys(informer.NodeNameIndex, node)
	if err != nil {
		return err
	}
	return c.publish.Publish(ctx, node, len(keys))
}

// Counts is what the cache says now: node -> pods, for tests and checks.
func Counts(indexer *informer.Indexer) map[string]int {
	out := map[string]int{}
	for _, node := range indexer.ListIndexFuncValues(informer.NodeNameIndex) {
		keys, _ := indexer.IndexKeys(informer.NodeNameIndex, node)
		out[node] = len(keys)
	}
	return out
}

// Format is counts as "node count" lines, sorted by node.
func Format(counts map[string]int) string {
	nodes := make([]string, 0, len(counts))
	for n, c := range counts {
		if c > 0 {
			nodes = append(nodes, n)
		}
	}
	sort.Strings(nodes)
	var b strings.Builder
	for _, n := range nodes {
		fmt.Fprintf(&b, "%s %d\n", n, counts[n])
	}
	return b.String()
}

// MapPublisher keeps the published counts in memory.
type MapPublisher struct {
	// mu guards counts.
	mu     sync.Mutex
	counts map[string]int
}

// Publish records pods for node.
func (m *MapPublisher) Publish(_ context.Context, node string, pods int) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.counts == nil {
		m.counts = map[string]int{}
	}
	if pods == 0 {
		delete(m.counts, node)
	} else {
		m.counts[node] = pods
	}
	return nil
}

// Counts returns a copy of what was published.
func (m *MapPublisher) Counts() map[string]int {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[string]int, len(m.counts))
	for k, v := range m.counts {
		out[k] = v
	}
	return out
}

// queue holds keys to reconcile, each at most once, and never hands the
// same key to two workers at once (a key added while being processed is
// handed out again after done). Upstream: workqueue.Type's dirty and
// processing sets.
type queue struct {
	// mu guards everything below; cond wakes get.
	mu         sync.Mutex
	cond       sync.Cond
	order      []string
	dirty      map[string]bool
	processing map[string]bool
	shutting   bool
}

func newQueue() *queue {
	q := &queue{dirty: map[string]bool{}, processing: map[string]bool{}}
	q.cond.L = &q.mu
	return q
}

func (q *queue) add(key string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.shutting || q.dirty[key] {
		return
	}
	q.dirty[key] = true
	if !q.processing[key] {
		q.order = append(q.order, key)
		q.cond.Signal()
	}
}

func (q *queue) get() (string, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.order) == 0 && !q.shutting {
		q.cond.Wait()
	}
	if q.shutting {
		return "", false
	}
	key := q.order[0]
	q.order = q.order[1:]
	delete(q.dirty, key)
	q.processing[key] = true
	return key, true
}

func (q *queue) done(key string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.processing, key)
	if q.dirty[key] {
		q.order = append(q.order, key)
		q.cond.Signal()
	}
}

func (q *queue) shutDown() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.shutting = true
	q.cond.Broadcast()
}

// Len is the number of keys waiting.
func (q *queue) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.order)
}
