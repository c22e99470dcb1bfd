package informer

// TestRecordFixtures records the fixtures of TestDifferentialRecorded from
// a real cluster: a private labcluster (etcd and kube-apiserver, started
// by labkit.StartEmbedded for this test, as a script's privatecluster is,
// so that restarting its apiserver and compacting its etcd disturbs no
// one). It is off by default; re-record with
//
//	cd labs/05-informer/informer && go test -run TestRecordFixtures -args -record
//
// Each scenario runs client-go's SharedIndexInformer (v0.37.0 defaults)
// over client-go's own ListWatch for ConfigMaps labelled app=demo in a
// namespace of its own, with a recordingListerWatcher in between that
// writes down every call the Reflector makes and everything it gets back,
// while the scenario changes ConfigMaps, cuts the connection, compacts
// etcd or restarts the apiserver. There is no upstream twin: client-go's
// tests script their fakes (tools/cache/testing's FakeControllerSource)
// instead of recording a server.

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/listwatch-labs/listwatch-labs/labkit"
)

var record = flag.Bool("record", false, "TestRecordFixtures: record "+recordedDir+" from a private embedded cluster")

// recordingListerWatcher passes LIST and WATCH calls to a real
// ListerWatcher and writes down each call, each event the caller received
// (after it received it), and how each call ended. It can also cut the
// open watch and hold new calls until resumed: what labkit's `tcpproxy
// cut` does to a client, except that a held call waits instead of being
// refused, so the recording does not depend on how many times a backoff
// retried.
type recordingListerWatcher struct {
	withoutContext // List and Watch, for client-go's NewSharedIndexInformer

	lw        cache.ListerWatcherWithContext
	streaming bool
	// watchTimeout, if set, replaces the timeoutSeconds of every watch, so
	// that the server ends watches within the recording.
	watchTimeout int64
	namespace    string

	// mu guards everything below.
	mu      sync.Mutex
	lines   []fixtureLine
	calls   int
	uids    map[types.UID]string
	lastRV  int64         // of the last event or list the caller received
	held    chan struct{} // non-nil while cut: closed by resume
	current *recordingWatch
	ended   bool // finish was called: record nothing more
}

// IsWatchListSemanticsUnSupported turns the streaming list off in
// client-go's Reflector (watchlist.DoesClientNotSupportWatchListSemantics)
// for the LIST scenarios.
func (r *recordingListerWatcher) IsWatchListSemanticsUnSupported() bool { return !r.streaming }

func (r *recordingListerWatcher) add(l fixtureLine) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.ended {
		r.lines = append(r.lines, l)
	}
}

func (r *recordingListerWatcher) note(format string, args ...any) {
	r.add(fixtureLine{Note: fmt.Sprintf(format, args...)})
}

