package main

import "fmt"

// PathHop is one step of a write's way from the writer to an informer's
// handler, the same on both stacks: what happens there, and which code does
// it, in the labs and upstream.
type PathHop struct {
	Name     string   // e.g. "apiserver -> etcd"
	From, To string   // the participants (mermaid's)
	Short    string   // what happens, in two or three words (the diagram's label)
	What     string   // what happens in this step, in a sentence
	Course   string   // where the course stack is observed (the seam); "" if not
	Real     string   // where the real stack is observed from outside; "" if it cannot be
	Lab      []LabRef // the labs' code for it
	Upstream []UpRef  // the upstream code, pinned
}

// LabRef is a function in the repository. Decl is how its declaration
// starts in File (the test checks it is there).
type LabRef struct {
	File, Name, Decl string
}

// UpRef is a function in an upstream module at the pinned version, with the
// lines of its declaration, looked up in the Go module cache (the test checks
// that line Start begins with Decl and line End closes it).
type UpRef struct {
	Module     string // k8s.io/apiserver, k8s.io/client-go or k8s.io/apimachinery
	File, Name string
	Decl       string
	Start, End int
}

// The versions the course is pinned to (versions.env).
const (
	k8sVersion     = "v1.37.0"
	stagingVersion = "v0.37.0"
	etcdVersion    = "v3.7.0"
)

// URL is the pinned GitHub address of the function's lines: the k8s.io
// modules are published from kubernetes' staging directory.
func (r UpRef) URL() string {
	return fmt.Sprintf("https://github.com/kubernetes/kubernetes/blob/%s/staging/src/%s/%s#L%d-L%d", k8sVersion, r.Module, r.File, r.Start, r.End)
}

// Cite is the citation form the course uses: module@version/file:lines.
func (r UpRef) Cite() string {
	return fmt.Sprintf("%s@%s/%s:%d-%d", r.Module, stagingVersion, r.File, r.Start, r.End)
}

const (
	apiserverMod    = "k8s.io/apiserver"
	clientGoMod     = "k8s.io/client-go"
	apimachineryMod = "k8s.io/apimachinery"
)

