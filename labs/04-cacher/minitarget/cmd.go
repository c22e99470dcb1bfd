// The `mini` command: what a test does to a miniapiserver that a client of
// a kube-apiserver cannot (compact etcd now, restart the server, read
// /metrics, stall a watch, flood a namespace). Test support, no upstream
// counterpart; each subcommand says what upstream behaviour it provokes.

package minitarget

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"

	"github.com/listwatch-labs/listwatch-labs/labkit"
	"github.com/listwatch-labs/listwatch-labs/labs/04-cacher/miniapiserver"
)

// Cmd is the `mini` command, the lab's tool (register it as "mini" in
// labkit.Options.Cmds; it acts on the script's current target, which must
// be a miniapiserver):
//
//	mini compact                       compact etcd at its current revision (POST /lab/compact)
//	mini restart                       restart the server on the same etcd dir, address, CA and token
//	mini metrics RESOURCE NAME...      print those lines of GET /metrics for RESOURCE
//	mini waitmetric RESOURCE NAME N    wait until the metric is N
//	mini stall start NAME RESOURCE     open a watch (HTTP/1.1) and read nothing
//	mini stall finish NAME             read the stalled watch to its end; say how it ended
//	mini flood N KB                    create N configmaps of KB kilobytes each in $NS, stop early once a watcher is terminated
func Cmd(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("mini: no negation")
	}
	if len(args) == 0 {
		ts.Fatalf("usage: mini compact|restart|metrics|waitmetric|stall|flood ...")
	}
	in := Of(ts)
	c := labkit.Target(ts)
	switch args[0] {
	case "compact":
		body := postAdmin(ts, c, "/lab/compact")
		var out struct{ Revision int64 }
		ts.Check(json.Unmarshal(body, &out))
		if out.Revision <= 0 {
			ts.Fatalf("mini compact: answer %s", body)
		}
	case "restart":
		ts.Check(in.Restart())
	case "metrics":
		if len(args) < 3 {
			ts.Fatalf("usage: mini metrics RESOURCE NAME...")
		}
		all := scrape(ts, c)
		for _, name := range args[2:] {
			line, ok := metricLine(all, args[1], name)
			if !ok {
				ts.Fatalf("mini metrics: no %s for %s in /metrics", name, args[1])
			}
			fmt.Fprintln(ts.Stdout(), line)
		}
	case "waitmetric":
		if len(args) != 4 {
			ts.Fatalf("usage: mini waitmetric RESOURCE NAME VALUE")
		}
		var line string
		err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
			line, _ = metricLine(scrape(ts, c), args[1], args[2])
			return strings.HasSuffix(line, " "+args[3]), nil
		})
		if err != nil {
			ts.Fatalf("mini waitmetric: %s is %q after 30s, want %s", args[2], line, args[3])
		}
	case "stall":
		cmdStall(ts, c, args[1:])
	case "flood":
		if len(args) != 3 {
			ts.Fatalf("usage: mini flood N KB")
		}
		n, err1 := strconv.Atoi(args[1])
		kb, err2 := strconv.Atoi(args[2])
		if err1 != nil || err2 != nil {
			ts.Fatalf("mini flood: N and KB are numbers")
		}
		flood(ts, in, c, n, kb)
	default:
		ts.Fatalf("mini: unknown subcommand %q", args[0])
	}
}

