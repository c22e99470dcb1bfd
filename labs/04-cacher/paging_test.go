package lab_test

// Paging, end to end. A LIST's limit and continue travel from lab 03's HTTP
// handler to the storage (this lab's Cacher, which sends a paged list to
// its etcd3 store), and what comes back is checked against the real
// kube-apiserver with one test body and two targets: "real" (this test
// binary's cluster) and "mini" (a miniapiserver started by the test).
//
// TestChunkingReturnsChunksOfResults and
// TestChunkingContinuesInconsistentlyAfterCompaction are the two
// `ConformanceIt` cases of Kubernetes' API chunking conformance test
// (k8s.io/kubernetes@v1.37.0/test/e2e/apimachinery/chunking.go:83-234),
// re-expressed here with client-go; the comments cite the lines of
// chunking.go each assertion ports. Two choices of ours: ConfigMaps instead of PodTemplates
// (the miniapiserver serves ConfigMaps and Pods only), and etcd compacted
// by the test instead of waiting up to 10 minutes for kube-apiserver's
// compactor. A namespace on the real cluster also holds kube-root-ca.crt
// (the controller-manager's), so the test writes it on the miniapiserver
// too and counts it: both namespaces hold the same 401 objects.

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/storage"
	upstreametcd3 "k8s.io/apiserver/pkg/storage/etcd3"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/workqueue"

	"github.com/listwatch-labs/listwatch-labs/clusterstate"
	"github.com/listwatch-labs/listwatch-labs/labkit"
	"github.com/listwatch-labs/listwatch-labs/labs/04-cacher/miniapiserver"
)

// numberOfTemplates is chunking.go's numberOfTotalResources (line 38).
const numberOfTemplates = 400

// pagingTarget is one of the two servers a paging test runs on.
type pagingTarget struct {
	name   string
	client kubernetes.Interface
	// compact makes the server's etcd forget every revision before the
	// current one, in a way the server notices. nil: this target cannot
	// (a real cluster that is not a labcluster: kind).
	compact func(ctx context.Context) error
	// shared is set on the real cluster, which every test of the package
	// shares; a mini target is the test's own.
	shared bool
}

// realEtcd orders the paging tests on the real cluster, which run in
// parallel with each other and with the scripts: compacting its etcd
// expires every continue token then in flight there, whoever holds it. A
// test that pages through the real cluster holds it for reading (page); the
// compaction test holds it alone (compact).
var realEtcd sync.RWMutex

// page keeps the target's etcd uncompacted until the test ends.
func (p pagingTarget) page(t *testing.T) {
	if p.shared {
		realEtcd.RLock()
		t.Cleanup(realEtcd.RUnlock)
	}
}

// compactAlone waits until no other test pages through the target, and
// keeps others from starting until the test ends.
func (p pagingTarget) compactAlone(t *testing.T) {
	if p.shared {
		realEtcd.Lock()
		t.Cleanup(realEtcd.Unlock)
	}
}

// pagingTargets returns the real apiserver and a fresh miniapiserver, and a
// namespace on both holding kube-root-ca.crt and nothing else.
func pagingTargets(t *testing.T) (string, []pagingTarget) {
	t.Helper()
	ns := fmt.Sprintf("paging-%d", time.Now().UnixNano())
	return ns, []pagingTarget{realTarget(t, ns), miniTarget(t, ns)}
}

// fastClient is a client that does not throttle hundreds of creates.
func fastClient(t *testing.T, cfg *rest.Config) kubernetes.Interface {
	t.Helper()
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = 500, 1000
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func realTarget(t *testing.T, ns string) pagingTarget {
	t.Helper()
	cluster := labkit.Current()
	client := fastClient(t, cluster.Config)
	ctx := t.Context()
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })
	if cluster.HasControllerManager() {
		// Wait for the controller-manager's kube-root-ca.crt, so that it
		// does not appear in the middle of a test.
		err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			_, err := client.CoreV1().ConfigMaps(ns).Get(ctx, "kube-root-ca.crt", metav1.GetOptions{})
			return err == nil, nil
		})
		if err != nil {
			t.Fatalf("no kube-root-ca.crt in %s after 30s", ns)
		}
	} else {
		createRootCA(t, client, ns)
	}
	target := pagingTarget{name: "real", client: client, shared: true}
	if cluster.Dir != "" {
		target.compact = func(ctx context.Context) error { return compactLikeKubeAPIServer(ctx, cluster.Dir) }
	}
	return target
}

