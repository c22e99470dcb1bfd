// Package podsbynodecmd is cmd/podsbynode: the capstone controller
// (../../podsbynode) over our informer over lab 02's ListWatch, publishing
// pods per node into a ConfigMap (data: node -> count) and, with --out, into
// a file of "node count" lines rewritten after each change.
package podsbynodecmd

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/listwatch-labs/listwatch-labs/clusterstate"
	"github.com/listwatch-labs/listwatch-labs/labs/02-listwatcher/listwatcher"
	"github.com/listwatch-labs/listwatch-labs/labs/05-informer/informer"
	"github.com/listwatch-labs/listwatch-labs/labs/05-informer/podsbynode"
)

// Main runs the controller until interrupted; it returns the exit code.
func Main(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("podsbynode", flag.ContinueOnError)
	fs.SetOutput(stderr)
	kubeconfig := fs.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig of the cluster (default $KUBECONFIG, else this checkout's .cluster/kubeconfig)")
	namespace := fs.String("n", "default", "namespace of the pods to count, and of the ConfigMap")
	configMap := fs.String("configmap", "pods-per-node", "the ConfigMap to publish the counts in")
	outFile := fs.String("out", "", "also keep the counts in this file (\"node count\" lines)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintln(stderr, "usage: podsbynode [--kubeconfig FILE] -n NAMESPACE [--configmap NAME] [--out FILE]")
		return 2
	}
	kc, note, err := clusterstate.ProgramKubeconfig(".", *kubeconfig)
	if err != nil {
		fmt.Fprintf(stderr, "podsbynode: %v\n", err)
		return 2
	}
	if note != "" {
		fmt.Fprintf(stderr, "podsbynode: %s\n", note)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kc)
	if err != nil {
		fmt.Fprintf(stderr, "podsbynode: %v\n", err)
		return 1
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		fmt.Fprintf(stderr, "podsbynode: %v\n", err)
		return 1
	}
	lw, err := listwatcher.New(cfg, "pods", *namespace)
	if err != nil {
		fmt.Fprintf(stderr, "podsbynode: %v\n", err)
		return 1
	}
	inf := informer.NewSharedIndexInformer(lw, informer.Options{
		Indexers:  informer.Indexers{informer.NodeNameIndex: informer.NodeNameIndexFunc},
		Transform: informer.StripManagedFields,
		Reflector: informer.ReflectorOptions{WatchErrorHandler: func(err error) {
			fmt.Fprintf(stderr, "podsbynode: %v\n", err)
		}},
	})
	pub := &configMapPublisher{client: client, namespace: *namespace, name: *configMap, file: *outFile, counts: map[string]int{}}
	ctl, reg, err := podsbynode.New(inf, pub)
	if err != nil {
		fmt.Fprintf(stderr, "podsbynode: %v\n", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := pub.ensure(ctx); err != nil {
		fmt.Fprintf(stderr, "podsbynode: %v\n", err)
		return 1
	}
	var wg sync.WaitGroup
	wg.Go(func() { inf.Run(ctx) })
	wg.Go(func() { ctl.Run(ctx) })
	// Report the first sync, as controllers log "caches synced".
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for synced := false; !synced; {
		select {
		case <-ctx.Done():
			synced = true
		case <-tick.C:
			if reg.HasSynced() {
				fmt.Fprintln(stdout, "synced")
				synced = true
			}
		}
	}
	<-ctx.Done()
	wg.Wait()
	return 0
}

// configMapPublisher writes each node's count into data[node] of a
// ConfigMap with a JSON merge patch (null removes the node), and mirrors
// the counts into a file.
type configMapPublisher struct {
	client          kubernetes.Interface
	namespace, name string
	file            string
	// mu guards counts and the file.
	mu     sync.Mutex
	counts map[string]int
}

// ensure creates the ConfigMap, empty, unless it exists. Counts left in it
// from an earlier run are dropped: the controller republishes every node.
func (p *configMapPublisher) ensure(ctx context.Context) error {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: p.name, Namespace: p.namespace}}
	_, err := p.client.CoreV1().ConfigMaps(p.namespace).Create(ctx, cm, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		_, err = p.client.CoreV1().ConfigMaps(p.namespace).Update(ctx, cm, metav1.UpdateOptions{})
	}
	if err == nil {
		err = p.writeFile()
	}
	return err
}

func (p *configMapPublisher) Publish(ctx context.Context, node string, pods int) error {
	var value any
	if pods > 0 {
		value = strconv.Itoa(pods)
	}
	patch, err := json.Marshal(map[string]any{"data": map[string]any{node: value}})
	if err != nil {
		return err
	}
	if _, err := p.client.CoreV1().ConfigMaps(p.namespace).Patch(ctx, p.name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if pods > 0 {
		p.counts[node] = pods
	} else {
		delete(p.counts, node)
	}
	return p.writeFileLocked()
}

func (p *configMapPublisher) writeFile() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.writeFileLocked()
}

// writeFileLocked replaces the file in one rename, so a reader never sees
// half of it.
func (p *configMapPublisher) writeFileLocked() error {
	if p.file == "" {
		return nil
	}
	tmp := filepath.Join(filepath.Dir(p.file), "."+filepath.Base(p.file)+".tmp")
	if err := os.WriteFile(tmp, []byte(podsbynode.Format(p.counts)), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, p.file)
}