// begin records a call and waits while the connection is cut.
func (r *recordingListerWatcher) begin(ctx context.Context, verb string, opts metav1.ListOptions) error {
	opts.TimeoutSeconds = nil
	r.mu.Lock()
	r.calls++
	if !r.ended {
		r.lines = append(r.lines, fixtureLine{Call: r.calls, Verb: verb, Options: &opts})
	}
	held := r.held
	r.mu.Unlock()
	if held != nil {
		select {
		case <-held:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

func (r *recordingListerWatcher) endWithError(err error) {
	l := fixtureLine{End: endError}
	var status apierrors.APIStatus
	switch {
	case utilnet.IsConnectionRefused(err):
		l.Error = errorConnectionRefused
	case errors.As(err, &status):
		s := status.Status()
		l.Status = &s
	default:
		l.Error = regexp.MustCompile(`127\.0\.0\.1:\d+`).ReplaceAllString(err.Error(), "127.0.0.1:6443")
	}
	r.add(l)
}

// normalize makes an object stable across recordings: the namespace is
// "ns", uids are numbered in order of appearance, and the creation
// timestamp, managedFields and type meta go. resourceVersions stay as the
// apiserver gave them.
func (r *recordingListerWatcher) normalize(obj runtime.Object) json.RawMessage {
	if cm, ok := obj.(*corev1.ConfigMap); ok {
		cm = cm.DeepCopy()
		cm.TypeMeta = metav1.TypeMeta{}
		if cm.Namespace != "" {
			cm.Namespace = fakeNamespace
		}
		if cm.UID != "" {
			r.mu.Lock()
			if r.uids[cm.UID] == "" {
				r.uids[cm.UID] = fmt.Sprintf("uid-%d", len(r.uids)+1)
			}
			cm.UID = types.UID(r.uids[cm.UID])
			r.mu.Unlock()
		}
		cm.CreationTimestamp = metav1.Time{}
		cm.ManagedFields = nil
		obj = cm
	}
	b, err := json.Marshal(obj)
	if err != nil {
		panic(err)
	}
	var m map[string]any
	if json.Unmarshal(b, &m) == nil {
		if md, ok := m["metadata"].(map[string]any); ok && md["creationTimestamp"] == nil {
			delete(md, "creationTimestamp")
		}
		b, _ = json.Marshal(m)
	}
	return json.RawMessage(strings.ReplaceAll(string(b), r.namespace, fakeNamespace))
}

func (r *recordingListerWatcher) seen(rv string) {
	n, err := strconv.ParseInt(rv, 10, 64)
	if err != nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lastRV = max(r.lastRV, n)
}

func (r *recordingListerWatcher) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	if err := r.begin(ctx, "LIST", opts); err != nil {
		return nil, err
	}
	obj, err := r.lw.ListWithContext(ctx, opts)
	if err != nil {
		r.endWithError(err)
		return nil, err
	}
	list := obj.(*corev1.ConfigMapList)
	for i := range list.Items {
		r.add(fixtureLine{Item: r.normalize(&list.Items[i])})
	}
	r.add(fixtureLine{End: endList, ResourceVersion: list.ResourceVersion, Continue: list.Continue})
	r.seen(list.ResourceVersion)
	return list, nil
}

func (r *recordingListerWatcher) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	start := time.Now()
	if err := r.begin(ctx, "WATCH", opts); err != nil {
		return nil, err
	}
	if r.watchTimeout > 0 {
		opts.TimeoutSeconds = &r.watchTimeout
	}
	inner, err := r.lw.WatchWithContext(ctx, opts)
	if err != nil {
		r.endWithError(err)
		return nil, err
	}
	w := &recordingWatch{r: r, inner: inner, start: start, result: make(chan watch.Event),
		stop: make(chan struct{}), cut: make(chan struct{}), done: make(chan struct{})}
	r.mu.Lock()
	r.current = w
	r.mu.Unlock()
	go w.pump()
	return w, nil
}

// recordingWatch forwards a real watch's events one by one and records
// each once the caller has taken it.
type recordingWatch struct {
	r                *recordingListerWatcher
	inner            watch.Interface
	start            time.Time
	result           chan watch.Event
	stop, cut, done  chan struct{}
	stopOnce, cutOne sync.Once
}

func (w *recordingWatch) pump() {
	defer close(w.done)
	defer close(w.result)
	defer w.inner.Stop()
	end := func(how string) {
		ms := time.Since(w.start).Milliseconds()
		w.r.add(fixtureLine{End: how, AfterMs: &ms})
	}
	// One event at a time: received from the server (in), then handed to
	// the caller (out); the nil channel of the other side is never ready.
	var next watch.Event
	in, out := w.inner.ResultChan(), chan watch.Event(nil)
	for {
		select {
		case ev, ok := <-in:
			if !ok {
				end(endClosedByServer)
				return
			}
			next, in, out = ev, nil, w.result
		case out <- next:
			w.r.add(fixtureLine{Event: next.Type, Object: w.r.normalize(next.Object)})
			if m, err := metaAccessor(next.Object); err == nil {
				w.r.seen(m.GetResourceVersion())
			}
			in, out = w.inner.ResultChan(), nil
		case <-w.stop:
			end(endStopped)
			return
		case <-w.cut:
			end(endCut)
			return
		}
	}
}

func metaAccessor(obj runtime.Object) (metav1.Object, error) {
	m, ok := obj.(metav1.Object)
	if !ok {
		return nil, fmt.Errorf("%T has no metadata", obj)
	}
	return m, nil
}

func (w *recordingWatch) Stop()                          { w.stopOnce.Do(func() { close(w.stop) }) }
func (w *recordingWatch) ResultChan() <-chan watch.Event { return w.result }

// cut closes the open watch (the caller sees its channel close, as on a
// dropped connection) and holds every new call until resume.
func (r *recordingListerWatcher) cut() {
	r.mu.Lock()
	r.held = make(chan struct{})
	w := r.current
	r.mu.Unlock()
	if w != nil {
		w.cutOne.Do(func() { close(w.cut) })
		<-w.done
	}
}

func (r *recordingListerWatcher) resume() {
	r.mu.Lock()
	defer r.mu.Unlock()
	close(r.held)
	r.held = nil
}

// finish marks the open watch as open at the end, and records nothing more.
func (r *recordingListerWatcher) finish() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if w := r.current; w != nil {
		select {
		case <-w.done:
		default:
			ms := time.Since(w.start).Milliseconds()
			r.lines = append(r.lines, fixtureLine{End: endOpen, AfterMs: &ms})
		}
	}
	r.ended = true
}

