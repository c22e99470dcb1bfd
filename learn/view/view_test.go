package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// chromium finds the browser the way scripts/render-diagrams.sh does:
// $CHROMIUM, else chromium or chromium-browser on PATH. scripts/test.sh
// installs Debian's chromium first and sets LABS_REQUIRE_BROWSER, so there
// a missing browser fails the test; elsewhere it skips.
func chromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("LABS_REQUIRE_BROWSER") != "" {
		t.Fatal("no chromium on this machine (Debian: apt-get install chromium; or set CHROMIUM=/path/to/chrome)")
	}
	t.Skip("no chromium on this machine (Debian: apt-get install chromium; or set CHROMIUM=/path/to/chrome)")
	return ""
}

// screenshotDir is where the test leaves its screenshots:
// $VIEW_SCREENSHOTS, else .cluster/view in the workspace.
func screenshotDir(t *testing.T) string {
	if d := os.Getenv("VIEW_SCREENSHOTS"); d != "" {
		return d
	}
	dir, _ := os.Getwd()
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			return filepath.Join(dir, ".cluster", "view")
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return t.TempDir()
		}
		dir = parent
	}
}

// TestViewInABrowser drives the page in headless chromium through three
// lessons, checking what the page shows, not what the Go side knows:
//  1. a slow watcher is cut off by the dispatcher (lab 04's time budget);
//  2. after a compaction and a restart during which another API server
//     wrote, the informer's watch gets 410 and its Reflector relists, and
//     a watcher from RV 1 gets 410 from the new Cacher;
//  3. after a burst of 1,000 writes the Indexer panel settles on the
//     number of ConfigMaps a LIST returns.
//
// No request of the page may leave 127.0.0.1. It saves a screenshot of each
// lesson in screenshotDir.
func TestViewInABrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the stack and a browser")
	}
	chrome := chromium(t)
	outDir := screenshotDir(t)
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	log := &eventLog{}
	s, err := startStack(ctx, log, "", "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close) // after the page's server and browser (openPage) stop
	p := openPage(t, ctx, s, chrome, outDir)
	do, waitText, shot := p.do, p.waitText, p.shot

	// 1. A slow watcher, then a burst: the dispatcher cuts it off.
	do("add a slow watcher", chromedp.Click(chromedp.CSS(`button[data-kind="slow"]`)))
	waitText("the slow watcher", "#mine", func(s string) bool { return strings.Contains(s, "slow") && strings.Contains(s, "running") })
	do("burst 300", chromedp.SetValue(chromedp.CSS("#burst-n"), "300"), chromedp.Click(chromedp.CSS("#burst")))
	ended := waitText("the slow watcher cut off", "#cw-ended", func(s string) bool { return strings.Contains(s, "too slow") })
	mine := waitText("its client sees the end", "#mine", func(s string) bool { return strings.Contains(s, "stream ended") })
	t.Logf("ended watchers: %s\nyour watchers: %s", ended, mine)
	shot("slow-watcher.png")

	// 2. Compact, then restart while another API server writes.
	listsBefore := waitText("lists", "#reflector-lists", func(s string) bool { return s != "" && s != "–" })
	do("compact", chromedp.Click(chromedp.CSS(`button[data-do="compact"]`)))
	waitText("compacted", "#etcd-compacted", func(s string) bool { return s != "never" && s != "–" })
	do("restart", chromedp.Click(chromedp.CSS(`button[data-do="restart"]`)))
	waitText("the relist", "#reflector-lists", func(s string) bool { return s != listsBefore })
	waitText("watching again", "#reflector-phase", func(s string) bool { return s == "watching" })
	logText := waitText("the 410 in the log", "#log", func(s string) bool { return strings.Contains(s, "too old resource version") })
	if !strings.Contains(logText, "written straight to etcd") {
		t.Errorf("the log does not say what was written while the API server was down:\n%s", logText)
	}
	// The restarted Cacher's ring starts at the revision it listed: a
	// watch from RV 1 is 410.
	do("watch from RV 1", chromedp.Click(chromedp.CSS(`button[data-kind="oldrv"]`)))
	waitText("the 410 for RV 1", "#mine", func(s string) bool { return strings.Contains(s, "ERROR 410 Expired: too old resource version: 1") })
	shot("relist.png")

	// 3. A burst of 1,000: the Indexer settles on what a LIST returns.
	do("burst 1000", chromedp.SetValue(chromedp.CSS("#burst-n"), "1000"), chromedp.Click(chromedp.CSS("#burst")))
	waitText("the burst done", "#result", func(s string) bool { return strings.Contains(s, "1000 of 1000") })
	list, err := s.client.CoreV1().ConfigMaps(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprint(len(list.Items))
	start := time.Now()
	waitText("the Indexer settled", "#indexer-objects", func(s string) bool { return s == want })
	t.Logf("the Indexer panel showed %s objects %v after the test's own LIST returned (polled every 100 ms)", want, time.Since(start).Round(time.Millisecond))
	shot("burst.png")

	p.checkRequests()
}

// page is the view served on 127.0.0.1 and opened in headless chromium.
type page struct {
	t      *testing.T
	ctx    context.Context
	base   string
	outDir string

	browser  context.Context
	reqMu    sync.Mutex
	requests []string
}

// openPage serves the view of s, opens it in chromium and waits until the
// page is live. Everything stops when the test ends.
func openPage(t *testing.T, ctx context.Context, s *Stack, chrome, outDir string) *page {
	t.Helper()
	ln, err := listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &page{t: t, ctx: ctx, base: "http://" + ln.Addr().String() + "/", outDir: outDir}
	srvCtx, stopSrv := context.WithCancel(ctx)
	srv := &http.Server{Handler: newHandler(srvCtx, s, ln.Addr().String())}
	go srv.Serve(ln)
	t.Cleanup(func() { stopSrv(); srv.Close() })

	alloc, stopAlloc := chromedp.NewExecAllocator(ctx, append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chrome), chromedp.NoSandbox, chromedp.WindowSize(1400, 1900),
		chromedp.UserDataDir(t.TempDir()))...)
	browser, stopBrowser := chromedp.NewContext(alloc)
	t.Cleanup(func() { stopBrowser(); stopAlloc() })
	p.browser = browser
	// Every request the page makes, from the browser's own network events
	// (subscribed before the page opens).
	reqEvents := chromedp.Events(browser, network.RequestWillBeSent)
	go func() {
		for ev, err := range reqEvents {
			if err != nil {
				return
			}
			p.reqMu.Lock()
			p.requests = append(p.requests, ev.Request.URL)
			p.reqMu.Unlock()
		}
	}()
	p.do("open the page", chromedp.Navigate(p.base))
	p.waitText("connect", "#conn", func(s string) bool { return s == "live" })
	return p
}

