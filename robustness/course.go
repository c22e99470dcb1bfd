package robustness

import (
	"context"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/listwatch-labs/listwatch-labs/labs/02-listwatcher/listwatcher"
	"github.com/listwatch-labs/listwatch-labs/labs/03-watchserver/apiserver"
	"github.com/listwatch-labs/listwatch-labs/labs/04-cacher/miniapiserver"
	"github.com/listwatch-labs/listwatch-labs/labs/05-informer/informer"
)

// CourseStack is the course's stack as a Target: lab 04's miniapiserver
// (lab 04's etcd3 store and Cacher, lab 03's API server) over an etcd,
// reached through a proxy that can cut or stall every connection, with lab
// 05's informer over lab 02's ListWatch and client-go's informer side by
// side. Faults: compact etcd; restart the API server (sometimes with
// another API server writing ConfigMaps to etcd meanwhile); cut every
// client connection; stall them; and, on a three-member etcd, the etcd
// faults (HACluster.EtcdFaults).
type CourseStack struct {
	Target
	mini  *miniapiserver.Instance
	proxy *Proxy
}

// StartCourseStack starts the stack for namespace ns, on etcd's three
// members (under the key prefix /course, apart from the kube-apiserver's
// keys, which start at `DefaultEtcdPathPrefix`, /registry:
// k8s.io/kubernetes@v1.37.0/pkg/kubeapiserver/options/options.go:33), or
// on an embedded etcd of its own when etcd is nil.
func StartCourseStack(ns string, etcd *HACluster) (*CourseStack, error) {
	mcfg := miniapiserver.Config{Listen: "127.0.0.1:0", ErrorLog: io.Discard}
	if etcd != nil {
		mcfg.EtcdEndpoints, mcfg.EtcdPrefix = etcd.State.EtcdURLs(), "/course"
	}
	mini, err := miniapiserver.Start(mcfg)
	if err != nil {
		return nil, err
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", mini.KubeconfigPath)
	if err != nil {
		mini.Close()
		return nil, err
	}
	proxy, err := NewProxy(cfg.Host[len("https://"):])
	if err != nil {
		mini.Close()
		return nil, err
	}
	cfg.Host = "https://" + proxy.Addr()
	cfg.QPS = -1
	cfg.Timeout = 0 // watches; each write has its own deadline
	informers, err := informersOn(cfg, ns)
	if err != nil {
		proxy.Close()
		mini.Close()
		return nil, err
	}
	s := &CourseStack{mini: mini, proxy: proxy}
	name := "the course's stack (lab 04 miniapiserver on its own etcd; lab 05 and client-go informers on ConfigMaps and Pods)"
	if etcd != nil {
		name = "the course's stack (lab 04 miniapiserver on a three-member etcd; lab 05 and client-go informers on ConfigMaps and Pods)"
	}
	s.Target = Target{
		Name:   name,
		Config: cfg,
		Faults: map[string]func(ctx context.Context) (string, []Write, error){
			"compact": func(ctx context.Context) (string, []Write, error) {
				rev, err := mini.Compact(ctx)
				return fmt.Sprintf("etcd compacted to %d", rev), nil, err
			},
			"restart": func(ctx context.Context) (string, []Write, error) {
				err := mini.RestartWith(nil)
				if etcd != nil {
					return "the API server and its Cachers restarted", nil, err
				}
				return "the API server, its Cachers and etcd restarted", nil, err
			},
			"restart-with-other-writes": func(ctx context.Context) (string, []Write, error) {
				var writes []Write
				start := time.Now()
				err := mini.RestartWith(func(stores map[string]storage.Interface) error {
					for i := range 3 {
						name := fmt.Sprintf("other-%d-%d", start.UnixNano(), i)
						cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"color": "blue"}}, Data: map[string]string{"v": name}}
						out := &corev1.ConfigMap{}
						if err := stores["configmaps"].Create(ctx, apiserver.ConfigMaps.Key(ns, name), cm, out, 0); err != nil {
							return err
						}
						writes = append(writes, Write{Client: -1, Op: Create, Key: ns + "/" + name, Value: name, Labels: cm.Labels, Outcome: OK, RV: rvOf(out.ResourceVersion)})
					}
					return nil
				})
				return fmt.Sprintf("restarted; another API server wrote %d ConfigMaps meanwhile", len(writes)), writes, err
			},
			"cut-connections":   proxyCut(proxy),
			"stall-connections": proxyStall(proxy),
		},
		Informers: informers,
	}
	if etcd != nil {
		for k, f := range etcd.EtcdFaults() {
			s.Faults[k] = f
		}
	}
	return s, nil
}