func miniTarget(t *testing.T, ns string) pagingTarget {
	t.Helper()
	in, err := miniapiserver.Start(miniapiserver.Config{Listen: "127.0.0.1:0", KubeconfigOut: t.TempDir() + "/mini.kubeconfig"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close() })
	cfg, err := clientcmd.BuildConfigFromFlags("", in.KubeconfigPath)
	if err != nil {
		t.Fatal(err)
	}
	client := fastClient(t, cfg)
	createRootCA(t, client, ns)
	// The miniapiserver's Cacher sends every continued list to etcd, so
	// compacting etcd is enough for it to notice.
	compact := func(ctx context.Context) error { _, err := in.Compact(ctx); return err }
	return pagingTarget{name: "mini", client: client, compact: compact}
}

func createRootCA(t *testing.T, client kubernetes.Interface, ns string) {
	t.Helper()
	_, err := client.CoreV1().ConfigMaps(ns).Create(t.Context(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "kube-root-ca.crt"}, Data: map[string]string{"ca.crt": "-"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
}

// compactLikeKubeAPIServer compacts a labcluster's etcd at its current
// revision (kube-apiserver's compactor would use its previous tick's
// revision: this test cannot wait 5 to 10 minutes), by calling upstream's
// own `Compact`, a transaction that records the revision under
// `compactRevKey` and then compacts (k8s.io/apiserver@v0.37.0/pkg/storage/etcd3/compact.go:219-221).
// The record is what matters. The apiserver's Cacher serves a continued
// list from its snapshots when it has one at the token's revision
// (`ShouldDelegateContinue`, k8s.io/apiserver@v0.37.0/pkg/storage/cacher/cacher.go:1437-1452);
// its etcd3 store learns compactions by watching that key (`runWatchLoop`,
// k8s.io/apiserver@v0.37.0/pkg/storage/etcd3/compact.go:255-280), and the
// Cacher reads the store's recorded compact revision every `compactorPollPeriod`, 15 s
// (k8s.io/apiserver@v0.37.0/pkg/storage/cacher/compactor.go:28-31), to drop
// older snapshots (`compactIfNeeded`, k8s.io/apiserver@v0.37.0/pkg/storage/cacher/compactor.go:65-77).
// So a compaction behind its back (`labcluster etcd compact`) would leave
// the snapshots, and the token, alive.
func compactLikeKubeAPIServer(ctx context.Context, dir string) error {
	st, err := clusterstate.Read(dir)
	if err != nil {
		return err
	}
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{st.EtcdURL()}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return err
	}
	defer c.Close()
	now, err := c.Get(ctx, "compact-probe") // any read: its header has the revision
	if err != nil {
		return err
	}
	rev := now.Header.Revision
	// The transaction writes only if compact_rev_key's version is the one
	// we pass (0: no key yet); if not, it tells the current version, and
	// we try again with it.
	var version int64
	for range 5 {
		current, _, compacted, err := upstreametcd3.Compact(ctx, c, version, rev)
		if err != nil {
			return err
		}
		if compacted == rev {
			return nil
		}
		version = current
	}
	return fmt.Errorf("compact_rev_key kept changing under us")
}

// seedTemplates creates template-0000 ... in ns, 20 at a time, as
// chunking.go's BeforeEach does (lines 44-70).
func seedTemplates(t *testing.T, client kubernetes.Interface, ns string, n int) {
	t.Helper()
	ctx := t.Context()
	errs := make([]error, n)
	workqueue.ParallelizeUntil(ctx, 20, n, func(i int) {
		_, errs[i] = client.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("template-%04d", i)},
			Data:       map[string]string{"image": "test2"},
		}, metav1.CreateOptions{})
	})
	for i, err := range errs {
		if err != nil {
			t.Fatalf("create template-%04d: %v", i, err)
		}
	}
}

// expectedNames is what a full list of the namespace returns, in order.
func expectedNames() []string {
	names := []string{"kube-root-ca.crt"}
	for i := range numberOfTemplates {
		names = append(names, fmt.Sprintf("template-%04d", i))
	}
	return names
}

// continueToken is a decoded continue token, the JSON that
// storage.EncodeContinue writes: upstream's `continueToken`
// (k8s.io/apiserver@v0.37.0/pkg/storage/continue.go:39-43).
type continueToken struct {
	APIVersion      string `json:"v"`
	ResourceVersion int64  `json:"rv"`
	StartKey        string `json:"start"`
}