func (p *page) do(what string, actions ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	if err := chromedp.Do(p.browser, actions...); err != nil {
		p.t.Fatalf("%s: %v", what, err)
	}
}

// waitText polls the page until the element's text satisfies ok.
func (p *page) waitText(what string, sel chromedp.CSS, ok func(string) bool) string {
	p.t.Helper()
	var text string
	err := wait.PollUntilContextTimeout(p.ctx, 100*time.Millisecond, 90*time.Second, true, func(context.Context) (bool, error) {
		got, err := chromedp.Run(p.browser, chromedp.Text(sel))
		if err != nil {
			return false, nil
		}
		text = got
		return ok(text), nil
	})
	if err != nil {
		p.t.Fatalf("%s: %s never showed what we wait for; last text: %q", what, sel, text)
	}
	return text
}

func (p *page) shot(name string) {
	p.t.Helper()
	png, err := chromedp.Run(p.browser, chromedp.FullScreenshot(100))
	if err != nil {
		p.t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.WriteFile(filepath.Join(p.outDir, name), png, 0o644); err != nil {
		p.t.Fatal(err)
	}
}

// checkRequests: no request of the page left its own server.
func (p *page) checkRequests() {
	p.t.Helper()
	p.reqMu.Lock()
	defer p.reqMu.Unlock()
	for _, u := range p.requests {
		if !strings.HasPrefix(u, p.base) {
			p.t.Errorf("the page requested %s, outside %s", u, p.base)
		}
	}
	if len(p.requests) < 3 {
		p.t.Errorf("saw %d requests (%v): the listener is not working", len(p.requests), p.requests)
	}
}
