package etcd3_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/storage"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/listwatch-labs/listwatch-labs/labs/04-cacher/internal/labtest"
)

// etcd36Version is the etcd server the fallback is shown against: the
// version Kubernetes 1.36 ran (kubeadm's DefaultEtcdVersion in Kubernetes 1.36), the
// last minor without RangeStream. etcd3/testdata/etcd-3.6/go.mod pins it.
const etcd36Version = "3.6.8"

// etcd36Binary finds a real etcd 3.6.8 server binary, or builds one:
//   - $LAB04_ETCD36, if set;
//   - else <repo>/.cluster/bin/etcd-3.6.8, if it exists;
//   - else it builds go.etcd.io/etcd/server/v3 from the pinned module
//     etcd3/testdata/etcd-3.6 into that path, with GOPROXY=off: from the module
//     cache only, never from the network (about 2 minutes, once).
//
// It fails the test, saying why, if it can do none of these.
func etcd36Binary(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("LAB04_ETCD36"); p != "" {
		return p
	}
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(root, ".cluster", "bin", "etcd-"+etcd36Version)
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	module, err := filepath.Abs(filepath.Join("testdata", "etcd-3.6"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	tmp := fmt.Sprintf("%s.%d.tmp", bin, os.Getpid())
	t.Logf("building etcd %s from %s into %s (module cache only)", etcd36Version, module, bin)
	cmd := exec.Command("go", "build", "-o", tmp, "go.etcd.io/etcd/server/v3")
	cmd.Dir = module
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOPROXY=off", "GOFLAGS=-mod=mod -buildvcs=false")
	if out, err := cmd.CombinedOutput(); err != nil {
		os.Remove(tmp)
		t.Fatalf("cannot build a real etcd %s to show the fallback: %v\n%s\n"+
			"Build it yourself with network access (cd labs/04-cacher/etcd3/testdata/etcd-3.6 && GOWORK=off go build -o ../../../../../.cluster/bin/etcd-%s go.etcd.io/etcd/server/v3), "+
			"or set LAB04_ETCD36 to an etcd %s binary.", etcd36Version, err, out, etcd36Version, etcd36Version)
	}
	if err := os.Rename(tmp, bin); err != nil {
		t.Fatal(err)
	}
	return bin
}

// startEtcd36 runs a real etcd 3.6.8 server on 127.0.0.1 with a temporary
// data dir, until the test ends, and returns its client URL.
func startEtcd36(t *testing.T) string {
	t.Helper()
	bin := etcd36Binary(t)
	version, err := exec.Command(bin, "--version").Output()
	if err != nil || !strings.Contains(string(version), "etcd Version: "+etcd36Version) {
		t.Fatalf("%s --version: %v\n%s (want etcd %s)", bin, err, version, etcd36Version)
	}
	clientURL, peerURL := "http://"+freeAddr(t), "http://"+freeAddr(t)
	var log bytes.Buffer
	cmd := exec.Command(bin,
		"--name", "lab04",
		"--data-dir", t.TempDir(),
		"--listen-client-urls", clientURL, "--advertise-client-urls", clientURL,
		"--listen-peer-urls", peerURL, "--initial-advertise-peer-urls", peerURL,
		"--initial-cluster", "lab04="+peerURL,
		"--log-level", "warn")
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
		if t.Failed() {
			t.Logf("etcd %s log:\n%s", etcd36Version, log.String())
		}
	})
	return clientURL
}

// freeAddr returns a loopback address whose port was free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// Against a real etcd 3.6, which answers RangeStream with
// codes.Unimplemented, a list falls back to paged Range within the same
// call and gets every object; the store then does not try RangeStream for
// 10 minutes (measured on an injected clock), and tries again after. The
// watch's initial sync falls back the same way.
func TestGetListFallsBackOnEtcd36(t *testing.T) {
	checkLeaks(t)
	ctx := context.Background()
	endpoint := startEtcd36(t)
	client, counter := countingClient(t, endpoint)
	// Wait for the server, with a deadline.
	ready, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	status, err := client.Status(ready, endpoint)
	if err != nil {
		t.Fatalf("etcd %s at %s not ready: %v", etcd36Version, endpoint, err)
	}
	if status.Version != etcd36Version {
		t.Fatalf("server version %s, want %s", status.Version, etcd36Version)
	}

	clk := testingclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	cfg := labtest.ConfigMapStorage(client)
	cfg.Clock = clk
	s := storeWith(t, cfg)
	createN(t, s, "old", 3)
	list := func(want int) {
		t.Helper()
		out := &v1.ConfigMapList{}
		if err := s.GetList(ctx, "/configmaps/old", storage.ListOptions{Recursive: true, Predicate: labtest.Predicate(nil, nil)}, out); err != nil {
			t.Fatal(err)
		}
		if names(out) != "[n0 n1 n2]" {
			t.Errorf("list %s", names(out))
		}
		if got := counter.count(methodRangeStream); got != want {
			t.Errorf("RangeStream tried %d times, want %d", got, want)
		}
	}

	counter.reset()
	list(1) // tried, refused, paged in the same call
	if got := counter.count(methodRange); got != 1 {
		t.Errorf("Range calls %d, want 1 (the fallback)", got)
	}
	list(1) // not tried again
	clk.Step(10*time.Minute - time.Second)
	list(1) // still not
	clk.Step(time.Second)
	list(2) // 10 minutes later: tried again, refused again
	list(2)

	// The watch's initial sync, on a new store, which has not seen the
	// refusal yet: it tries RangeStream, then pages.
	s2 := storeWith(t, labtest.ConfigMapStorage(client))
	w := watchSync(t, s2, counter, "old", 3, 1, 1)
	defer w.Stop()
	// And the watch goes on after the sync.
	if err := s2.Create(ctx, key("old", "later"), cm("old", "later", "1"), nil, 0); err != nil {
		t.Fatal(err)
	}
	expectEvent(t, w, watch.Added, "later")
}