// Lab05Informer is lab 05's SharedIndexInformer over lab 02's ListWatch.
func Lab05Informer(lw *listwatcher.ListWatch) func(int, HandlerRecorder) (InformerSpec, func() map[string]Object, func(context.Context)) {
	return func(id int, rec HandlerRecorder) (InformerSpec, func() map[string]Object, func(context.Context)) {
		inf := informer.NewSharedIndexInformer(lw, informer.Options{})
		_, _ = inf.AddEventHandler(handlerFuncs(rec)) // fails only on a stopped informer
		spec := InformerSpec{ID: id, Name: "lab 05", Resource: lw.Resource, Selector: lw.LabelSelector, FieldSelector: lw.FieldSelector}
		return spec, func() map[string]Object { return cacheObjects(inf.GetIndexer().List()) }, inf.Run
	}
}

// stallFor is how long a stall-connections fault holds every byte: a
// watch stream pauses, and a write in flight answers late (or meets its
// 10 s deadline and is recorded Unknown).
const stallFor = 3 * time.Second

func proxyCut(p *Proxy) func(context.Context) (string, []Write, error) {
	return func(context.Context) (string, []Write, error) {
		return fmt.Sprintf("client connections cut: %d", p.Cut()), nil, nil
	}
}

func proxyStall(p *Proxy) func(context.Context) (string, []Write, error) {
	return func(context.Context) (string, []Write, error) {
		return fmt.Sprintf("client connections stalled for %s: %d", stallFor, p.Stall(stallFor)), nil, nil
	}
}

// ClientGoInformer is client-go's own SharedIndexInformer on ns's
// ConfigMaps or Pods, for any target; fieldSelector "" selects all. On Pods
// with spec.nodeName=NODE it lists and watches what a kubelet does (the
// kubelet's `NewListWatchFromClient` with that field selector,
// k8s.io/kubernetes@v1.37.0/pkg/kubelet/config/apiserver.go:37, which feeds
// a bare Reflector, not an informer: `NewReflector`,
// k8s.io/kubernetes@v1.37.0/pkg/kubelet/config/apiserver.go:65).
func ClientGoInformer(cfg *rest.Config, ns, resource, fieldSelector string) func(int, HandlerRecorder) (InformerSpec, func() map[string]Object, func(context.Context)) {
	return func(id int, rec HandlerRecorder) (InformerSpec, func() map[string]Object, func(context.Context)) {
		client := kubernetes.NewForConfigOrDie(rest.CopyConfig(cfg))
		sel := fields.Everything()
		if fieldSelector != "" {
			sel = fields.ParseSelectorOrDie(fieldSelector)
		}
		lw := cache.NewListWatchFromClient(client.CoreV1().RESTClient(), resource, ns, sel)
		var example runtime.Object = &corev1.ConfigMap{}
		if resource == "pods" {
			example = &corev1.Pod{}
		}
		inf := cache.NewSharedIndexInformer(lw, example, 0, cache.Indexers{})
		_, _ = inf.AddEventHandler(handlerFuncs(rec)) // fails only on a stopped informer
		spec := InformerSpec{ID: id, Name: "client-go", Resource: resource, FieldSelector: fieldSelector}
		return spec, func() map[string]Object { return cacheObjects(inf.GetStore().List()) }, inf.RunWithContext
	}
}

