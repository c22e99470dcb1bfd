package main

import (
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestLabsViewStopsOnSIGTERMToItsPid: `kill PID` of scripts/labs view, from
// a supervisor or a test harness, reaches labs alone, not the view it runs
// (a terminal's Ctrl-C reaches both: TestLabsViewServesThenStopsOnCtrlC).
// labs passes it on: the view stops its stack, labs exits with its status,
// and nothing they started is left.
func TestLabsViewStopsOnSIGTERMToItsPid(t *testing.T) {
	testLabsViewStopsOnSignalToItsPid(t, syscall.SIGTERM, "SIGTERM")
}

// TestLabsViewStopsOnSIGINTToItsPid: the same with SIGINT (kill -INT PID).
func TestLabsViewStopsOnSIGINTToItsPid(t *testing.T) {
	testLabsViewStopsOnSignalToItsPid(t, syscall.SIGINT, "SIGINT")
}

// This file is Linux only: it finds what labs started in /proc.
func testLabsViewStopsOnSignalToItsPid(t *testing.T, sig syscall.Signal, name string) {
	v := startLabsView(t)
	pid := v.cmd.Process.Pid
	// What labs started, while it runs: once it is gone, its orphans
	// would have another parent.
	before := processes(t)
	started := descendants(before, pid)
	if len(started) == 0 {
		t.Fatalf("labs view (pid %d) serves with no child process; /proc shows no view", pid)
	}

	syscall.Kill(pid, sig) // labs alone, not its group
	restc := make(chan []string, 1)
	go func() {
		var rest []string
		for l := range v.lines {
			rest = append(rest, l)
		}
		restc <- rest
	}()
	var rest []string
	select {
	case rest = <-restc:
	case <-time.After(time.Minute):
		t.Fatalf("labs view still runs a minute after %s to its pid %d (the cleanup kills its group):\n%s", name, pid, v.stderr.String())
	}
	if err := v.cmd.Wait(); err != nil {
		t.Errorf("exit: %v, want 0 (the view stopped cleanly, as after Ctrl-C)\n%s", err, v.stderr.String())
	}
	if len(rest) == 0 || rest[len(rest)-1] != "view: stopped" {
		t.Errorf("after %s it printed %q, want it to end with \"view: stopped\"", name, rest)
	}

	// No process is left that labs started (the view, or a child of
	// either), nor any running the checkout's labs or view binary. (Not
	// "any process started since in the checkout's root": scripts/test.sh
	// runs this test beside its other lanes, whose shells work there.)
	bins := map[string]bool{
		filepath.Join(v.root, ".cluster", "bin", "labs"): true,
		filepath.Join(v.root, ".cluster", "bin", "view"): true,
	}
	var left []proc
	deadline := time.Now().Add(10 * time.Second)
	for {
		left = nil
		for _, p := range processes(t) {
			if q, ok := started[p.pid]; ok && q.start == p.start ||
				bins[strings.TrimSuffix(p.exe, " (deleted)")] {
				left = append(left, p)
			}
		}
		if len(left) == 0 || time.Now().After(deadline) {
			break
		}
		<-time.After(50 * time.Millisecond) // polling /proc for their end, with the deadline above
	}
	for _, p := range left {
		t.Errorf("left running after %s to labs: pid %d (parent %d) %s in %s", name, p.pid, p.ppid, p.exe, p.cwd)
	}
	if _, err := http.Get(v.url); err == nil {
		t.Errorf("%s still answers after %s to labs", v.url, name)
	}
}

// proc is one process as /proc shows it.
type proc struct {
	pid, ppid int
	start     uint64 // clock ticks after boot; with pid, names one process (pids are reused)
	exe, cwd  string // empty when not ours to read
}

// processes reads every process of /proc.
func processes(t *testing.T) map[int]proc {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	all := map[int]proc{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue // it ended while we read
		}
		// "pid (comm) state ppid ... starttime ...": comm may hold spaces
		// and parentheses, so the fields count from its last ')'; starttime
		// is field 22 of proc(5), the 20th after comm.
		i := strings.LastIndexByte(string(stat), ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(stat[i+1:]))
		if len(f) < 20 {
			continue
		}
		p := proc{pid: pid}
		p.ppid, _ = strconv.Atoi(f[1])
		p.start, _ = strconv.ParseUint(f[19], 10, 64)
		p.exe, _ = os.Readlink(filepath.Join("/proc", e.Name(), "exe"))
		p.cwd, _ = os.Readlink(filepath.Join("/proc", e.Name(), "cwd"))
		all[pid] = p
	}
	return all
}

// descendants are the processes below pid in all, by pid.
func descendants(all map[int]proc, pid int) map[int]proc {
	found := map[int]proc{}
	for grew := true; grew; {
		grew = false
		for _, p := range all {
			if _, ok := found[p.pid]; ok {
				continue
			}
			if _, parentFound := found[p.ppid]; p.ppid == pid || parentFound {
				found[p.pid] = p
				grew = true
			}
		}
	}
	return found
}
