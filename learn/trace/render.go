package main

import (
	"fmt"
	"html"
	"path"
	"strings"
	"time"
)

// percent is part's share of whole, "<1%" for a sliver.
func percent(part, whole time.Duration) string {
	if whole <= 0 {
		return "-"
	}
	p := 100 * float64(part) / float64(whole)
	if p < 0.5 {
		return "&lt;1%"
	}
	return fmt.Sprintf("%.0f%%", p)
}

func ms(d time.Duration) string { return fmt.Sprintf("%.3f ms", float64(d)/float64(time.Millisecond)) }

// span names the steps a measured hop covers: "3. etcd -> Cacher",
// or "1-5. writer -> ... -> ListWatch" where a stack cannot be seen inside.
func span(h HopStats) string {
	first, last := hopIndex(h.Covers[0]), hopIndex(h.Name)
	if first == last {
		return fmt.Sprintf("%d. %s", last+1, h.Name)
	}
	return fmt.Sprintf("%d-%d. %s -> ... -> %s", first+1, last+1, steps[first].From, steps[last].To)
}

// text is what the command prints: per stack, each hop's median and 99th
// percentile latency, and where it was observed.
func text(traces []StackTrace) string {
	var b strings.Builder
	for _, st := range traces {
		fmt.Fprintf(&b, "%s, %d writes (storage: %s)\n", st.Stack, st.Writes, st.Storage)
		fmt.Fprintf(&b, "  %-36s %11s %11s   %s\n", "hop", "p50", "p99", "observed at")
		for _, h := range st.Hops {
			fmt.Fprintf(&b, "  %-36s %11s %11s   %s\n", span(h), ms(h.Latency.P50), ms(h.Latency.P99), h.Where)
		}
		fmt.Fprintf(&b, "  %-36s %11s %11s\n", "total, POST to OnAdd", ms(st.Total().P50), ms(st.Total().P99))
		fmt.Fprintf(&b, "  %-36s %11s %11s   %s\n", "the writer's Create returned", ms(st.Reply.P50), ms(st.Reply.P99), "(its reply, off the watch path)")
		for _, n := range st.Notes {
			fmt.Fprintf(&b, "  note: %s\n", n)
		}
	}
	return b.String()
}

// mermaid draws one stack's trace as a sequence diagram: one arrow per
// step, labelled with its median and 99th percentile latency. Steps a stack
// hides get one arrow into the component that hides them, unlabelled by
// time.
func mermaid(st StackTrace) string {
	var b strings.Builder
	b.WriteString("sequenceDiagram\n    autonumber\n")
	ids := map[string]string{}
	id := func(name string) string {
		if v, ok := ids[name]; ok {
			return v
		}
		v := fmt.Sprintf("P%d", len(ids)+1)
		ids[name] = v
		fmt.Fprintf(&b, "    participant %s as %s\n", v, name)
		return v
	}
	type arrow struct{ from, to, label string }
	var arrows []arrow
	for _, h := range st.Hops {
		first, last := steps[hopIndex(h.Covers[0])], steps[hopIndex(h.Name)]
		times := fmt.Sprintf("p50 %s, p99 %s", ms(h.Latency.P50), ms(h.Latency.P99))
		if len(h.Covers) == 1 {
			arrows = append(arrows, arrow{first.From, last.To, last.Short + ", " + times})
			continue
		}
		// kube-apiserver: POST, etcd write, watch cache and WatchServer inside.
		arrows = append(arrows,
			arrow{first.From, "kube-apiserver", "POST, then etcd, the watch cache, the WatchServer (not visible)"},
			arrow{"kube-apiserver", last.To, last.Short + ", " + times + ", since the POST"})
	}
	for _, a := range arrows {
		id(a.from)
		id(a.to)
	}
	// Mermaid reads ";" and "#" as syntax: keep labels plain.
	plain := strings.NewReplacer(";", ",", "#", "")
	for _, a := range arrows {
		fmt.Fprintf(&b, "    %s->>%s: %s\n", ids[a.from], ids[a.to], plain.Replace(a.label))
	}
	fmt.Fprintf(&b, "    Note over %s,%s: %s, %d writes, total p50 %s, p99 %s\n", ids[arrows[0].from], ids[arrows[len(arrows)-1].to],
		plain.Replace(st.Stack), st.Writes, ms(st.Total().P50), ms(st.Total().P99))
	return b.String()
}

// The stacks' colours, in the bars and the key.
var stackColors = []string{"#2f6fb0", "#d9822b"}