func (r *recordingListerWatcher) state() (calls int, lastRV int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls, r.lastRV
}

// recordScenario is one fixture: how it is set up and what it does.
type recordScenario struct {
	name, scenario string
	streaming      bool
	watchTimeout   int64
	contains       []string
	run            func(s *recordSession)
}

// recordSession is what a scenario drives: the namespace's ConfigMaps,
// the recording, and the cluster's labcluster commands.
type recordSession struct {
	t       *testing.T
	ctx     context.Context
	cluster *labkit.Cluster
	cms     interface {
		Create(context.Context, *corev1.ConfigMap, metav1.CreateOptions) (*corev1.ConfigMap, error)
		Patch(context.Context, string, types.PatchType, []byte, metav1.PatchOptions, ...string) (*corev1.ConfigMap, error)
		Delete(context.Context, string, metav1.DeleteOptions) error
	}
	rec     *recordingListerWatcher
	startFn func()
}

// create, patch and remove change a ConfigMap and note it; with wait,
// they return once the informer has received the change.
func (s *recordSession) create(name, labels, color string, wait bool) {
	s.t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": labels}}, Data: map[string]string{"color": color}}
	out, err := s.cms.Create(s.ctx, cm, metav1.CreateOptions{})
	if err != nil {
		s.t.Fatal(err)
	}
	s.rec.note("created %s (app=%s, color=%s) at resourceVersion %s", name, labels, color, out.ResourceVersion)
	if wait {
		s.waitSeen(out.ResourceVersion)
	}
}

