package robustness

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc/grpclog"
)

var (
	duration = flag.Duration("duration", 8*time.Second, "how long each seed's workload runs on each stack")
	seed     = flag.Int64("seed", 0, "run this seed only (0: the default seeds)")
	stacks   = flag.String("stacks", "course,real", "the stacks to run on: course, real, or course,real")
)

// The three-member cluster: started by the first test that needs it, for
// the whole test binary (a cluster per binary, not per test), stopped by
// TestMain. On Ctrl-C it is stopped and its directory removed.
var (
	haOnce sync.Once
	ha     *HACluster
	haErr  error
	haDir  string
	haMu   sync.Mutex // held while it starts and while it stops
)

func haCluster(t *testing.T) *HACluster {
	haOnce.Do(func() {
		haMu.Lock()
		defer haMu.Unlock()
		if haDir, haErr = os.MkdirTemp("", "robustness-"); haErr != nil {
			return
		}
		start := time.Now()
		ha, haErr = StartHACluster(haDir)
		if haErr == nil {
			t.Logf("started kube-apiserver on a three-member etcd in %.1fs (%s)", time.Since(start).Seconds(), strings.Join(ha.State.EtcdURLs(), ","))
		}
	})
	if haErr != nil {
		t.Fatalf("the three-member cluster: %v", haErr)
	}
	return ha
}

func TestMain(m *testing.M) {
	flag.Parse()
	// gRPC logs every closed connection as a warning (moveLeader's clients
	// dial every member); quiet it here, before gRPC runs anything:
	// SetLoggerV2 is not safe to call while gRPC's goroutines log (the race
	// detector caught it when it was called from moveLeader, mid-run).
	grpclog.SetLoggerV2(grpclog.NewLoggerV2(io.Discard, io.Discard, io.Discard))
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	go func() {
		s := <-sig
		haMu.Lock()
		if ha != nil {
			ha.Stop()
		}
		if haDir != "" {
			os.RemoveAll(haDir)
		}
		fmt.Fprintf(os.Stderr, "robustness: %v: stopped the three-member cluster and removed %s\n", s, haDir)
		os.Exit(1)
	}()
	code := m.Run()
	signal.Stop(sig)
	haMu.Lock()
	if ha != nil {
		ha.Stop()
	}
	if haDir != "" {
		os.RemoveAll(haDir)
	}
	haMu.Unlock()
	os.Exit(code)
}

// TestRobustness runs the seeded workload on each stack while it injects
// faults, and checks the history: the course's stack (lab 04's
// miniapiserver, over the three-member etcd) and the real kube-apiserver
// over the same etcd, each with the same seeds and the same checker. A
// failure prints the seed, what was injected, and each violation with the
// part of the history that shows it (and writes the whole history to
// $ROBUSTNESS_HISTORY_DIR, else to a new directory under $TMPDIR, kept);
// `go test -timeout 40m -run TestRobustness -args -seed N -duration 10m`
// replays a seed for longer.
func TestRobustness(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a kube-apiserver on a three-member etcd and runs a workload")
	}
	seeds := []int64{1, 2}
	if *seed != 0 {
		seeds = []int64{*seed}
	}
	for _, stack := range strings.Split(*stacks, ",") {
		if stack != "course" && stack != "real" {
			t.Fatalf("-stacks %s: unknown stack %q (want course, real, or course,real)", *stacks, stack)
		}
	}
	for _, stack := range strings.Split(*stacks, ",") {
		for _, s := range seeds {
			t.Run(fmt.Sprintf("%s/seed=%d", stack, s), func(t *testing.T) {
				c := haCluster(t)
				ns := fmt.Sprintf("robustness-%s-%d-%d", stack, s, time.Now().UnixNano()%1e6)
				ctx, cancel := context.WithTimeout(context.Background(), *duration+3*time.Minute)
				defer cancel()
				var target Target
				switch stack {
				case "course":
					st, err := StartCourseStack(ns, c)
					if err != nil {
						t.Fatal(err)
					}
					defer st.Close()
					target = st.Target
				case "real":
					st, err := StartRealStack(ctx, c, ns)
					if err != nil {
						t.Fatal(err)
					}
					defer st.Close()
					target = st.Target
				default:
					t.Fatalf("-stacks: unknown stack %q (want course or real)", stack)
				}
				runAndCheck(t, ctx, target, s, ns)
			})
		}
	}
}

