package main

import (
	"fmt"
	"html"
	"strings"
	"time"
)

// StackTrace is one stack's trace, as written to trace.json.
type StackTrace struct {
	Stack   string `json:"stack"`
	Storage string `json:"storage"`
	Hops    []Hop  `json:"hops"`
}

func ms(d time.Duration) string { return fmt.Sprintf("%.3f ms", float64(d)/float64(time.Millisecond)) }

// mermaid draws one stack's trace as a sequence diagram: one arrow per hop,
// labelled with the time since the write and the hop's own latency.
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
	for _, h := range st.Hops {
		id(h.From)
		id(h.To)
	}
	var prev time.Duration
	for _, h := range st.Hops {
		// Mermaid reads ";" and "#" as syntax: keep labels plain.
		label := strings.NewReplacer(";", ",", "#", "").Replace(fmt.Sprintf("%s, +%s (hop %s)", h.Detail, ms(h.At), ms(h.At-prev)))
		fmt.Fprintf(&b, "    %s->>%s: %s\n", ids[h.From], ids[h.To], label)
		prev = h.At
	}
	fmt.Fprintf(&b, "    Note over %s,%s: %s, total %s\n", ids[st.Hops[0].From], ids[st.Hops[len(st.Hops)-1].To],
		strings.ReplaceAll(st.Stack, ";", ","), ms(st.Hops[len(st.Hops)-1].At))
	return b.String()
}

// page is a self-contained HTML timeline: per stack, one row per hop with
// a bar from the previous hop to this one (its latency), on a shared scale.
func page(traces []StackTrace, when time.Time) string {
	var maxAt time.Duration
	for _, st := range traces {
		for _, h := range st.Hops {
			maxAt = max(maxAt, h.At)
		}
	}
	if maxAt <= 0 {
		maxAt = time.Millisecond
	}
	var b strings.Builder
	b.WriteString(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>One write, hop by hop</title>
<style>
body { font: 14px/1.4 system-ui, sans-serif; margin: 24px; color: #1d2733; background: #fff; }
h1 { font-size: 20px; } h2 { font-size: 16px; margin-top: 28px; }
table { border-collapse: collapse; width: 100%; }
td, th { padding: 4px 8px; border-bottom: 1px solid #dde3ea; text-align: left; vertical-align: middle; }
th { background: #f2f5f8; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
.track { position: relative; height: 18px; background: #f2f5f8; min-width: 320px; }
.bar { position: absolute; top: 2px; height: 14px; background: #3b82c4; border-radius: 2px; min-width: 2px; }
.dot { position: absolute; top: 1px; width: 4px; height: 16px; background: #c4453b; }
.where { color: #5b6875; font-size: 12px; }
</style></head><body>
<h1>One ConfigMap write, hop by hop</h1>
`)
	fmt.Fprintf(&b, "<p>Recorded %s by <code>scripts/labs trace</code>. Time 0 is the moment the write was sent; each bar is one hop's latency (from the previous hop to this one), on one scale for all stacks (%s wide).</p>\n",
		html.EscapeString(when.UTC().Format(time.RFC3339)), ms(maxAt))
	for _, st := range traces {
		fmt.Fprintf(&b, "<h2>%s</h2>\n", html.EscapeString(st.Stack))
		if st.Storage != "" {
			fmt.Fprintf(&b, "<p class=\"where\">storage: %s</p>\n", html.EscapeString(st.Storage))
		}
		b.WriteString("<table><tr><th>#</th><th>hop</th><th>at</th><th>latency</th><th style=\"width:40%\">timeline</th></tr>\n")
		var prev time.Duration
		for i, h := range st.Hops {
			left := 100 * float64(prev) / float64(maxAt)
			width := 100 * float64(h.At-prev) / float64(maxAt)
			fmt.Fprintf(&b, "<tr><td>%d</td><td><b>%s</b> <span class=\"where\">%s: %s</span></td><td class=\"num\">%s</td><td class=\"num\">%s</td>"+
				"<td><div class=\"track\"><div class=\"bar\" style=\"left:%.2f%%;width:%.2f%%\"></div><div class=\"dot\" style=\"left:calc(%.2f%% - 2px)\"></div></div></td></tr>\n",
				i+1, html.EscapeString(h.Name), html.EscapeString(h.Where), html.EscapeString(h.Detail), ms(h.At), ms(h.At-prev), left, width, left+width)
			prev = h.At
		}
		b.WriteString("</table>\n")
	}
	b.WriteString("</body></html>\n")
	return b.String()
}

// timeNow and timeout are variables of the test's making.
var (
	timeNow = time.Now
	timeout = 2 * time.Minute
)