// decodeToken decodes a continue token and checks it has upstream's form:
// unpadded base64url of a JSON object with exactly the keys v, rv, start,
// v being meta.k8s.io/v1. Its StartKey is returned as upstream's
// `DecodeContinue` reads it (k8s.io/apiserver@v0.37.0/pkg/storage/continue.go:47-76),
// relative to the collection and without a leading "/", which a token may
// or may not carry.
func decodeToken(t *testing.T, token string) continueToken {
	t.Helper()
	raw, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		t.Fatalf("continue token %q: %v", token, err)
	}
	var keys map[string]json.RawMessage
	var c continueToken
	if err := json.Unmarshal(raw, &keys); err != nil {
		t.Fatalf("continue token %s: %v", raw, err)
	}
	if err := json.Unmarshal(raw, &c); err != nil {
		t.Fatalf("continue token %s: %v", raw, err)
	}
	if len(keys) != 3 || c.APIVersion != "meta.k8s.io/v1" {
		t.Fatalf("continue token %s: want {\"v\":\"meta.k8s.io/v1\",\"rv\":N,\"start\":KEY}", raw)
	}
	key, _, err := storage.DecodeContinue(token, "/")
	if err != nil {
		t.Fatalf("continue token %s: %v", raw, err)
	}
	c.StartKey = strings.TrimPrefix(key, "/")
	return c
}

// checkPageCount is chunking.go's check of remainingItemCount (lines
// 105-110, 157-162, 198-203, 215-220): absent on the last page; on any
// other, with the items seen so far and these, exactly the total.
func checkPageCount(t *testing.T, list *corev1.ConfigMapList, found, total int) {
	t.Helper()
	remaining := list.GetRemainingItemCount()
	if list.GetContinue() == "" {
		if remaining != nil {
			t.Fatalf("last page: remainingItemCount %d, want none", *remaining)
		}
		return
	}
	if remaining == nil {
		t.Fatalf("page with continue and no remainingItemCount")
	}
	if got := int(*remaining) + len(list.Items) + found; got != total {
		t.Fatalf("remainingItemCount %d + %d items + %d before = %d, want %d", *remaining, len(list.Items), found, got, total)
	}
}

// checkNames is chunking.go's check that the items continue the sequence
// (lines 111-114, 204-207, 224-227); it returns the new count.
func checkNames(t *testing.T, list *corev1.ConfigMapList, want []string, found int) int {
	t.Helper()
	for _, item := range list.Items {
		if found >= len(want) || item.Name != want[found] {
			t.Fatalf("item %d is %s, want %s", found, item.Name, want[min(found, len(want)-1)])
		}
		found++
	}
	return found
}

// TestChunkingReturnsChunksOfResults is the conformance test "should
// return chunks of results for list calls" (chunking.go:83-128), on both
// servers: 400 objects listed in pages of 17, three times; every page at
// the first page's resourceVersion, with the exact remainingItemCount on
// every page but the last, which has no continue; then all at once.
// Beyond chunking.go, every continue token is checked to be upstream's
// (base64url JSON {"v","rv","start"}, rv the list's RV, start the key after
// the page's last item).
func TestChunkingReturnsChunksOfResults(t *testing.T) {
	t.Parallel()
	ns, targets := pagingTargets(t)
	want := expectedNames()
	total := len(want)
	for _, target := range targets {
		t.Run(target.name, func(t *testing.T) {
			target.page(t)
			client := target.client.CoreV1().ConfigMaps(ns)
			ctx := t.Context()
			seedTemplates(t, target.client, ns, numberOfTemplates)
			for round := range 3 { // chunking.go:88
				opts := metav1.ListOptions{}
				found, pages := 0, 0
				var lastRV string
				for {
					opts.Limit = 17 // chunking.go:95
					list, err := client.List(ctx, opts)
					if err != nil {
						t.Fatalf("round %d page %d: %v", round, pages, err)
					}
					pages++
					if len(list.Items) > int(opts.Limit) { // chunking.go:99
						t.Fatalf("page of %d items, limit %d", len(list.Items), opts.Limit)
					}
					if lastRV == "" { // chunking.go:101-104
						lastRV = list.ResourceVersion
					}
					if list.ResourceVersion != lastRV {
						t.Fatalf("page %d at resourceVersion %s, the first at %s", pages, list.ResourceVersion, lastRV)
					}
					checkPageCount(t, list, found, total) // chunking.go:105-110
					found = checkNames(t, list, want, found)
					if list.Continue == "" { // chunking.go:115-118
						break
					}
					// Ours: a token in upstream's form, for the list's RV,
					// starting just after the page's last key.
					token := decodeToken(t, list.Continue)
					if fmt.Sprint(token.ResourceVersion) != list.ResourceVersion {
						t.Fatalf("token rv %d, list resourceVersion %s", token.ResourceVersion, list.ResourceVersion)
					}
					if last := list.Items[len(list.Items)-1].Name; token.StartKey != last+"\x00" {
						t.Fatalf("token start %q, want %q", token.StartKey, last+"\x00")
					}
					opts.Continue = list.Continue
				}
				if found != total { // chunking.go:120
					t.Fatalf("round %d: %d items in %d pages, want %d", round, found, pages, total)
				}
			}
			// chunking.go:123-127: a limit above the total, one answer.
			list, err := client.List(ctx, metav1.ListOptions{Limit: int64(total + 1)})
			if err != nil {
				t.Fatal(err)
			}
			if len(list.Items) != total || list.Continue != "" {
				t.Fatalf("limit %d: %d items, continue %q; want %d items, no continue", total+1, len(list.Items), list.Continue, total)
			}
		})
	}
}

