package robustness

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var (
	duration = flag.Duration("duration", 15*time.Second, "how long each seed's workload runs")
	seed     = flag.Int64("seed", 0, "run this seed only (0: the default seeds)")
)

// TestRobustnessCourseStack runs the seeded workload against the course's
// stack while it injects faults, and checks the history. A failure prints
// the seed, what was injected, and each violation with the part of the
// history that shows it; `go test -run TestRobustnessCourseStack -args
// -seed N -duration 10m` replays a seed for longer.
func TestRobustnessCourseStack(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the course's stack and runs a workload")
	}
	seeds := []int64{1, 2}
	if *seed != 0 {
		seeds = []int64{*seed}
	}
	for _, s := range seeds {
		t.Run(fmt.Sprint("seed=", s), func(t *testing.T) {
			ns := "robustness"
			stack, err := StartCourseStack(ns)
			if err != nil {
				t.Fatal(err)
			}
			defer stack.Close()
			cfg := Config{Seed: s, Duration: *duration, Writers: 3, Keys: 9, Watchers: 4, Namespace: ns, Faults: max(3, int(*duration/(5*time.Second)))}
			ctx, cancel := context.WithTimeout(context.Background(), *duration+3*time.Minute)
			defer cancel()
			h, err := Run(ctx, stack.Target, cfg)
			if err != nil {
				t.Fatal(err)
			}
			r := Check(h)
			kinds := map[string]int{}
			for _, f := range h.Faults {
				kinds[f.Kind]++
			}
			// A relist that merges a deleted and re-created object into one
			// OnUpdate is client-go's design (RelistRecreate), reported as
			// a finding with its history; everything else is a violation.
			var findings, violations []Violation
			for _, v := range r.Violations {
				if v.Kind == RelistRecreate {
					findings = append(findings, v)
				} else {
					violations = append(violations, v)
				}
			}
			t.Logf("seed %d on %s: %d writes (%d placed from events), %d watches, %d events, %d handler calls, faults %v; %d violations, %d relist-recreate findings",
				s, stack.Name, r.Writes, r.Resolved, len(h.Watches), r.Events, r.Calls, kinds, len(violations), len(findings))
			var b strings.Builder
			for _, f := range h.Faults {
				fmt.Fprintf(&b, "  fault at %v: %s: %s\n", f.At, f.Kind, f.Detail)
			}
			if len(findings) > 0 {
				t.Logf("seed %d: the informers' handlers missed %d delete(s) in relists, as client-go's do; the first:\n%s%s", s, len(findings), b.String(), findings[0])
			}
			if len(violations) > 0 {
				if b, err := json.Marshal(h); err == nil {
					path := filepath.Join(t.TempDir(), fmt.Sprintf("history-seed-%d.json", s))
					if dir := os.Getenv("ROBUSTNESS_HISTORY_DIR"); dir != "" {
						path = filepath.Join(dir, fmt.Sprintf("history-seed-%d.json", s))
					}
					if os.WriteFile(path, b, 0o644) == nil {
						t.Logf("the whole history: %s", path)
					}
				}
				for _, v := range violations[:min(len(violations), 20)] {
					fmt.Fprintf(&b, "%s\n", v)
				}
				t.Errorf("seed %d: %d violation(s) of what a watch promises:\n%s", s, len(violations), b.String())
			}
		})
	}
}
