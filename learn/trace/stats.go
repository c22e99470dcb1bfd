package main

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// Stats is the median and the 99th percentile of one time over the writes.
type Stats struct {
	P50 time.Duration `json:"p50"`
	P99 time.Duration `json:"p99"`
}

// percentiles: nearest rank (the smallest value with at least p% of the
// values at or below it), so both are values that were measured and
// P50 <= P99 always.
func percentiles(values []time.Duration) Stats {
	if len(values) == 0 {
		return Stats{}
	}
	v := slices.Clone(values)
	slices.Sort(v)
	rank := func(p float64) time.Duration {
		i := int(math.Ceil(p/100*float64(len(v)))) - 1
		return v[max(i, 0)]
	}
	return Stats{P50: rank(50), P99: rank(99)}
}

// HopStats is one measured hop of a stack: the step it ends, the
// steps it spans (more than one where a stack cannot be seen inside), its
// latency (from the previous measured hop) and when it was reached.
type HopStats struct {
	Name    string   `json:"name"`
	Covers  []string `json:"covers"`
	Where   string   `json:"where"`
	Latency Stats    `json:"latency"`
	At      Stats    `json:"at"`
}

// StackTrace is one stack's trace, as written to trace.json.
type StackTrace struct {
	Stack   string            `json:"stack"`
	Storage string            `json:"storage"`
	Writes  int               `json:"writes"`
	Hops    []HopStats        `json:"hops"`
	Reply   Stats             `json:"reply"` // the writer's Create returning
	Notes   []string          `json:"notes,omitempty"`
	Samples []map[string]Mark `json:"samples"`
}

// Total is the whole way, from the POST to the handler.
func (st StackTrace) Total() Stats {
	if len(st.Hops) == 0 {
		return Stats{}
	}
	return st.Hops[len(st.Hops)-1].At
}

// summarize turns a stack's samples into per-hop statistics. where says
// where a step is observed on this stack ("" if it cannot be).
func summarize(run *stackRun, where func(PathHop) string) (StackTrace, error) {
	st := StackTrace{Stack: run.Stack, Storage: run.Storage, Writes: len(run.Samples), Samples: run.Samples, Notes: run.Notes}
	var covers []string
	prev := ""
	for _, h := range steps {
		covers = append(covers, h.Name)
		if where(h) == "" {
			continue
		}
		var lat, at []time.Duration
		for i, s := range run.Samples {
			m, ok := s[h.Name]
			if !ok {
				return st, fmt.Errorf("%s: write %d has no mark for %s", run.Stack, i, h.Name)
			}
			start := time.Duration(0)
			if prev != "" {
				start = s[prev].At
			}
			lat = append(lat, m.At-start)
			at = append(at, m.At)
		}
		st.Hops = append(st.Hops, HopStats{Name: h.Name, Covers: covers, Where: where(h), Latency: percentiles(lat), At: percentiles(at)})
		covers, prev = nil, h.Name
	}
	var reply []time.Duration
	for _, s := range run.Samples {
		reply = append(reply, s[replyMark].At)
	}
	st.Reply = percentiles(reply)
	return st, nil
}