// expiredAnswer is what a server said to an expired continue token.
type expiredAnswer struct {
	status metav1.Status
	start  string // the start key of the token it handed back
}

// TestChunkingContinuesInconsistentlyAfterCompaction is the conformance
// test "should support continue listing from the last key if the original
// version has been compacted away, though the list is inconsistent"
// (chunking.go:144-234), on both servers: a first page of 40; etcd
// compacted past it; continuing is 410 Expired with a new token in the
// Status's metadata.continue, which lists on from the same key at a newer
// resourceVersion. Then the two servers' 410s are compared: the same code,
// reason and message, and tokens that start at the same key with rv -1
// ("the latest"), as upstream's `handleCompactedErrorForPaging` makes them
// (k8s.io/apiserver@v0.37.0/pkg/storage/etcd3/errors.go:77-88).
func TestChunkingContinuesInconsistentlyAfterCompaction(t *testing.T) {
	t.Parallel()
	ns, targets := pagingTargets(t)
	want := expectedNames()
	total := len(want)
	answers := map[string]expiredAnswer{}
	for _, target := range targets {
		t.Run(target.name, func(t *testing.T) {
			if target.compact == nil {
				t.Skipf("%s: the cluster is not a labcluster: the test cannot compact its etcd", target.name)
			}
			target.compactAlone(t)
			client := target.client.CoreV1().ConfigMaps(ns)
			ctx := t.Context()
			seedTemplates(t, target.client, ns, numberOfTemplates)

			// chunking.go:149-163: the first page.
			oneTenth := int64(numberOfTemplates / 10)
			opts := metav1.ListOptions{Limit: oneTenth}
			list, err := client.List(ctx, opts)
			if err != nil {
				t.Fatal(err)
			}
			firstToken, firstRV := list.Continue, list.ResourceVersion
			if firstToken == "" {
				t.Fatalf("first page of %d: no continue", len(list.Items))
			}
			checkPageCount(t, list, 0, total)

			// Ours: instead of waiting for kube-apiserver's compactor
			// (chunking.go:168 polls up to twice its 5-minute interval),
			// write once elsewhere, so that etcd moves past the first
			// page's revision (compaction keeps the revision it is at),
			// and compact now.
			bump, err := target.client.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{GenerateName: "paging-bump-"}}, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				target.client.CoreV1().ConfigMaps("default").Delete(context.Background(), bump.Name, metav1.DeleteOptions{})
			})
			if err := target.compact(ctx); err != nil {
				t.Fatal(err)
			}

			// chunking.go:165-188: continue until the token has expired;
			// the 410 carries a token to go on with.
			opts.Continue = firstToken
			var expired *apierrors.StatusError
			err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
				_, err := client.List(ctx, opts)
				if err == nil {
					return false, nil // not expired yet (the real Cacher drops snapshots within 15 s)
				}
				if !apierrors.IsResourceExpired(err) {
					return false, err
				}
				status, ok := err.(*apierrors.StatusError)
				if !ok {
					return false, fmt.Errorf("expected an API status error, got %T", err)
				}
				expired = status
				return true, nil
			})
			if err != nil {
				t.Fatalf("continuing after compaction: %v", err)
			}
			inconsistentToken := expired.ErrStatus.ListMeta.Continue
			if inconsistentToken == "" {
				t.Fatalf("410 without a continue token: %+v", expired.ErrStatus)
			}
			token := decodeToken(t, inconsistentToken)
			answers[target.name] = expiredAnswer{status: expired.ErrStatus, start: token.StartKey}

			// chunking.go:190-207: the second page with that token, at a
			// newer resourceVersion.
			opts.Continue = inconsistentToken
			list, err = client.List(ctx, opts)
			if err != nil {
				t.Fatalf("list with the inconsistent token: %v", err)
			}
			if list.ResourceVersion == firstRV {
				t.Fatalf("inconsistent continue served at the first page's resourceVersion %s", firstRV)
			}
			if len(list.Items) != int(opts.Limit) {
				t.Fatalf("second page: %d items, want %d", len(list.Items), opts.Limit)
			}
			found := int(oneTenth)
			checkPageCount(t, list, found, total)
			found = checkNames(t, list, want, found)

			// chunking.go:209-233: every remaining page at that newer
			// resourceVersion.
			opts.Continue = list.Continue
			lastRV := list.ResourceVersion
			for opts.Continue != "" {
				list, err := client.List(ctx, opts)
				if err != nil {
					t.Fatal(err)
				}
				checkPageCount(t, list, found, total)
				if len(list.Items) > int(opts.Limit) {
					t.Fatalf("page of %d items, limit %d", len(list.Items), opts.Limit)
				}
				if list.ResourceVersion != lastRV {
					t.Fatalf("page at resourceVersion %s, want %s", list.ResourceVersion, lastRV)
				}
				found = checkNames(t, list, want, found)
				opts.Continue = list.Continue
			}
			if found != total {
				t.Fatalf("%d items, want %d", found, total)
			}
		})
	}
	real, mini := answers["real"], answers["mini"]
	if real.start == "" || mini.start == "" {
		return // a subtest failed or skipped: nothing to compare
	}
	// The Status objects, continue tokens aside (their rv is -1 on both:
	// decodeToken and below), must be the same.
	if real.start != mini.start {
		t.Errorf("inconsistent token starts at %q on real, %q on mini", real.start, mini.start)
	}
	real.status.ListMeta.Continue, mini.status.ListMeta.Continue = "", ""
	if !reflect.DeepEqual(real.status, mini.status) {
		t.Errorf("410 for a compacted continue token:\nreal %+v\nmini %+v", real.status, mini.status)
	}
	for name, a := range answers {
		if a.status.Code != 410 || a.status.Reason != metav1.StatusReasonExpired {
			t.Errorf("%s: %d %s, want 410 Expired", name, a.status.Code, a.status.Reason)
		}
	}
}