func postAdmin(ts *testscript.TestScript, c *labkit.Cluster, path string) []byte {
	client, err := rest.HTTPClientFor(c.Config)
	ts.Check(err)
	resp, err := client.Post(c.Server+path, "application/json", nil)
	ts.Check(err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	ts.Check(err)
	if resp.StatusCode != http.StatusOK {
		ts.Fatalf("POST %s: %s: %s", path, resp.Status, body)
	}
	return body
}

// scrape reads GET /metrics as a client would.
func scrape(ts *testscript.TestScript, c *labkit.Cluster) string {
	client, err := rest.HTTPClientFor(c.Config)
	ts.Check(err)
	resp, err := client.Get(c.Server + "/metrics")
	ts.Check(err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	ts.Check(err)
	if resp.StatusCode != http.StatusOK {
		ts.Fatalf("GET /metrics: %s", resp.Status)
	}
	return string(body)
}

// metricLine finds NAME's sample for resource. NAME may carry more labels
// in braces, e.g. apiserver_watch_cache_consistent_read_total{fallback="false"}.
func metricLine(all, resource, name string) (string, bool) {
	base, extra, _ := strings.Cut(name, "{")
	extra = strings.TrimSuffix(extra, "}")
	for _, line := range strings.Split(all, "\n") {
		if !strings.HasPrefix(line, base+"{") || !strings.Contains(line, `resource="`+resource+`"`) {
			continue
		}
		if extra != "" && !strings.Contains(line, extra) {
			continue
		}
		return line, true
	}
	return "", false
}

// stalled is a watch whose client reads nothing.
type stalled struct {
	raw  *net.TCPConn
	conn *tls.Conn
	r    *bufio.Reader
}

type stalledWatches map[string]*stalled

func (s stalledWatches) Close() error {
	for _, w := range s {
		w.conn.Close()
	}
	return nil
}

type stallKey struct{}

// cmdStall: a watcher that does not read. A raw HTTP/1.1 request over TLS
// with a small socket receive buffer: once the server's socket buffers are
// full, the WatchServer's write blocks, then the cacheWatcher's result and
// input channels fill, and the dispatcher's time budget runs out for it.
func cmdStall(ts *testscript.TestScript, c *labkit.Cluster, args []string) {
	watches := labkit.ScriptValue(ts, stallKey{}, func() stalledWatches { return stalledWatches{} })
	switch {
	case len(args) == 3 && args[0] == "start":
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(c.CAData)
		host := strings.TrimPrefix(c.Server, "https://")
		raw, err := net.Dial("tcp", host)
		ts.Check(err)
		// A small receive window, so the server's writes block soon.
		raw.(*net.TCPConn).SetReadBuffer(4096)
		conn := tls.Client(raw, &tls.Config{RootCAs: pool, ServerName: "127.0.0.1", NextProtos: []string{"http/1.1"}})
		ts.Check(conn.Handshake())
		ns := ts.Getenv("NS")
		fmt.Fprintf(conn, "GET /api/v1/namespaces/%s/%s?watch=1 HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nAccept: application/json\r\n\r\n", ns, args[2], host, c.Token)
		watches[args[1]] = &stalled{raw: raw.(*net.TCPConn), conn: conn, r: bufio.NewReader(conn)}
	case len(args) == 2 && args[0] == "finish":
		w, ok := watches[args[1]]
		if !ok {
			ts.Fatalf("mini stall finish: no stalled watch %q", args[1])
		}
		delete(watches, args[1])
		defer w.conn.Close()
		// Read at full speed now: a 4 KB window and delayed ACKs would
		// make the rest of the stream crawl.
		w.raw.SetReadBuffer(4 << 20)
		// A deadline against a server that never ends the stream, not a
		// timing: on a machine busy with a whole test run (-race, the other
		// scripts at once) a minute has run out before the end came.
		w.conn.SetReadDeadline(time.Now().Add(3 * time.Minute))
		resp, err := http.ReadResponse(w.r, nil)
		ts.Check(err)
		events, errors := 0, 0
		dec := json.NewDecoder(resp.Body)
		for {
			var ev struct{ Type string }
			if err := dec.Decode(&ev); err == io.EOF {
				break
			} else if err != nil {
				fmt.Fprintf(ts.Stdout(), "stream broken after %d events: %v\n", events, err)
				// Where is the watch path stuck? Its goroutines say.
				var b strings.Builder
				pprof.Lookup("goroutine").WriteTo(&b, 2)
				for _, g := range strings.Split(b.String(), "\n\n") {
					if strings.Contains(g, "watchserver") || strings.Contains(g, "cacheWatcher") {
						fmt.Fprintln(ts.Stderr(), g)
					}
				}
				return
			}
			events++
			if ev.Type == "ERROR" {
				errors++
			}
		}
		if events == 0 {
			ts.Fatalf("mini stall finish: the stalled watch got no events at all")
		}
		fmt.Fprintf(ts.Stdout(), "HTTP %d, stream ended cleanly (terminating chunk), ERROR events: %d\n", resp.StatusCode, errors)
	default:
		ts.Fatalf("usage: mini stall start NAME RESOURCE | mini stall finish NAME")
	}
}

// flood writes up to n configmaps of kb kilobytes into $NS, stopping as soon
// as the Cacher has terminated a watcher.
func flood(ts *testscript.TestScript, in *miniapiserver.Instance, c *labkit.Cluster, n, kb int) {
	before, _ := in.Metrics("configmaps")
	blob := strings.Repeat("x", kb*1024)
	ns := ts.Getenv("NS")
	for i := range n {
		_, err := c.Client.CoreV1().ConfigMaps(ns).Create(context.Background(), &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("flood-%04d", i)},
			Data:       map[string]string{"blob": blob},
		}, metav1.CreateOptions{})
		ts.Check(err)
		if m, _ := in.Metrics("configmaps"); m.WatchersTerminated > before.WatchersTerminated {
			return
		}
	}
}