func (s *recordSession) patch(name, patch string, wait bool) {
	s.t.Helper()
	out, err := s.cms.Patch(s.ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	if err != nil {
		s.t.Fatal(err)
	}
	s.rec.note("patched %s with %s at resourceVersion %s", name, patch, out.ResourceVersion)
	if wait {
		s.waitSeen(out.ResourceVersion)
	}
}

func (s *recordSession) remove(name string) {
	s.t.Helper()
	if err := s.cms.Delete(s.ctx, name, metav1.DeleteOptions{}); err != nil {
		s.t.Fatal(err)
	}
	s.rec.note("deleted %s", name)
}

// waitSeen waits until the informer has received resourceVersion rv (or a later one).
func (s *recordSession) waitSeen(rv string) {
	s.t.Helper()
	want, _ := strconv.ParseInt(rv, 10, 64)
	s.waitFor("resourceVersion "+rv, func(_ int, last int64) bool { return last >= want })
}

func (s *recordSession) waitFor(what string, cond func(calls int, lastRV int64) bool) {
	s.t.Helper()
	err := wait.PollUntilContextTimeout(s.ctx, 20*time.Millisecond, 90*time.Second, true, func(context.Context) (bool, error) {
		return cond(s.rec.state()), nil
	})
	if err != nil {
		calls, last := s.rec.state()
		s.t.Fatalf("waiting for %s: %v (calls %d, last resourceVersion %d)", what, err, calls, last)
	}
}

// labcluster runs `labcluster ARGS...` against the private cluster.
func (s *recordSession) labcluster(args ...string) string {
	s.t.Helper()
	bin, err := labkit.LabclusterBinary()
	if err != nil {
		s.t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "LABCLUSTER_DIR="+s.cluster.Dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		s.t.Fatalf("labcluster %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

var recordScenarios = []recordScenario{{
	name: "churn",
	scenario: "Two ConfigMaps exist; the informer starts (a streaming list, ended by the initial-events-end bookmark), " +
		"then creates, updates, deletes, and a relabel out of the selector (a DELETED) and back in (an ADDED). " +
		"The recorder shortened every watch's timeoutSeconds to 5, so the server ends each watch after 5 s and the Reflector " +
		"rewatches from the last resourceVersion. The BOOKMARKs are the apiserver's own (its cacheWatcher schedules one 2 s before " +
		"a watch's deadline: nextBookmarkTime in k8s.io/apiserver@v0.37.0/pkg/storage/cacher/cache_watcher.go).",
	streaming:    true,
	watchTimeout: 5,
	contains:     []string{"streaming list", "bookmark", "watch closed by the server", "rewatch from a resourceVersion", "DELETED", "no final state unknown"},
	run: func(s *recordSession) {
		s.create("a", "demo", "blue", false)
		s.create("b", "demo", "red", false)
		s.create("x", "other", "gray", false)
		s.start()
		s.create("c", "demo", "green", true)
		s.patch("a", `{"data":{"color":"yellow"}}`, true)
		s.remove("b")
		s.patch("c", `{"metadata":{"labels":{"app":"other"}}}`, true)
		s.patch("c", `{"data":{"color":"black"}}`, false)
		s.patch("c", `{"metadata":{"labels":{"app":"demo"}}}`, true)
		s.waitFor("the third watch", func(calls int, _ int64) bool { return calls >= 3 })
		s.create("d", "demo", "white", true)
		s.remove("a")
		s.create("b", "demo", "pink", true)
		s.waitFor("the fourth watch", func(calls int, _ int64) bool { return calls >= 4 })
	},
}, {
	name: "compaction",
	scenario: "The informer syncs (streaming list) and sees a change; then the recorder cuts its connection, " +
		"deletes b, changes c, creates d and compacts etcd (labcluster etcd compact). On resume the Reflector rewatches " +
		"from its last resourceVersion, older than the compaction: the apiserver serves every watch from its watch cache " +
		"(CacheDelegator.Watch in k8s.io/apiserver@v0.37.0/pkg/storage/cacher/delegator.go), not from etcd, so there is no 410: " +
		"the missed events arrive, the delete as a real DELETED.",
	streaming: true,
	contains:  []string{"streaming list", "watch cut", "rewatch from a resourceVersion", "DELETED", "no final state unknown"},
	run: func(s *recordSession) {
		s.create("a", "demo", "blue", false)
		s.create("b", "demo", "red", false)
		s.create("c", "demo", "green", false)
		s.start()
		s.patch("a", `{"data":{"color":"yellow"}}`, true)
		s.cut()
		s.remove("b")
		s.patch("c", `{"data":{"color":"black"}}`, false)
		s.create("d", "demo", "white", false)
		s.rec.note("%s", s.labcluster("etcd", "compact"))
		s.resume()
		s.create("e", "demo", "pink", true)
	},
}, {
	name: "restart",
	scenario: "The informer syncs (streaming list); the recorder cuts its connection, deletes b, changes a, creates c, " +
		"compacts etcd and restarts the apiserver (labcluster restart apiserver), whose new watch cache starts at a " +
		"resourceVersion newer than the informer's, so a watch from the informer's is too old (GetIntervalLocked in k8s.io/apiserver@v0.37.0/pkg/storage/cacher/watch_cache_history.go). " +
		"On resume the rewatch gets 410 Expired (an ERROR event), and after a backoff the Reflector relists with a streaming list " +
		"from its last resourceVersion (a 410 on a watch does not make client-go drop it): b is gone, so the handlers get a DeletedFinalStateUnknown.",
	streaming: true,
	contains:  []string{"streaming list", "watch cut", "410 Expired", "relist", "final state unknown"},
	run:       restartScenario,
}, {
	name: "restart-list",
	scenario: "The restart scenario with the streaming list turned off (the ListerWatcher says " +
		"IsWatchListSemanticsUnSupported, as client-go's fake clients do): a LIST, then a watch from its resourceVersion; " +
		"cut, changes, compaction, apiserver restart; the rewatch gets 410 Expired, and the relist is a LIST " +
		"at the last resourceVersion: b is gone, so the handlers get a DeletedFinalStateUnknown.",
	streaming: false,
	contains:  []string{"LIST", "watch cut", "410 Expired", "relist", "final state unknown"},
	run:       restartScenario,
}, {
	name: "restart-live",
	scenario: "The informer syncs (streaming list) and sees a change; then the apiserver restarts under it (labcluster restart apiserver), " +
		"with no cut: the old apiserver ends the open watch as it stops, the Reflector's rewatch is refused while the new one starts, " +
		"then gets 410 Expired from the new watch cache, and after a backoff the Reflector relists (a streaming list). " +
		"b is deleted and c created once the restart is done, while the Reflector waits.",
	streaming: true,
	contains:  []string{"streaming list", "call error", "410 Expired", "relist"},
	run: func(s *recordSession) {
		s.create("a", "demo", "blue", false)
		s.create("b", "demo", "red", false)
		s.start()
		s.patch("a", `{"data":{"color":"green"}}`, true)
		s.rec.note("%s", regexp.MustCompile(` on https://\S+`).ReplaceAllString(s.labcluster("restart", "apiserver"), ""))
		s.remove("b")
		s.create("c", "demo", "white", true)
	},
}}

func restartScenario(s *recordSession) {
	s.create("a", "demo", "blue", false)
	s.create("b", "demo", "red", false)
	s.start()
	s.create("z", "demo", "gray", true)
	s.cut()
	atCut, _ := s.rec.state()
	s.remove("b")
	s.patch("a", `{"data":{"color":"green"}}`, false)
	s.create("c", "demo", "white", false)
	s.rec.note("%s", s.labcluster("etcd", "compact"))
	s.rec.note("%s", regexp.MustCompile(` on https://\S+`).ReplaceAllString(s.labcluster("restart", "apiserver"), ""))
	// The Reflector's rewatch is held since the cut; once resumed it gets
	// 410, and the next call is the relist.
	s.waitFor("the held rewatch", func(n int, _ int64) bool { return n >= atCut+1 })
	s.resume()
	s.waitFor("the relist", func(n int, _ int64) bool { return n >= atCut+2 })
	s.create("d", "demo", "black", true)
}

// start, cut and resume are set by recordOne.
func (s *recordSession) start()  { s.startFn() }
func (s *recordSession) cut()    { s.rec.note("the recorder cuts the connection"); s.rec.cut() }
func (s *recordSession) resume() { s.rec.note("the recorder resumes the connection"); s.rec.resume() }

func TestRecordFixtures(t *testing.T) {
	if !*record {
		t.Skip("records from a real cluster only when asked: go test -run TestRecordFixtures -args -record")
	}
	dir, err := os.MkdirTemp("", "lab05-record-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	c, err := labkit.StartEmbedded(dir, "etcd", "apiserver")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	version, err := c.Client.Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	for _, sc := range recordScenarios {
		t.Run(sc.name, func(t *testing.T) { recordOne(t, c, version.GitVersion, sc) })
	}
	// Leave no idle HTTP/2 connection behind for goleak.
	if rt, err := rest.TransportFor(c.Config); err == nil {
		utilnet.CloseIdleConnectionsFor(rt)
	}
}

func recordOne(t *testing.T, c *labkit.Cluster, version string, sc recordScenario) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	ns := "lab05-record-" + sc.name
	if _, err := c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	lw := cache.NewFilteredListWatchFromClient(c.Client.CoreV1().RESTClient(), "configmaps", ns, func(o *metav1.ListOptions) {
		o.LabelSelector = "app=demo"
		o.FieldSelector = fields.Everything().String()
	})
	rec := &recordingListerWatcher{lw: lw, streaming: sc.streaming, watchTimeout: sc.watchTimeout, namespace: ns, uids: map[types.UID]string{}}
	rec.withoutContext.lw = rec
	s := &recordSession{t: t, ctx: ctx, cluster: c, cms: c.Client.CoreV1().ConfigMaps(ns), rec: rec}
	runCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() { stop(); wg.Wait() }()
	s.startFn = func() {
		inf := cache.NewSharedIndexInformer(rec, &corev1.ConfigMap{}, 0, cache.Indexers{})
		rec.note("the informer starts")
		wg.Go(func() { inf.RunWithContext(runCtx) })
		if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
			t.Fatal("the informer did not sync")
		}
	}
	sc.run(s)
	rec.finish()
	stop()
	wg.Wait()

	streaming := sc.streaming
	header := fixtureLine{
		Fixture:    sc.name,
		Recorded:   time.Now().UTC().Format(time.RFC3339),
		Kubernetes: version,
		How: "TestRecordFixtures (record_cluster_test.go): client-go's SharedIndexInformer over client-go's ListWatch " +
			"(ConfigMaps, label selector app=demo) against a private labcluster (etcd and kube-apiserver); " +
			"every LIST and WATCH its Reflector made, the options it sent (without timeoutSeconds), what it received, and how each call ended. " +
			"Where the recorder cuts the connection, it closes the open watch (as a dropped connection does) and holds the Reflector's " +
			"next call until it resumes. " +
			"Normalised: namespace \"ns\", uids numbered, no creationTimestamp, no managedFields; resourceVersions as recorded.",
		Rerecord:      "cd labs/05-informer/informer && go test -run TestRecordFixtures -args -record",
		Scenario:      sc.scenario,
		StreamingList: &streaming,
		Contains:      sc.contains,
	}
	var b strings.Builder
	for _, l := range append([]fixtureLine{header}, rec.lines...) {
		line, err := json.Marshal(l)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	path := filepath.Join(recordedDir, sc.name+".jsonl")
	if err := os.MkdirAll(recordedDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	fx, err := readFixture(path)
	if err != nil {
		t.Fatal(err)
	}
	if missing := checkClaims(fx); len(missing) > 0 {
		t.Errorf("%s does not show %s; record again", path, strings.Join(missing, ", "))
	}
	t.Logf("%s: %d calls, %d bytes", path, len(fx.calls), b.Len())
}
