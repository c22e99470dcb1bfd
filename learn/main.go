// Command labs is the learner's command of listwatch-labs (scripts/labs runs
// it): which exercises are done, check one, get a hint, run a lab's demo,
// reset a stub or see the solution.
//
//	labs                          every lab and exercise, with its state (done / failing / not started)
//	labs check NN [EXERCISE]      run the exercises' tests in exercise mode: expected, got, next step
//	labs watch NN [EXERCISE]      check, then check again on every save of a file of the lab
//	labs hint NN EXERCISE         the next hint (graded: a nudge first, almost the answer last)
//	labs run NN                   the lab's demo against the cluster, step by step
//	labs reset NN EXERCISE        put the stub back (as committed in git; asks first, keeps a copy; --yes)
//	labs solution NN EXERCISE     the diff from your file to the solution (asks first; --yes)
//	labs trace [--writes N]       ConfigMap writes through every layer, timed hop by hop: .cluster/trace/trace.html
//	labs view                     every layer's state, live, on a page served on 127.0.0.1 (learn/view)
//	labs verify [NN [EXERCISE]]   for maintainers: every exercise fails as shipped and passes solved
//
// An exercise is one piece of a lab's implementation moved behind the build
// tag exercise (labs/NN-*/exercises.json lists them); see a lab README's
// "Write it yourself".
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