// encodeToken makes a continue token from JSON, for the bad-token cases.
func encodeToken(json string) string { return base64.RawURLEncoding.EncodeToString([]byte(json)) }

// TestBadContinueTokensAnswerAsTheRealAPIServer: a malformed or forged
// continue token gets, from the miniapiserver, the HTTP status and Status
// body (reason, message) that the real apiserver sends. Upstream's answer
// comes from `ValidateListOptions`, which decodes the token with
// `DecodeContinue` (k8s.io/apiserver@v0.37.0/pkg/storage/interfaces.go:371-379),
// and the miniapiserver's Cacher calls the same function first.
func TestBadContinueTokensAnswerAsTheRealAPIServer(t *testing.T) {
	t.Parallel()
	ns, targets := pagingTargets(t)
	valid := encodeToken(`{"v":"meta.k8s.io/v1","rv":5,"start":"a\u0000"}`)
	cases := []struct {
		name  string
		query map[string]string
		code  int
	}{
		{"not base64", map[string]string{"continue": "!!!"}, 400},
		{"not JSON", map[string]string{"continue": encodeToken("not json")}, 400},
		{"rv 0", map[string]string{"continue": encodeToken(`{"v":"meta.k8s.io/v1","rv":0,"start":"a"}`)}, 400},
		{"no start", map[string]string{"continue": encodeToken(`{"v":"meta.k8s.io/v1","rv":5,"start":""}`)}, 400},
		{"unknown version", map[string]string{"continue": encodeToken(`{"v":"meta.k8s.io/v2","rv":5,"start":"a"}`)}, 400},
		{"start outside the collection", map[string]string{"continue": encodeToken(`{"v":"meta.k8s.io/v1","rv":5,"start":"../secrets/x"}`)}, 400},
		{"with a resourceVersion", map[string]string{"continue": valid, "resourceVersion": "5"}, 400},
		{"with resourceVersionMatch", map[string]string{"continue": valid, "resourceVersion": "5", "resourceVersionMatch": "Exact"}, 422},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var answers []metav1.Status
			for _, target := range targets {
				req := target.client.CoreV1().RESTClient().Get().Namespace(ns).Resource("configmaps").Param("limit", "5")
				for k, v := range tc.query {
					req = req.Param(k, v)
				}
				var code int
				body, _ := req.Do(t.Context()).StatusCode(&code).Raw()
				var status metav1.Status
				if err := json.Unmarshal(body, &status); err != nil || status.Kind != "Status" {
					t.Fatalf("%s: %d %s: not a Status", target.name, code, body)
				}
				if code != tc.code || int(status.Code) != tc.code {
					t.Errorf("%s: HTTP %d, Status code %d, want %d: %s", target.name, code, status.Code, tc.code, body)
				}
				answers = append(answers, status)
			}
			if !reflect.DeepEqual(answers[0], answers[1]) {
				t.Errorf("real %+v\nmini %+v", answers[0], answers[1])
			}
			t.Logf("%d %s: %s", answers[0].Code, answers[0].Reason, answers[0].Message)
		})
	}
}