func runAndCheck(t *testing.T, ctx context.Context, target Target, s int64, ns string) {
	cfg := Config{Seed: s, Duration: *duration, Writers: 3, Keys: 9, Pods: 6, Watchers: 4, Namespace: ns, Faults: max(3, int(*duration/(5*time.Second)))}
	h, err := Run(ctx, target, cfg)
	if err != nil {
		t.Fatal(err)
	}
	r := Check(h)
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
	t.Logf("seed %d on %s: %s; %d violations, %d relist-recreate findings; the final LIST and the caches agreed %.1fs after the workload",
		s, target.Name, summary(h, r), len(violations), len(findings), (h.FinalListAt - cfg.Duration).Seconds())
	var b strings.Builder
	for _, f := range h.Faults {
		fmt.Fprintf(&b, "  fault at %v: %s: %s\n", f.At, f.Kind, f.Detail)
	}
	if testing.Verbose() {
		t.Logf("seed %d: the faults (each with how long injecting it took):\n%s", s, b.String())
	}
	if len(findings) > 0 {
		t.Logf("seed %d: the informers' handlers missed %d delete(s) in relists, as client-go's do; the first:\n%s", s, len(findings), findings[0])
	}
	// A failed run's history is kept after the test ends (not
	// t.TempDir), so that ROBUSTNESS_CHECK can read it again; with
	// ROBUSTNESS_HISTORY_DIR set, every run's is.
	dir := os.Getenv("ROBUSTNESS_HISTORY_DIR")
	if dir != "" || len(violations) > 0 {
		if path, err := saveHistory(dir, h, stackName(target), s); err != nil {
			t.Logf("the history was not saved: %v", err)
		} else {
			t.Logf("the whole history (check it again with ROBUSTNESS_CHECK=%s go test -run TestCheckSavedHistory -v .): %s", path, path)
		}
	}
	if len(violations) > 0 {
		for _, v := range violations[:min(len(violations), 20)] {
			fmt.Fprintf(&b, "%s\n", v)
		}
		t.Errorf("seed %d: %d violation(s) of what a watch promises:\n%s", s, len(violations), b.String())
	}
}

// summary is a run's counts: writes (and of those, answered without an RV
// and placed by the checker), watches, events, handler calls and faults by
// kind.
func summary(h *History, r Report) string {
	kinds := map[string]int{}
	for _, f := range h.Faults {
		kinds[f.Kind]++
	}
	var fs []string
	for _, k := range slices.Sorted(maps.Keys(kinds)) {
		fs = append(fs, fmt.Sprintf("%s %d", k, kinds[k]))
	}
	if len(fs) == 0 {
		fs = []string{"none"}
	}
	return fmt.Sprintf("%d writes (%d answered without an RV and placed by the checker), %d watches, %d events, %d handler calls, faults: %s",
		r.Writes, r.Resolved, len(h.Watches), r.Events, r.Calls, strings.Join(fs, ", "))
}

// saveHistory writes h as JSON to dir (created if need be), or to a new
// directory under $TMPDIR when dir is "", and returns the file's path.
func saveHistory(dir string, h *History, stack string, seed int64) (string, error) {
	var err error
	if dir == "" {
		dir, err = os.MkdirTemp("", "robustness-history-")
	} else {
		err = os.MkdirAll(dir, 0o755)
	}
	if err != nil {
		return "", err
	}
	b, err := json.Marshal(h)
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, fmt.Sprintf("history-%s-seed-%d.json", stack, seed))
	return path, os.WriteFile(path, b, 0o644)
}

// TestCheckSavedHistory checks a history a failed run saved
// (ROBUSTNESS_CHECK=path/history-STACK-seed-N.json): to look again at a violation
// without running the workload again. Skipped when the variable is unset.
func TestCheckSavedHistory(t *testing.T) {
	path := os.Getenv("ROBUSTNESS_CHECK")
	if path == "" {
		t.Skip("set ROBUSTNESS_CHECK to a saved history")
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var h History
	if err := json.Unmarshal(b, &h); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if len(h.Writes) == 0 {
		t.Fatalf("%s: not a robustness history: it records no writes", path)
	}
	r := Check(&h)
	findings := 0
	for _, v := range r.Violations {
		if v.Kind == RelistRecreate {
			findings++
		}
	}
	t.Logf("%s (seed %d): %s; %d violations, %d relist-recreate findings", path, h.Seed, summary(&h, r), len(r.Violations)-findings, findings)
	for _, v := range r.Violations {
		if v.Kind == RelistRecreate {
			t.Logf("finding: %s", v)
		} else {
			t.Errorf("%s", v)
		}
	}
}

// stackName is "course" or "real", for file names.
func stackName(t Target) string {
	if strings.Contains(t.Name, "course") {
		return "course"
	}
	return "real"
}