// informersOn are the informers each stack runs: lab 05's and client-go's
// on every ConfigMap, lab 05's on every Pod, and client-go's on node-a's
// Pods, the Pods node-a's kubelet would list and watch.
func informersOn(cfg *rest.Config, ns string) ([]func(int, HandlerRecorder) (InformerSpec, func() map[string]Object, func(context.Context)), error) {
	cms, err := listwatcher.New(rest.CopyConfig(cfg), "configmaps", ns)
	if err != nil {
		return nil, err
	}
	pods, err := listwatcher.New(rest.CopyConfig(cfg), "pods", ns)
	if err != nil {
		return nil, err
	}
	return []func(int, HandlerRecorder) (InformerSpec, func() map[string]Object, func(context.Context)){
		Lab05Informer(cms),
		ClientGoInformer(cfg, ns, "configmaps", ""),
		Lab05Informer(pods),
		ClientGoInformer(cfg, ns, "pods", "spec.nodeName=node-a"),
	}, nil
}

func handlerFuncs(rec HandlerRecorder) cache.ResourceEventHandlerFuncs {
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { rec(OnAdd, obj) },
		UpdateFunc: func(_, obj any) { rec(OnUpdate, obj) },
		DeleteFunc: func(obj any) { rec(OnDelete, obj) },
	}
}

func cacheObjects(objs []any) map[string]Object {
	out := map[string]Object{}
	for _, o := range objs {
		if f, ok := fieldsOf(o); ok {
			out[f.key] = Object{RV: f.rv, Value: f.value}
		}
	}
	return out
}

// Close stops the stack.
func (s *CourseStack) Close() {
	s.proxy.Close()
	s.mini.Close()
}

// Proxy forwards TCP connections to a target and can cut them all at once:
// the clients see their connections reset mid-request or mid-watch, and
// reconnect.
type Proxy struct {
	ln     net.Listener
	target string
	// mu guards conns and open: the accept loop and every copying
	// goroutine read them while Cut and Stall change them.
	mu    sync.Mutex
	conns map[net.Conn]bool // both ends of every forwarded connection
	// open is closed while bytes may flow; Stall replaces it with one
	// that closes when the stall ends.
	open chan struct{}
	// wg counts the accept loop and the copying goroutines, so Close
	// returns only when none is left.
	wg sync.WaitGroup
}

// NewProxy listens on 127.0.0.1 and forwards to target.
func NewProxy(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln, target: target, conns: map[net.Conn]bool{}, open: make(chan struct{})}
	close(p.open)
	p.wg.Go(p.accept)
	return p, nil
}

// Addr is where the proxy listens.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

func (p *Proxy) accept() {
	for {
		in, err := p.ln.Accept()
		if err != nil {
			return
		}
		out, err := net.DialTimeout("tcp", p.target, 5*time.Second)
		if err != nil {
			in.Close()
			continue
		}
		p.mu.Lock()
		p.conns[in], p.conns[out] = true, true
		p.mu.Unlock()
		pipe := func(dst, src net.Conn) {
			p.copy(dst, src)
			dst.Close()
			src.Close()
			p.mu.Lock()
			delete(p.conns, dst)
			delete(p.conns, src)
			p.mu.Unlock()
		}
		p.wg.Go(func() { pipe(out, in) })
		p.wg.Go(func() { pipe(in, out) })
	}
}

// copy is io.Copy that holds each chunk while the proxy is stalled.
func (p *Proxy) copy(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			open := p.open
			p.mu.Unlock()
			<-open
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// Stall holds every byte in both directions for d, on every connection:
// a network that stops delivering without closing anything (the client's
// requests and watches hang; the server's writes back up). It returns how
// many client connections it stalled.
func (p *Proxy) Stall(d time.Duration) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	open := make(chan struct{})
	p.open = open
	time.AfterFunc(d, func() { close(open) })
	return len(p.conns) / 2
}

// Cut closes every connection and returns how many client connections
// there were.
func (p *Proxy) Cut() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := len(p.conns) / 2
	for c := range p.conns {
		c.Close()
	}
	return n
}

// Close stops listening, cuts everything and waits for the forwarding to end.
func (p *Proxy) Close() {
	p.ln.Close()
	p.Cut()
	p.wg.Wait()
}