// steps is the way of one ConfigMap create, in order. The hop names are the
// ones the tracer marks.
var steps = []PathHop{
	{
		Name: "writer -> apiserver", From: "writer", To: "apiserver",
		Short:  "the POST",
		What:   "The POST: client-go sends the ConfigMap; the API server reads and decodes the body and hands the object to its storage.",
		Course: "lab 03's create handler calls storage Create",
		Lab:    []LabRef{{"labs/03-watchserver/apiserver/handlers.go", "resourceHandler.create", "func (r *resourceHandler) create("}},
		Upstream: []UpRef{{apiserverMod, "pkg/endpoints/handlers/create.go", "createHandler",
			"func createHandler(", 53, 237}},
	},
	{
		Name: "apiserver -> etcd", From: "apiserver", To: "etcd",
		Short:  "the etcd write",
		What:   "The etcd write: one transaction that creates the key only if it does not exist. etcd commits it to its write-ahead log on disk, then sends its reply (with the new revision, the resourceVersion) and the watch event at once.",
		Course: "lab 04's etcd3 store: until etcd's reply or its watch event, the first to arrive",
		Lab:    []LabRef{{"labs/04-cacher/etcd3/store.go", "Store.Create", "func (s *Store) Create("}},
		Upstream: []UpRef{{apiserverMod, "pkg/storage/etcd3/store.go", "store.Create",
			"func (s *store) Create(", 284, 349}},
	},
	{
		Name: "etcd -> Cacher", From: "etcd", To: "Cacher",
		Short:  "the watch delivery",
		What:   "The watch delivery: the store's etcd watch receives the new key, decodes it into a watch.Event, and the Cacher's reflector puts it in the watch cache.",
		Course: "lab 04's etcd3 watch hands the event to the Cacher's reflector",
		Lab: []LabRef{
			{"labs/04-cacher/etcd3/watcher.go", "watchChan.run", "func (wc *watchChan) run("},
			{"labs/04-cacher/cacher/reflector.go", "Cacher.watchOnce", "func (c *Cacher) watchOnce("},
		},
		Upstream: []UpRef{
			{apiserverMod, "pkg/storage/etcd3/watcher.go", "watchChan.startWatching", "func (wc *watchChan) startWatching(", 444, 527},
			{apiserverMod, "pkg/storage/cacher/watch_cache.go", "watchCache.processEvent", "func (w *watchCache) processEvent(", 211, 287},
		},
	},
	{
		Name: "Cacher -> WatchServer", From: "Cacher", To: "WatchServer",
		Short:  "the fan-out",
		What:   "The fan-out: the Cacher dispatches the event to every cacheWatcher whose filter matches; each watcher's goroutine passes it to the WatchServer serving that watch.",
		Course: "lab 04's cacheWatcher result channel, read by lab 03's WatchServer",
		Lab: []LabRef{
			{"labs/04-cacher/cacher/dispatch.go", "Cacher.dispatchEvent", "func (c *Cacher) dispatchEvent("},
			{"labs/04-cacher/cacher/cache_watcher.go", "cacheWatcher.processInterval", "func (c *cacheWatcher) processInterval("},
		},
		Upstream: []UpRef{
			{apiserverMod, "pkg/storage/cacher/cacher.go", "Cacher.dispatchEvent", "func (c *Cacher) dispatchEvent(", 996, 1063},
			{apiserverMod, "pkg/storage/cacher/cache_watcher.go", "cacheWatcher.processInterval", "func (c *cacheWatcher) processInterval(", 450, 532},
		},
	},
	{
		Name: "WatchServer -> ListWatch", From: "WatchServer", To: "ListWatch",
		Short:  "the HTTP frame",
		What:   "HTTP: the WatchServer encodes the event as one JSON frame, writes and flushes it on the watch response (an HTTP/2 stream); the client reads the bytes. Since 1.37 kube-apiserver, and lab 03's server with it, gzips a watch that began with sendInitialEvents=true and allowWatchBookmarks=true, as an informer's does, when the client accepts gzip, one gzip member per flush; Go's transport asks for gzip and unpacks it before the trace reads the body.",
		Course: "the bytes of the frame read from the response body",
		Real:   "the bytes of the frame read from the response body",
		Lab:    []LabRef{{"labs/03-watchserver/watchserver/watchserver.go", "WatchServer.HandleHTTP", "func (s *WatchServer) HandleHTTP("}},
		Upstream: []UpRef{{apiserverMod, "pkg/endpoints/handlers/watch.go", "WatchServer.HandleHTTP",
			"func (s *WatchServer) HandleHTTP(", 362, 481}},
	},
	{
		Name: "ListWatch -> Reflector", From: "ListWatch", To: "Reflector",
		Short:  "decoding",
		What:   "Decoding: the client's stream watcher decodes the frame into a watch.Event and sends it on the watch's result channel.",
		Course: "lab 02's ListWatch watch: the decoded event",
		Real:   "client-go's ListWatch watch: the decoded event",
		Lab: []LabRef{
			{"labs/02-listwatcher/listwatcher/watcher.go", "streamWatcher.receive", "func (w *streamWatcher) receive("},
			{"labs/02-listwatcher/listwatcher/decoder.go", "Decoder.Decode", "func (d *Decoder) Decode("},
		},
		Upstream: []UpRef{{apimachineryMod, "pkg/watch/streamwatcher.go", "StreamWatcher.receive",
			"func (sw *StreamWatcher) receive(", 109, 145}},
	},
	{
		Name: "Reflector -> FIFO", From: "Reflector", To: "RealFIFO",
		Short:  "queueing",
		What:   "The reflector's watch loop takes the event and adds it to the queue; the informer's transform runs as it is queued.",
		Course: "the informer's transform, run by lab 05's RealFIFO",
		Real:   "the informer's transform, run by client-go's RealFIFO",
		Lab: []LabRef{
			{"labs/05-informer/informer/reflector.go", "Reflector.handleWatch", "func (r *Reflector) handleWatch("},
			{"labs/05-informer/informer/real_fifo.go", "RealFIFO.addLocked", "func (f *RealFIFO) addLocked("},
		},
		Upstream: []UpRef{
			{clientGoMod, "tools/cache/reflector.go", "handleAnyWatch", "func handleAnyWatch(", 972, 1095},
			{clientGoMod, "tools/cache/the_real_fifo.go", "RealFIFO.addToItems_locked", "func (f *RealFIFO) addToItems_locked(", 255, 292},
		},
	},
	{
		Name: "FIFO -> Indexer", From: "RealFIFO", To: "Indexer",
		Short:  "indexing",
		What:   "The informer's loop pops a batch from the queue and updates the indexer (the local cache), running the index functions.",
		Course: "an index function of lab 05's Indexer",
		Real:   "an index function of client-go's Indexer",
		Lab: []LabRef{
			{"labs/05-informer/informer/real_fifo.go", "RealFIFO.PopBatch", "func (f *RealFIFO) PopBatch("},
			{"labs/05-informer/informer/shared_informer.go", "SharedIndexInformer.handleBatch", "func (s *SharedIndexInformer) handleBatch("},
		},
		Upstream: []UpRef{
			{clientGoMod, "tools/cache/the_real_fifo.go", "RealFIFO.PopBatch", "func (f *RealFIFO) PopBatch(", 486, 583},
			{clientGoMod, "tools/cache/controller.go", "processDeltasInBatch", "func processDeltasInBatch(", 892, 970},
		},
	},
	{
		Name: "Indexer -> handler", From: "Indexer", To: "handler",
		Short:  "the handler",
		What:   "The notification goes to each registered handler's processorListener, whose goroutine calls OnAdd.",
		Course: "the handler's OnAdd (lab 05's processorListener)",
		Real:   "the handler's OnAdd (client-go's processorListener)",
		Lab:    []LabRef{{"labs/05-informer/informer/processor_listener.go", "processorListener.run", "func (p *processorListener) run("}},
		Upstream: []UpRef{{clientGoMod, "tools/cache/shared_informer.go", "processorListener.run",
			"func (p *processorListener) run(", 1478, 1521}},
	},
}

// hopIndex is the position of a hop in steps, or -1.
func hopIndex(name string) int {
	for i, h := range steps {
		if h.Name == name {
			return i
		}
	}
	return -1
}