// TestListLimitFiveGivesAContinueToken: the README's example on both
// servers. GET .../configmaps?limit=5 in a namespace of 30 ConfigMaps (and
// kube-root-ca.crt) answers 5 items, metadata.continue and
// metadata.remainingItemCount 26; the continue token gives the next 5; and
// a Table (what kubectl get asks for) carries the same paging.
func TestListLimitFiveGivesAContinueToken(t *testing.T) {
	t.Parallel()
	ns, targets := pagingTargets(t)
	for _, target := range targets {
		t.Run(target.name, func(t *testing.T) {
			target.page(t)
			ctx := t.Context()
			seedTemplates(t, target.client, ns, 30)
			rc := target.client.CoreV1().RESTClient()
			body, err := rc.Get().Namespace(ns).Resource("configmaps").Param("limit", "5").DoRaw(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var page struct {
				Metadata struct {
					ResourceVersion    string `json:"resourceVersion"`
					Continue           string `json:"continue"`
					RemainingItemCount *int64 `json:"remainingItemCount"`
				} `json:"metadata"`
				Items []corev1.ConfigMap `json:"items"`
			}
			if err := json.Unmarshal(body, &page); err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, item := range page.Items {
				names = append(names, item.Name)
			}
			wantNames := []string{"kube-root-ca.crt", "template-0000", "template-0001", "template-0002", "template-0003"}
			if !slices.Equal(names, wantNames) {
				t.Fatalf("limit=5: items %v, want %v", names, wantNames)
			}
			if page.Metadata.RemainingItemCount == nil || *page.Metadata.RemainingItemCount != 26 {
				t.Fatalf("limit=5: remainingItemCount %v, want 26", page.Metadata.RemainingItemCount)
			}
			token := decodeToken(t, page.Metadata.Continue)
			if fmt.Sprint(token.ResourceVersion) != page.Metadata.ResourceVersion || token.StartKey != "template-0003\x00" {
				t.Fatalf("token %+v for a list at %s", token, page.Metadata.ResourceVersion)
			}
			next, err := target.client.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{Limit: 5, Continue: page.Metadata.Continue})
			if err != nil {
				t.Fatal(err)
			}
			if len(next.Items) != 5 || next.Items[0].Name != "template-0004" || next.ResourceVersion != page.Metadata.ResourceVersion {
				t.Fatalf("second page: %d items from %s at %s", len(next.Items), next.Items[0].Name, next.ResourceVersion)
			}

			body, err = rc.Get().Namespace(ns).Resource("configmaps").Param("limit", "5").
				SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").DoRaw(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var table metav1.Table
			if err := json.Unmarshal(body, &table); err != nil {
				t.Fatal(err)
			}
			if len(table.Rows) != 5 || table.Continue == "" || table.RemainingItemCount == nil || *table.RemainingItemCount != 26 {
				t.Fatalf("Table: %d rows, continue %q, remainingItemCount %v", len(table.Rows), table.Continue, table.RemainingItemCount)
			}
		})
	}
}