// page is the lesson: a self-contained HTML page (no scripts, nothing
// fetched) with the key, one row per step with both stacks' numbers
// and bars on one time scale, links to the code, and why the stacks differ.
// link turns a repository path into a link that works from the page's
// directory.
func page(traces []StackTrace, when time.Time, link func(string) string) string {
	e := html.EscapeString
	// The bars: each stack's measured hops one after the other (a waterfall
	// of medians), on one scale for both; the longest waterfall fills 85%.
	var longest time.Duration
	for _, st := range traces {
		var sum time.Duration
		for _, h := range st.Hops {
			sum += h.Latency.P50
		}
		longest = max(longest, sum)
	}
	if longest <= 0 {
		longest = time.Millisecond
	}
	scale := float64(longest) / 0.85
	pct := func(d time.Duration) float64 { return min(100, 100*float64(d)/scale) }

	var b strings.Builder
	b.WriteString(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>One write, hop by hop</title>
<style>
body { font: 15px/1.45 system-ui, sans-serif; margin: 24px auto; max-width: 1320px; padding: 0 20px; color: #1d2733; background: #fff; }
h1 { font-size: 22px; margin-bottom: 4px; } h2 { font-size: 17px; margin: 28px 0 8px; }
p { max-width: 980px; }
code { font-size: 13px; background: #f2f5f8; padding: 0 3px; border-radius: 3px; }
a { color: #1f5f9e; }
table { border-collapse: collapse; width: 100%; }
td, th { padding: 6px 8px; border-bottom: 1px solid #dde3ea; text-align: left; vertical-align: top; }
th { background: #f2f5f8; font-weight: 600; font-size: 13px; }
th.stack { text-align: center; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; font-size: 14px; }
td.hidden { text-align: center; color: #6b7785; font-size: 12px; background: repeating-linear-gradient(135deg, #f4f6f8 0 6px, #e6eaee 6px 12px); }
.what { color: #3b4754; font-size: 13px; margin-top: 2px; }
.refs { font-size: 12px; margin-top: 3px; color: #5b6875; }
.share { display: block; color: #6b7785; font-size: 11px; }
.tl { position: relative; height: 34px; background: #f7f9fb; min-width: 300px; }
.bar { position: absolute; height: 10px; border-radius: 2px; min-width: 2px; }
.whisker { position: absolute; height: 2px; }
.hide { position: absolute; height: 10px; background: repeating-linear-gradient(135deg, #c9d0d8 0 4px, #eef1f4 4px 8px); }
.c0 { background: ` + stackColors[0] + `; } .c1 { background: ` + stackColors[1] + `; }
.r0 { top: 5px; } .r1 { top: 20px; } .w0 { top: 9px; } .w1 { top: 24px; }
.key { display: grid; grid-template-columns: 90px 1fr; gap: 6px 14px; align-items: center; border: 1px solid #dde3ea; border-radius: 6px; padding: 12px 16px; max-width: 980px; }
.sw { position: relative; height: 14px; }
tr.total td { font-weight: 600; background: #fafbfc; }
ul.why li { margin: 6px 0; max-width: 1040px; }
</style></head><body>
<h1>One ConfigMap write, hop by hop</h1>
`)
	writes := 0
	if len(traces) > 0 {
		writes = traces[0].Writes
	}
	fmt.Fprintf(&b, "<p>Recorded %s by <code>scripts/labs trace</code>: %d ConfigMaps created one at a time through each stack (one warm-up write before them is not counted). "+
		"Time 0 is the moment the writer sends the POST; a write is done when an informer's handler receives it. "+
		"Each row is one step on the way, with the median (p50) and the 99th percentile (p99) of its latency over the %d writes.</p>\n",
		e(when.UTC().Format("2006-01-02 15:04 MST")), writes, writes)
	for i, st := range traces {
		fmt.Fprintf(&b, "<p class=\"what\"><span style=\"color:%s\">&#9632;</span> <b>%s</b>: storage is %s.</p>\n", stackColors[i%2], e(st.Stack), e(st.Storage))
	}

	// The key.
	b.WriteString("<h2>Key</h2>\n<div class=\"key\">\n")
	var swatches, names []string
	for i, st := range traces {
		swatches = append(swatches, fmt.Sprintf("<div class=\"bar c%d\" style=\"left:0;width:60px;top:%dpx\"></div>", i%2, 2+14*i))
		names = append(names, fmt.Sprintf("<span style=\"color:%s\">&#9632;</span> %s", stackColors[i%2], e(st.Stack)))
	}
	fmt.Fprintf(&b, "<div class=\"sw\" style=\"height:%dpx\">%s</div><div>A bar is one step's median latency on a stack (%s): the time from the step before it to this one. The bars follow each other, left to right, as the write travels.</div>\n",
		14*len(traces), strings.Join(swatches, ""), strings.Join(names, "; "))
	fmt.Fprintf(&b, "<div class=\"sw\"><div class=\"bar c0\" style=\"left:0;width:30px;top:2px\"></div><div class=\"whisker c0\" style=\"left:0;width:80px;top:6px\"></div></div><div>The thin line from the start of a bar reaches the step's 99th percentile: 99 writes in 100 were at most that slow on that step. A line that reaches the right edge goes on beyond it.</div>\n")
	hides := false
	for _, st := range traces {
		for _, h := range st.Hops {
			hides = hides || len(h.Covers) > 1
		}
	}
	if hides {
		b.WriteString("<div class=\"sw\"><div class=\"hide\" style=\"left:0;width:80px;top:2px\"></div></div><div><b>Hidden</b>: inside kube-apiserver. Its etcd write, its watch cache and its WatchServer cannot be timed from outside. The real stack's first bar therefore covers all of them, from the POST to the first bytes of the watch frame.</div>\n")
	}
	b.WriteString("<div><b>lab</b> / <b>upstream</b></div><div><b>lab</b> opens the course's code for a step in this repository. <b>upstream</b> opens the same step in Kubernetes " + k8sVersion + ", at the lines of the function.</div>\n</div>\n")

	// The table: one row per step.
	b.WriteString("<h2>Hop by hop</h2>\n<table>\n<tr><th>#</th><th>step</th>")
	for i, st := range traces {
		fmt.Fprintf(&b, "<th class=\"stack\" colspan=\"2\"><span style=\"color:%s\">&#9632;</span> %s</th>", stackColors[i%2], e(st.Stack))
	}
	b.WriteString("<th style=\"width:30%\">timeline</th></tr>\n<tr><th></th><th></th>")
	for range traces {
		b.WriteString("<th class=\"stack\">p50</th><th class=\"stack\">p99</th>")
	}
	b.WriteString("<th></th></tr>\n")

	// Per stack: the measured hop that ends each step, and where bars start.
	type cell struct {
		hop    *HopStats
		start  time.Duration // the sum of the medians before it
		hidden bool          // inside a hop that covers several steps
	}
	cells := make([][]cell, len(traces))
	var totals []time.Duration // the sum of each stack's medians
	for si, st := range traces {
		cells[si] = make([]cell, len(steps))
		var start time.Duration
		for hi := range st.Hops {
			h := &st.Hops[hi]
			for _, c := range h.Covers {
				cells[si][hopIndex(c)] = cell{hop: h, start: start, hidden: c != h.Name}
			}
			start += h.Latency.P50
		}
		totals = append(totals, start)
	}
	for pi, p := range steps {
		fmt.Fprintf(&b, "<tr><td>%d</td><td><b>%s</b><div class=\"what\">%s</div><div class=\"refs\">", pi+1, e(p.Name), e(p.What))
		var lab, up []string
		for _, r := range p.Lab {
			lab = append(lab, fmt.Sprintf("<code>%s</code> in <a href=\"%s\" title=\"%s\">%s</a>", e(r.Name), e(link(r.File)), e(r.File), e(path.Base(r.File))))
		}
		for _, r := range p.Upstream {
			up = append(up, fmt.Sprintf("<code>%s</code> in <a href=\"%s\" title=\"%s\">%s:%d-%d</a>", e(r.Name), e(r.URL()), e(r.Cite()), e(path.Base(r.File)), r.Start, r.End))
		}
		fmt.Fprintf(&b, "lab: %s<br>upstream: %s", strings.Join(lab, ", "), strings.Join(up, ", "))
		b.WriteString("</div></td>")
		var bars strings.Builder
		for si := range traces {
			c := cells[si][pi]
			switch {
			case c.hop == nil:
				b.WriteString("<td class=\"num\">-</td><td class=\"num\">-</td>")
			case c.hidden:
				if pi == hopIndex(c.hop.Covers[0]) {
					fmt.Fprintf(&b, "<td class=\"hidden\" colspan=\"2\" rowspan=\"%d\">hidden inside kube-apiserver;<br>timed together with step %d</td>", len(c.hop.Covers)-1, hopIndex(c.hop.Name)+1)
				}
				fmt.Fprintf(&bars, "<div class=\"hide r%d\" style=\"left:0;width:%.2f%%\"></div>", si%2, pct(c.hop.Latency.P50))
			default:
				share := ""
				if totals[si] > 0 {
					share = fmt.Sprintf("<span class=\"share\">%s of the bars</span>", percent(c.hop.Latency.P50, totals[si]))
				}
				note := ""
				if len(c.hop.Covers) > 1 {
					note = fmt.Sprintf("<span class=\"share\">steps %d-%d</span>", hopIndex(c.hop.Covers[0])+1, pi+1)
				}
				fmt.Fprintf(&b, "<td class=\"num\">%s%s%s</td><td class=\"num\">%s</td>", ms(c.hop.Latency.P50), share, note, ms(c.hop.Latency.P99))
				left := pct(c.start)
				fmt.Fprintf(&bars, "<div class=\"whisker c%d w%d\" style=\"left:%.2f%%;width:%.2f%%\"></div>", si%2, si%2, left, min(100-left, pct(c.hop.Latency.P99)))
				fmt.Fprintf(&bars, "<div class=\"bar c%d r%d\" style=\"left:%.2f%%;width:%.2f%%\"></div>", si%2, si%2, left, pct(c.hop.Latency.P50))
			}
		}
		fmt.Fprintf(&b, "<td><div class=\"tl\">%s</div></td></tr>\n", bars.String())
	}
	b.WriteString("<tr class=\"total\"><td></td><td>total, from the POST to the handler's OnAdd</td>")
	for _, st := range traces {
		fmt.Fprintf(&b, "<td class=\"num\">%s</td><td class=\"num\">%s</td>", ms(st.Total().P50), ms(st.Total().P99))
	}
	b.WriteString("<td class=\"what\">The total's median is not the sum of the steps' medians (the bars). When it is far above that sum, the writes waited at a different step each time, as on a busy machine.</td></tr>\n")
	b.WriteString("<tr><td></td><td>the writer's <code>Create</code> returned<div class=\"what\">Its reply, off the watch path: the POST, the etcd write and the way back. On kube-apiserver it is the one time from inside that the outside can see.</div></td>")
	for _, st := range traces {
		fmt.Fprintf(&b, "<td class=\"num\">%s</td><td class=\"num\">%s</td>", ms(st.Reply.P50), ms(st.Reply.P99))
	}
	b.WriteString("<td></td></tr>\n</table>\n")
	for _, st := range traces {
		for _, n := range st.Notes {
			fmt.Fprintf(&b, "<p class=\"what\"><b>%s</b>: %s</p>\n", e(st.Stack), e(n))
		}
	}
	b.WriteString("<h2>Where the time goes</h2>\n")
	for si, st := range traces {
		longest := st.Hops[0]
		for _, h := range st.Hops {
			if h.Latency.P50 > longest.Latency.P50 {
				longest = h
			}
		}
		what := fmt.Sprintf("step %d (%s)", hopIndex(longest.Name)+1, longest.Name)
		if len(longest.Covers) > 1 {
			what = fmt.Sprintf("steps %d to %d together, hidden inside kube-apiserver", hopIndex(longest.Covers[0])+1, hopIndex(longest.Name)+1)
		}
		fmt.Fprintf(&b, "<p>On the %s, the longest was %s: %s of the bars.</p>\n", e(st.Stack), e(what), percent(longest.Latency.P50, totals[si]))
	}
	b.WriteString(strings.NewReplacer("{lab03server}", e(link("labs/03-watchserver/apiserver/server.go")), "{lab03handlers}", e(link("labs/03-watchserver/apiserver/handlers.go"))).Replace(whyDifferent))
	b.WriteString("</body></html>\n")
	return b.String()
}

// whyDifferent explains the gap between the stacks, each claim with its
// pinned lines ({lab03server} and {lab03handlers} become links to the lab's
// files).
const whyDifferent = `<p>The etcd write waits for the disk: etcd counts a write as committed only once its write-ahead log is on disk. Its <code>Save</code> syncs the log file whenever raft says <code>mustSync</code> (<a href="https://github.com/etcd-io/etcd/blob/v3.7.0/server/storage/wal/wal.go#L958-L1000">go.etcd.io/etcd/server/v3@v3.7.0/storage/wal/wal.go:958-1000</a>), and a disk sync takes far longer than handing an event between goroutines (steps 3 to 9). On a busy machine, the 99th percentiles also show the waits for a CPU.</p>
<h2>Why the two stacks differ</h2>
<p>Both stacks run on this machine, over loopback, with the same client-side path (steps 5 to 9). What is <em>not</em> different:</p>
<ul class="why">
<li><b>TLS and HTTP/2 are the same on both.</b> Lab 03's server serves TLS and offers HTTP/2 through ALPN, as every apiserver does with <code>NextProtos</code> (<a href="https://github.com/kubernetes/kubernetes/blob/v1.37.0/staging/src/k8s.io/apiserver/pkg/server/secure_serving.go#L46-L53">k8s.io/apiserver@v0.37.0/pkg/server/secure_serving.go:46-53</a>); this is our choice, so that the same clients work against both servers (<a href="{lab03server}">labs/03-watchserver/apiserver/server.go</a>).</li>
<li><b>Both watches are JSON.</b> client-go sends and asks for JSON unless told otherwise: an empty <code>ContentType</code> becomes <code>application/json</code> (<a href="https://github.com/kubernetes/kubernetes/blob/v1.37.0/staging/src/k8s.io/client-go/rest/client.go#L268-L270">k8s.io/client-go@v0.37.0/rest/client.go:268-270</a>), and the trace's clients set none.</li>
</ul>
<p>What kube-apiserver does on the way that the course's server does not:</p>
<ul class="why">
<li><b>The filter chain.</b> Every request passes through the handlers that <code>DefaultBuildHandlerChain</code> wraps around the API: authorization, priority and fairness (or the max-in-flight limit), impersonation, audit, authentication, request deadlines, latency tracking and more (<a href="https://github.com/kubernetes/kubernetes/blob/v1.37.0/staging/src/k8s.io/apiserver/pkg/server/config.go#L1036-L1116">k8s.io/apiserver@v0.37.0/pkg/server/config.go:1036-1116</a>). Lab 03's server only compares the bearer token (<a href="{lab03handlers}">labs/03-watchserver/apiserver/handlers.go</a>, <code>authenticate</code>).</li>
<li><b>Admission and managed fields.</b> Before storing, kube-apiserver's <code>createHandler</code> records the writer in <code>managedFields</code> with <code>UpdateNoErrors</code>, runs mutating admission with <code>Admit</code>, and passes validating admission to the storage through <code>AdmissionToValidateObjectFunc</code> (<a href="https://github.com/kubernetes/kubernetes/blob/v1.37.0/staging/src/k8s.io/apiserver/pkg/endpoints/handlers/create.go#L182-L206">k8s.io/apiserver@v0.37.0/pkg/endpoints/handlers/create.go:182-206</a>). The course's server does none of these: its lesson is the watch path.</li>
<li><b>Protobuf in etcd.</b> kube-apiserver stores objects in etcd as protobuf: it sets <code>DefaultStorageMediaType</code> to <code>application/vnd.kubernetes.protobuf</code> (<a href="https://github.com/kubernetes/kubernetes/blob/v1.37.0/pkg/controlplane/apiserver/options/options.go#L138">k8s.io/kubernetes@v1.37.0/pkg/controlplane/apiserver/options/options.go:138</a>). Its watch then decodes protobuf from etcd, and the WatchServer encodes JSON for this client. The course's store keeps JSON in etcd.</li>
<li><b>Processes.</b> Here the course's stack runs inside the trace's own process, with an embedded etcd. kube-apiserver and its etcd are other processes, started by <code>labcluster</code>, so every step between them crosses processes on a shared CPU.</li>
</ul>
<p>What the outside cannot see: kube-apiserver's etcd write, its watch cache and its WatchServer (steps 1 to 4, and the start of 5). kube-apiserver times some of them from the inside and exports the times on its <code>/metrics</code> endpoint: <code>RecordEtcdRequest</code> observes each etcd call in <code>etcd_request_duration_seconds</code> (<a href="https://github.com/kubernetes/kubernetes/blob/v1.37.0/staging/src/k8s.io/apiserver/pkg/storage/etcd3/metrics/metrics.go#L210-L215">k8s.io/apiserver@v0.37.0/pkg/storage/etcd3/metrics/metrics.go:210-215</a>). The course's stack has these seams in its own code, so the trace times them.</p>
`

// timeNow and timeout are variables of the test's making.
var (
	timeNow = time.Now
	timeout = 2 * time.Minute
)
