package main

import (
	"bytes"
	"context"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// wantHops is the course stack's path, in order.
var wantHops = []string{
	"client -> apiserver",
	"etcd -> Cacher",
	"Cacher -> WatchServer",
	"HTTP -> client",
	"ListWatch -> Reflector",
	"Reflector -> FIFO",
	"FIFO -> Indexer",
	"Indexer -> handler",
}

// TestTraceEveryHopInOrder: one write through the course stack reaches
// every hop, in the order of the data path, with non-negative latencies;
// the mermaid diagram has one arrow per hop.
func TestTraceEveryHopInOrder(t *testing.T) {
	tr, _, err := runLabStack(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	hops := tr.Hops()
	var names []string
	for _, h := range hops {
		names = append(names, h.Name)
	}
	if strings.Join(names, "\n") != strings.Join(wantHops, "\n") {
		t.Fatalf("hops:\n%s\nwant, in this order:\n%s", strings.Join(names, "\n"), strings.Join(wantHops, "\n"))
	}
	for i := range hops {
		if hops[i].At < 0 || (i > 0 && hops[i].At < hops[i-1].At) {
			t.Errorf("hop %d (%s) at %v, after hop %d at %v: a negative latency", i+1, hops[i].Name, hops[i].At, i, hops[i-1].At)
		}
		if i > 0 && hops[i].Detail != "frame bytes" && !strings.Contains(hops[i].Detail, "rv ") {
			t.Errorf("hop %s does not say which version it saw: %q", hops[i].Name, hops[i].Detail)
		}
	}
	diagram := mermaid(StackTrace{Stack: tr.Stack, Hops: hops})
	if n := strings.Count(diagram, "->>"); n != len(wantHops) {
		t.Errorf("the diagram has %d arrows, want %d:\n%s", n, len(wantHops), diagram)
	}
}

// TestTracePageIsNotBlank: the HTML page, screenshotted by headless
// Chromium, has ink on it (bars, text), not a white page.
func TestTracePageIsNotBlank(t *testing.T) {
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("no chromium here (Debian: apt-get install chromium)")
	}
	tr, storage, err := runLabStack(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	pagePath := filepath.Join(dir, "trace.html")
	if err := os.WriteFile(pagePath, []byte(page([]StackTrace{{Stack: tr.Stack, Storage: storage, Hops: tr.Hops()}}, timeNow())), 0o644); err != nil {
		t.Fatal(err)
	}
	shot := filepath.Join(dir, "trace.png")
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars",
		"--user-data-dir="+filepath.Join(dir, "profile"), "--window-size=1200,900", "--screenshot="+shot, "file://"+pagePath).CombinedOutput()
	if err != nil {
		t.Fatalf("chromium: %v\n%s", err, out)
	}
	data, err := os.ReadFile(shot)
	if err != nil {
		t.Fatalf("no screenshot: %v\n%s", err, out)
	}
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	b := img.Bounds()
	ink, blue := 0, 0
	for y := b.Min.Y; y < b.Max.Y; y += 2 {
		for x := b.Min.X; x < b.Max.X; x += 2 {
			r, g, bl, _ := img.At(x, y).RGBA()
			if r < 0xe000 || g < 0xe000 || bl < 0xe000 {
				ink++
			}
			if bl > 0xa000 && r < 0x6000 { // the bars' blue
				blue++
			}
		}
	}
	total := (b.Dx() / 2) * (b.Dy() / 2)
	if ink < total/100 || blue == 0 {
		t.Fatalf("the screenshot looks blank: %d of %d sampled pixels not white, %d blue", ink, total, blue)
	}
}