func main() {
	// SIGPIPE: our output was closed (`scripts/labs run 05 | head`). Caught,
	// it ends the command through ctx, which stops a demo's background
	// commands; uncaught, it would kill us and leave them running. SIGHUP,
	// the terminal closed, likewise: our children run in process groups of
	// their own (stop.go), which the terminal's hang-up does not reach.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGPIPE, syscall.SIGHUP)
	code := Main(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

const usage = `usage:
  labs                          list every lab and exercise with its state
  labs check NN [EXERCISE]      check a lab's exercises (exercise mode); --verbose: all of go test's output; --solution: without the stubs; --cluster: also the cluster tests
  labs watch NN [EXERCISE]      check again each time you save a file of the lab, and say what now passes (Ctrl-C stops)
  labs hint NN EXERCISE         show the next hint
  labs run NN                   run the lab's demo against the cluster
  labs reset NN EXERCISE        restore the exercise's stub (asks first when you changed it, keeping a copy; --yes: do not ask)
  labs solution NN EXERCISE     show the diff to the solution (--yes: do not ask)
  labs trace [--writes N]       trace writes (100) through every layer, hop by hop: .cluster/trace/trace.{html,md,json}
  labs view                     the course's stack, live, in your browser (a page on 127.0.0.1; Ctrl-C stops it)
  labs verify [NN [EXERCISE]]   check that every exercise fails as shipped and passes once solved (--cluster, --full)
`

// Main runs one labs command; it returns the exit code.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	u := newUI(stdout, stderr)
	root, err := workspaceRoot()
	if err != nil {
		fmt.Fprintln(stderr, "labs:", err)
		return 2
	}
	u.from(root, os.Getenv("LABS_CWD"))
	labs, err := loadLabs(root)
	if err != nil {
		fmt.Fprintln(stderr, "labs:", err)
		return 2
	}
	cmd := "list"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		cmd, args = args[0], args[1:]
	}
	fs := flag.NewFlagSet("labs "+cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, usage) }
	solution := fs.Bool("solution", false, "check: run the tests without the stubs (the lab as shipped without -tags exercise)")
	cluster := fs.Bool("cluster", false, "check, verify: also run the exercises' tests that need a cluster (slow in exercise mode)")
	full := fs.Bool("full", false, "verify: also check that in exercise mode every test the exercises do not list passes (so only theirs fail)")
	verbose := fs.Bool("verbose", false, "check, watch: every failing test, with go test's whole output")
	yes := fs.Bool("yes", false, "solution, reset: do not ask for confirmation")
	noRun := fs.Bool("no-run", false, "list: do not run tests; show cached states only")
	writes := fs.Int("writes", 0, "trace: how many ConfigMaps to write through each stack (default 100)")
	// Flags may come before or after the arguments.
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return 2
		}
		if fs.NArg() == 0 {
			break
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
	need := func(n int) bool {
		if len(pos) < n {
			fmt.Fprint(stderr, usage)
			return false
		}
		return true
	}
	lab := func() (*Lab, bool) {
		l, err := findLab(labs, pos[0])
		if err != nil {
			fmt.Fprintln(stderr, "labs:", err)
		}
		return l, err == nil
	}
	exercise := func(l *Lab) (*Exercise, bool) {
		ex, err := l.exercise(pos[1])
		if err != nil {
			fmt.Fprintln(stderr, "labs:", err)
		}
		return ex, err == nil
	}
	// labAndExercise: check's and watch's arguments, NN [EXERCISE].
	labAndExercise := func() (*Lab, *Exercise, bool) {
		if !need(1) {
			return nil, nil, false
		}
		l, ok := lab()
		if !ok {
			return nil, nil, false
		}
		if len(pos) < 2 {
			return l, nil, true
		}
		only, ok := exercise(l)
		return l, only, ok
	}
	switch cmd {
	case "list":
		return cmdList(ctx, u, root, labs, *noRun)
	case "check":
		l, only, ok := labAndExercise()
		if !ok {
			return 2
		}
		return cmdCheck(ctx, u, root, l, only, *solution, *cluster, *verbose)
	case "watch":
		l, only, ok := labAndExercise()
		if !ok {
			return 2
		}
		return cmdWatch(ctx, u, root, l, only, *verbose)
	case "hint", "reset", "solution":
		if !need(1) {
			return 2
		}
		l, ok := lab()
		if !ok {
			return 2
		}
		if len(pos) < 2 {
			var names []string
			for _, ex := range l.Exercises {
				names = append(names, ex.Name)
			}
			if len(names) == 0 {
				fmt.Fprintf(stderr, "labs: lab %s has no exercises yet\n", l.Num)
			} else {
				fmt.Fprintf(stderr, "labs: %s needs an exercise: %s %s %s EXERCISE (lab %s has: %s)\n", cmd, u.cmd, cmd, l.Num, l.Num, strings.Join(names, ", "))
			}
			return 2
		}
		ex, ok := exercise(l)
		if !ok {
			return 2
		}
		switch cmd {
		case "hint":
			return cmdHint(u, root, l, ex)
		case "reset":
			return cmdReset(u, root, stdin, isTerminal(stdin), *yes, l, ex)
		default:
			return cmdSolution(u, stdin, l, ex, *yes)
		}
	case "run":
		if !need(1) {
			return 2
		}
		l, ok := lab()
		if !ok {
			return 2
		}
		return cmdRun(ctx, u, root, l)
	case "verify":
		selected := labs
		var only *Exercise
		if len(pos) > 0 {
			l, ok := lab()
			if !ok {
				return 2
			}
			selected = []*Lab{l}
			if len(pos) > 1 {
				if only, ok = exercise(l); !ok {
					return 2
				}
			}
		}
		return cmdVerify(ctx, u, selected, only, *cluster, *full)
	case "trace":
		if *writes != 0 {
			pos = append(pos, "-writes", strconv.Itoa(*writes))
		}
		return cmdTrace(ctx, u, root, pos)
	case "view":
		return cmdView(ctx, u, root, pos)
	case "help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "labs: unknown command %q\n%s", cmd, usage)
	return 2
}

// workspaceRoot is $LABS_ROOT, or the nearest directory at or above the
// working directory that holds go.work.
func workspaceRoot() (string, error) {
	if r := os.Getenv("LABS_ROOT"); r != "" {
		return filepath.Abs(r)
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("not inside the listwatch-labs workspace (no go.work above the current directory); run scripts/labs")
		}
		dir = parent
	}
}
