package labkit

// The README check: every command a README shows in a ```console block is run
// here, as written, in order, and its output must be the output the README
// shows. This is how "every command a README shows runs as shown" stays true.
//
// What a README may say to the check, in an HTML comment (invisible on
// GitHub) on the line(s) before a ```console block:
//
//	<!-- check: skip: REASON -->   the block is not run; REASON is printed
//	                                in the check's output (the first build,
//	                                scripts/test.sh itself, a benchmark that
//	                                test.sh's benchmark step runs ...)
//	<!-- check: break FILE: OLD => NEW -->
//	                                "Break it": for this block only, the
//	                                text OLD (once in FILE, relative to the
//	                                README) becomes NEW; every command of
//	                                the block must then fail, with the
//	                                output shown
//	<!-- check: vary REGEXP -->     what REGEXP matches differs from run to
//	                                run (a count that depends on timing):
//	                                compared as a placeholder
//	<!-- check: shape: REASON -->  the output holds measurements (a
//	                                benchmark's, a fuzzer's progress): every
//	                                number not right after "=" is compared
//	                                as a wildcard (so a sub-benchmark's
//	                                name, objects=10000, still counts), and
//	                                names, units, columns and the number of
//	                                lines are compared as shown
//	<!-- check: shape repeats: REASON -->
//	                                as shape, and a run of lines of the same
//	                                shape in a row matches a run of any
//	                                length (at least one): how many times
//	                                -count repeats a benchmark line, or how
//	                                many progress lines a fuzzer prints
//	                                (one every 3 s), is not compared
//	<!-- check: run with NEW instead of OLD: REASON -->
//	                                the block's one command runs with the
//	                                text OLD (once in it) replaced by NEW,
//	                                as the check's log says ("ran with
//	                                -benchtime 1x instead of -benchtime 20x:
//	                                takes minutes as written"); only with
//	                                shape, as the numbers then differ
//	<!-- check: release 1.37: REASON -->
//	                                the block shows what that release does
//	                                (a "What changed in 1.37" section):
//	                                it runs against that release, and
//	                                against another (LAB_RELEASE=previous,
//	                                scripts/previous-release.sh) it is not
//	                                run and REASON is printed; a test of
//	                                the lab asserts each release's answer
//	<!-- check: background NAME [nowait] -->
//	                                the block's one command runs in the
//	                                background, as in a second terminal; the
//	                                check goes on once its first shown output
//	                                line has appeared (with nowait: at once,
//	                                for a watch that prints only what the
//	                                next blocks cause)
//
// and anywhere, on a line of its own:
//
//	<!-- check: interrupt NAME -->  Ctrl-C for background NAME: wait until
//	                                it printed every line shown before its
//	                                `^C` line, send SIGINT to its process
//	                                group (as a terminal does), wait for it
//	                                to end, and compare all its output
//
// The rules of a run:
//   - Every README runs in a fresh bash, from the checkout's root (where the
//     top README's set-up leaves a learner), in a copy of this checkout at
//     .cluster/readme-check (a stable path, so the build cache is warm on the
//     next run); .cluster/bin is the real one. A `cd` changes the directory
//     of the lines after it, and variables persist, across the blocks of one
//     README. KUBECONFIG is unset: a README that needs it says so.
//   - The top README.md runs first: its scripts/cluster-up.sh starts a
//     labcluster in the copy, its scripts/cluster-down.sh stops it. Then the
//     check runs scripts/cluster-up.sh (and says so) for the other READMEs,
//     which share that cluster as a learner reading them in turn does, and
//     scripts/cluster-down.sh at the end.
//   - A command must exit 0, and its output (stdout and stderr, in order)
//     must match the lines shown under it, compared by shape: runs of blanks
//     are one space; a line `...` stands for any number of lines; and these
//     are replaced by a placeholder on both sides: the checkout's root
//     (shown as /home/you/listwatch-labs), mktemp paths (/tmp/tmp.XXXXXXXXXX),
//     127.0.0.1 ports, durations (0s, 2.5s, 41.675s, 3m2s, and go test's
//     "(cached)" in their place), UIDs, RFC 3339
//     times, and resourceVersions where a JSON object, a query or a Status
//     message holds them.
//
// `go test -run TestREADMECommands .` only parses every README and checks
// its annotations (fast, no cluster); with -readmes it runs them all:
//
//	go test -v -count=1 -run '^TestREADMECommands$' . -args -readmes

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

var (
	runREADMEs     = flag.Bool("readmes", false, "run every command of every README's console blocks (TestREADMECommands)")
	readmeParallel = flag.Int("readme-parallel", 2, "how many READMEs TestREADMECommands runs at once, each in its own copy with its own cluster")
	readmeMatch    = flag.String("readme", "", "check only the READMEs whose path matches this regexp (TestREADMECommands)")
)

// readmes are the READMEs the check runs, in this order: the top one first,
// as a learner reads them.
func readmes(root string) ([]string, error) {
	files := []string{"README.md", "labkit/README.md"}
	labs, err := filepath.Glob(filepath.Join(root, "labs", "*", "README.md"))
	if err != nil {
		return nil, err
	}
	// Each lab's DEEPER.md (what its README's "Going deeper" moved out)
	// and the pages under docs/ run too, each from the checkout's root.
	deeper, err := filepath.Glob(filepath.Join(root, "labs", "*", "DEEPER.md"))
	if err != nil {
		return nil, err
	}
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		return nil, err
	}
	labs = append(append(labs, deeper...), docs...)
	for _, l := range labs {
		rel, _ := filepath.Rel(root, l)
		files = append(files, rel)
	}
	return files, nil
}

// checkedRelease is the release ("1.37") of the clusters the README check
// starts: versions.env's KUBERNETES_VERSION, or with LAB_RELEASE=previous
// (EnvRelease) its PREVIOUS_KUBERNETES_VERSION.
func checkedRelease() (string, error) {
	root, err := Root()
	if err != nil {
		return "", err
	}
	key := "KUBERNETES_VERSION"
	if os.Getenv(EnvRelease) == "previous" {
		key = "PREVIOUS_KUBERNETES_VERSION"
	}
	v, err := versionsEnv(root, key)
	if err != nil {
		return "", err
	}
	r := strings.TrimPrefix(v, "v")
	if i := strings.LastIndexByte(r, '.'); i > 0 {
		r = r[:i]
	}
	return r, nil
}

// A readmeStep is one thing the check does, in README order.
type readmeStep struct {
	line      int      // README line of the command or comment
	cmd       string   // the command, continuation lines joined
	want      []string // the output shown under it
	skip      string   // why the block is not run
	bg        string   // run in the background under this name
	noWait    bool     // background: go on at once, not after its first line
	interrupt string   // Ctrl-C for this background command
	// vary are patterns of what differs from run to run in this block's
	// output beyond the normalizer's list (a count that depends on timing).
	vary []*regexp.Regexp
	// shape is why the block's output is compared by shape (numbers as
	// wildcards); repeats: a run of same-shaped lines matches a run of any
	// length.
	shape   string
	repeats bool
	// instead are the block's command changes: instead[i][1] (as written)
	// becomes instead[i][0], for instead[i][2] (the reason).
	instead [][3]string
	// brk is a one-line change made for this block only ("Break it"):
	// in file brk[0] (relative to the README), brk[1] becomes brk[2].
	brk []string
}

var (
	directiveRE = regexp.MustCompile(`^\s*<!--\s*check:\s*(.*?)\s*-->\s*$`)
	insteadRE   = regexp.MustCompile(`^run with (.+?) instead of (.+?): (.+)$`)
)

// parseREADME turns a README into steps. It fails on an annotation it does
// not know, one that is not followed by a console block, a background block
// with other than one command, and a shell block that is not marked console
// (which the check would otherwise never see).
func parseREADME(name, text string) ([]readmeStep, error) {
	var steps []readmeStep
	lines := strings.Split(text, "\n")
	var pending *readmeStep // directives waiting for their console block
	pendingLine := 0
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if m := directiveRE.FindStringSubmatch(l); m != nil {
			d := m[1]
			switch {
			case strings.HasPrefix(d, "interrupt "):
				steps = append(steps, readmeStep{line: i + 1, interrupt: strings.TrimSpace(strings.TrimPrefix(d, "interrupt "))})
			case strings.HasPrefix(d, "skip:"):
				if pending == nil {
					pending, pendingLine = &readmeStep{}, i+1
				}
				pending.skip = strings.TrimSpace(strings.TrimPrefix(d, "skip:"))
				if pending.skip == "" {
					return nil, fmt.Errorf("%s:%d: skip needs a reason: <!-- check: skip: REASON -->", name, i+1)
				}
			case strings.HasPrefix(d, "release "):
				if pending == nil {
					pending, pendingLine = &readmeStep{}, i+1
				}
				rel, reason, ok := strings.Cut(strings.TrimPrefix(d, "release "), ":")
				rel, reason = strings.TrimSpace(rel), strings.TrimSpace(reason)
				if !ok || reason == "" || !regexp.MustCompile(`^1\.[0-9]+$`).MatchString(rel) {
					return nil, fmt.Errorf("%s:%d: release MAJOR.MINOR: REASON, not %q", name, i+1, d)
				}
				running, err := checkedRelease()
				if err != nil {
					return nil, fmt.Errorf("%s:%d: %v", name, i+1, err)
				}
				if running != rel {
					pending.skip = fmt.Sprintf("shows %s, the check runs %s: %s", rel, running, reason)
				}
			case strings.HasPrefix(d, "break "):
				if pending == nil {
					pending, pendingLine = &readmeStep{}, i+1
				}
				file, change, ok1 := strings.Cut(strings.TrimPrefix(d, "break "), ": ")
				old, new, ok2 := strings.Cut(change, " => ")
				if !ok1 || !ok2 || old == "" {
					return nil, fmt.Errorf("%s:%d: break FILE: OLD => NEW, not %q", name, i+1, d)
				}
				pending.brk = []string{strings.TrimSpace(file), old, new}
			case strings.HasPrefix(d, "shape:"), strings.HasPrefix(d, "shape repeats:"):
				if pending == nil {
					pending, pendingLine = &readmeStep{}, i+1
				}
				kind, reason, _ := strings.Cut(d, ":")
				pending.shape, pending.repeats = strings.TrimSpace(reason), kind == "shape repeats"
				if pending.shape == "" {
					return nil, fmt.Errorf("%s:%d: shape needs a reason: <!-- check: shape: REASON -->", name, i+1)
				}
			case strings.HasPrefix(d, "run with "):
				if pending == nil {
					pending, pendingLine = &readmeStep{}, i+1
				}
				m := insteadRE.FindStringSubmatch(d)
				if m == nil {
					return nil, fmt.Errorf("%s:%d: run with NEW instead of OLD: REASON, not %q", name, i+1, d)
				}
				pending.instead = append(pending.instead, [3]string{m[1], m[2], m[3]})
			case strings.HasPrefix(d, "vary "):
				if pending == nil {
					pending, pendingLine = &readmeStep{}, i+1
				}
				re, err := regexp.Compile(strings.TrimSpace(strings.TrimPrefix(d, "vary ")))
				if err != nil {
					return nil, fmt.Errorf("%s:%d: vary: %v", name, i+1, err)
				}
				pending.vary = append(pending.vary, re)
			case strings.HasPrefix(d, "background "):
				if pending == nil {
					pending, pendingLine = &readmeStep{}, i+1
				}
				bgName, opt, _ := strings.Cut(strings.TrimSpace(strings.TrimPrefix(d, "background ")), " ")
				switch opt {
				case "":
				case "nowait":
					pending.noWait = true
				default:
					return nil, fmt.Errorf("%s:%d: background NAME [nowait], not %q", name, i+1, d)
				}
				pending.bg = bgName
			default:
				return nil, fmt.Errorf("%s:%d: unknown check annotation %q (skip: REASON, background NAME, interrupt NAME, break FILE: OLD => NEW, vary REGEXP, shape [repeats]: REASON, run with NEW instead of OLD: REASON)", name, i+1, d)
			}
			continue
		}
		trimmed := strings.TrimSpace(l)
		if pending != nil && trimmed != "" && trimmed != "```console" {
			return nil, fmt.Errorf("%s:%d: the check annotation is not followed by a ```console block", name, pendingLine)
		}
		if !strings.HasPrefix(trimmed, "```") {
			continue
		}
		info := strings.TrimSpace(strings.TrimPrefix(trimmed, "```"))
		if strings.Contains(info, "`") {
			continue // inline code at the start of a line, not a fence (CommonMark)
		}
		fence := strings.Index(l, "```")
		// Find the block's end.
		end := i + 1
		for end < len(lines) && strings.TrimSpace(lines[end]) != "```" {
			end++
		}
		body := lines[i+1 : min(end, len(lines))]
		if info != "console" {
			if info == "sh" || info == "bash" || info == "shell" || info == "" {
				for j, b := range body {
					if strings.HasPrefix(strings.TrimSpace(b), "$ ") {
						return nil, fmt.Errorf("%s:%d: a command in a ```%s block: make it a ```console block, which the check runs", name, i+2+j, info)
					}
				}
			}
			i = end
			continue
		}
		var block []readmeStep
		for j := 0; j < len(body); j++ {
			b := body[j]
			if fence > 0 && len(b) >= fence {
				b = b[fence:] // a block indented in a list
			}
			if strings.HasPrefix(b, "$ ") {
				cmd := strings.TrimPrefix(b, "$ ")
				line := i + 2 + j
				for strings.HasSuffix(cmd, "\\") && j+1 < len(body) {
					j++
					cmd += "\n" + strings.TrimSpace(body[j])
				}
				block = append(block, readmeStep{line: line, cmd: cmd})
				continue
			}
			if len(block) == 0 {
				return nil, fmt.Errorf("%s:%d: output before the first command of a console block", name, i+2+j)
			}
			block[len(block)-1].want = append(block[len(block)-1].want, b)
		}
		if pending != nil {
			if pending.bg != "" && len(block) != 1 {
				return nil, fmt.Errorf("%s:%d: a background block holds one command, this one %d", name, pendingLine, len(block))
			}
			if len(pending.instead) > 0 {
				if len(block) != 1 {
					return nil, fmt.Errorf("%s:%d: run with ... instead of ...: the block must hold one command, this one %d", name, pendingLine, len(block))
				}
				if pending.shape == "" {
					return nil, fmt.Errorf("%s:%d: run with ... instead of ... needs <!-- check: shape: REASON --> (run otherwise, its numbers differ)", name, pendingLine)
				}
				for _, in := range pending.instead {
					if n := strings.Count(block[0].cmd, in[1]); n != 1 {
						return nil, fmt.Errorf("%s:%d: run with %s instead of %s: the command holds %q %d times, not once", name, pendingLine, in[0], in[1], in[1], n)
					}
				}
			}
			for k := range block {
				block[k].skip, block[k].bg, block[k].brk, block[k].vary = pending.skip, pending.bg, pending.brk, pending.vary
				block[k].noWait = pending.noWait
				block[k].shape, block[k].repeats, block[k].instead = pending.shape, pending.repeats, pending.instead
			}
			pending = nil
		}
		steps = append(steps, block...)
		i = end
	}
	if pending != nil {
		return nil, fmt.Errorf("%s:%d: the check annotation is not followed by a ```console block", name, pendingLine)
	}
	// Every background command is interrupted, and only those.
	started := map[string]bool{}
	for _, s := range steps {
		switch {
		case s.bg != "" && s.skip == "":
			started[s.bg] = true
			if !hasCtrlC(s.want) {
				return nil, fmt.Errorf("%s:%d: background %s shows no ^C line (where Ctrl-C ends it)", name, s.line, s.bg)
			}
		case s.interrupt != "":
			if !started[s.interrupt] {
				return nil, fmt.Errorf("%s:%d: interrupt %s: no background block of that name runs before it", name, s.line, s.interrupt)
			}
			delete(started, s.interrupt)
		}
	}
	for n := range started {
		return nil, fmt.Errorf("%s: background %s is never interrupted (<!-- check: interrupt %s -->)", name, n, n)
	}
	return steps, nil
}

func hasCtrlC(want []string) bool {
	for _, w := range want {
		if strings.TrimSpace(w) == "^C" {
			return true
		}
	}
	return false
}

// normalizer replaces what differs from run to run by a placeholder.
type normalizer struct {
	res  []*regexp.Regexp
	repl []string
	// numbers: every number not right after "=" becomes "#" (shape).
	// repeats: a run of lines of one shape compares as one line.
	numbers, repeats bool
}

// numberRE is a number not right after "=" (a benchmark's name keeps its
// objects=10000; its GOMAXPROCS suffix -2 is a number like any other).
var numberRE = regexp.MustCompile(`(^|[^=\d.])\d+(\.\d+)?`)

func newNormalizer(root string) *normalizer {
	n := &normalizer{}
	add := func(re, repl string) { n.res = append(n.res, regexp.MustCompile(re)); n.repl = append(n.repl, repl) }
	if root != "" {
		add(regexp.QuoteMeta(root), "/home/you/listwatch-labs")
	}
	add(`(/[\w.-]+)*/tmp\.[A-Za-z0-9]{10}`, "<tmpdir>")
	add(`(127\.0\.0\.1|localhost):\d+`, "$1:<port>")
	add(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`, "<uid>")
	add(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)`, "<time>")
	add(`\b(\d+h)?(\d+m)?\d+(\.\d+)?(ns|µs|us|ms|s|m|h)\b`, "<dur>")
	// go test's "ok PKG (cached)": a result Go reused because nothing it
	// depends on changed since a run that printed a time there.
	add(`\(cached\)`, "<dur>")
	add(`"resourceVersion":\s*"\d+"`, `"resourceVersion":"<rv>"`)
	add(`resourceVersion=\d+`, "resourceVersion=<rv>")
	add(`\brv=\d+`, "rv=<rv>")
	add(`too old resource version: \d+ \(\d+\)`, "too old resource version: <rv> (<rv>)")
	add(`revision \d+`, "revision <rv>")
	add(`[ \t]+`, " ")
	return n
}

// with returns n plus patterns of a block's own (vary), replaced first.
func (n *normalizer) with(vary []*regexp.Regexp) *normalizer {
	if len(vary) == 0 {
		return n
	}
	m := &normalizer{numbers: n.numbers, repeats: n.repeats}
	for _, re := range vary {
		m.res = append(m.res, re)
		m.repl = append(m.repl, "<varies>")
	}
	m.res = append(m.res, n.res...)
	m.repl = append(m.repl, n.repl...)
	return m
}

// shaped returns n comparing by shape (numbers as wildcards), and with
// repeats, a run of same-shaped lines as one.
func (n *normalizer) shaped(repeats bool) *normalizer {
	m := *n
	m.numbers, m.repeats = true, repeats
	return &m
}

func (n *normalizer) line(s string) string {
	for i, re := range n.res {
		s = re.ReplaceAllString(s, n.repl[i])
	}
	if n.numbers {
		s = numberRE.ReplaceAllString(s, "${1}#")
	}
	return strings.TrimSpace(s)
}

// collapse drops each line whose shape is that of the line before it.
func (n *normalizer) collapse(ls []string) []string {
	var out []string
	for i, l := range ls {
		if i > 0 && strings.TrimSpace(l) != "..." && n.line(l) == n.line(ls[i-1]) {
			continue
		}
		out = append(out, l)
	}
	return out
}

// matchLines reports whether got matches want: line by line after
// normalising, a want line "..." matching any number of lines.
func (n *normalizer) matchLines(want, got []string) bool {
	if n.repeats {
		want, got = n.collapse(want), n.collapse(got)
	}
	return n.match(want, got)
}

func (n *normalizer) match(want, got []string) bool {
	if len(want) == 0 {
		return len(got) == 0
	}
	if strings.TrimSpace(want[0]) == "..." {
		for k := 0; k <= len(got); k++ {
			if n.match(want[1:], got[k:]) {
				return true
			}
		}
		return false
	}
	return len(got) > 0 && n.line(want[0]) == n.line(got[0]) && n.match(want[1:], got[1:])
}

// toolchainRE is what the go command prints about fetching modules the first
// time it needs them: chatter of the machine's caches, not of the course
// (scripts/test.sh downloads every module up front; a learner may still see
// it once).
var toolchainRE = regexp.MustCompile(`^go: (downloading|extracting|finding module for package|found) \S`)

// outputLines splits a command's output, dropping the blank lines at its end
// (a README block cannot show them) and the go command's module chatter.
func outputLines(s string) []string {
	var ls []string
	for _, l := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		if !toolchainRE.MatchString(l) {
			ls = append(ls, l)
		}
	}
	for len(ls) > 0 && strings.TrimSpace(ls[len(ls)-1]) == "" {
		ls = ls[:len(ls)-1]
	}
	return ls
}

func trimWant(want []string) []string {
	for len(want) > 0 && strings.TrimSpace(want[len(want)-1]) == "" {
		want = want[:len(want)-1]
	}
	return want
}

// beforeCtrlC and withoutCtrlC split a background block's shown output.
func beforeCtrlC(want []string) []string {
	for i, w := range want {
		if strings.TrimSpace(w) == "^C" {
			return want[:i]
		}
	}
	return want
}

func withoutCtrlC(want []string) []string {
	var out []string
	for _, w := range want {
		if strings.TrimSpace(w) != "^C" {
			out = append(out, w)
		}
	}
	return out
}

// lockedBuffer collects a background command's output while it runs.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

type bgCommand struct {
	step readmeStep
	cmd  *exec.Cmd
	out  *lockedBuffer
	done chan error
}

// shell is one learner's terminal session over a README: directory and
// variables persist from one command to the next.
type shell struct {
	name    string // the README, for messages
	root    string // the checkout the commands run in
	readme  string // the README's directory in it (break paths are relative to it)
	env     []string
	state   string // file: the exported variables after the last command
	dirFile string // file: the directory after the last command
	dir     string
	norm    *normalizer
	timeout time.Duration
	bg      map[string]*bgCommand
	log     func(format string, args ...any)
	check   *checkRun // what an interrupt must stop (nil: nothing registers)
}

// wrapper runs the command in bash with the session's variables and
// directory, then saves both. set -a exports every variable the command sets
// (T=$(...)), so the next command sees it, as in one terminal.
const wrapper = `set -a
source "$__STATE" >/dev/null 2>&1
cd "$__DIR" || exit 97
eval "$__CMD"
__rc=$?
set +a
export -n __STATE __DIR __DIRFILE __CMD __rc
export -p >"$__STATE"
pwd >"$__DIRFILE"
exit $__rc
`

// commandTimeout is how long one README command may take. It is generous on
// purpose: on a new machine a command's first go test or go run compiles its
// packages first (minutes on two busy cores), and a deadline is there to end
// a hang, not to time the course; go test's own -timeout does that.
const commandTimeout = 15 * time.Minute

func newShell(name, root string, env []string, norm *normalizer, log func(string, ...any), run *checkRun) (*shell, error) {
	// The session's state lives in the copy's .cluster/, which goes with it.
	if err := os.MkdirAll(filepath.Join(root, ".cluster"), 0o700); err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp(filepath.Join(root, ".cluster"), "readme-shell-")
	if err != nil {
		return nil, err
	}
	s := &shell{name: name, root: root, readme: filepath.Join(root, filepath.Dir(name)), env: env, state: filepath.Join(tmp, "state"), dirFile: filepath.Join(tmp, "dir"),
		dir: root, norm: norm, timeout: commandTimeout, bg: map[string]*bgCommand{}, log: log, check: run}
	return s, os.WriteFile(s.state, nil, 0o600)
}

func (s *shell) command(ctx context.Context, cmdText string) *exec.Cmd {
	c := exec.CommandContext(ctx, "bash", "-c", wrapper)
	c.Env = append(append([]string{}, s.env...),
		"__STATE="+s.state, "__DIR="+s.dir, "__DIRFILE="+s.dirFile, "__CMD="+cmdText)
	c.Dir = s.dir
	c.Stdin = nil
	// Its own process group: Ctrl-C and the clean-up reach every process it
	// starts (go run and the program it runs), as a terminal's would.
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	c.Cancel = func() error { return syscall.Kill(-c.Process.Pid, syscall.SIGKILL) }
	c.WaitDelay = 5 * time.Second
	return c
}

// runCmd runs a command, its process group known to the check's interrupt.
func (s *shell) runCmd(c *exec.Cmd) error {
	if err := c.Start(); err != nil {
		return err
	}
	if err := s.check.started(c.Process.Pid); err != nil {
		c.Wait()
		return err
	}
	defer s.check.ended(c.Process.Pid)
	return c.Wait()
}

// fuzzDeadlineRace reports whether a go test -fuzz command failed only on
// the fuzzer's own deadline: "context deadline exceeded" and no input saved.
func fuzzDeadlineRace(cmd, out string) bool {
	return strings.Contains(cmd, "-fuzz ") && strings.Contains(out, "context deadline exceeded") &&
		!strings.Contains(out, "Failing input written")
}

// fuzzTimeRE is a go test -fuzz command's -fuzztime and its value.
var fuzzTimeRE = regexp.MustCompile(`-fuzztime[ =]\S+`)

// warm makes a timed command's own work start at once: go test -fuzz
// compiles its package and every dependency again with coverage
// instrumentation before the -fuzztime clock starts, minutes on a new
// machine, so the same command first runs with -fuzztime 1x (one input after
// the baseline) into the build cache. Its output is not compared.
func (s *shell) warm(st readmeStep, cmd string) error {
	if !strings.Contains(cmd, "go test") || !strings.Contains(cmd, "-fuzz ") || !fuzzTimeRE.MatchString(cmd) {
		return nil
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
	defer cancel()
	c := s.command(ctx, fuzzTimeRE.ReplaceAllString(cmd, "-fuzztime 1x"))
	out, err := s.combined(c)
	s.log("%s: warmed the build first (-fuzztime 1x)  (%.1fs)", s.where(st), time.Since(start).Seconds())
	if err != nil {
		return fmt.Errorf("%s: $ %s\nits warm-up with -fuzztime 1x failed (%v); output:\n%s", s.where(st), st.cmd, err, out)
	}
	return nil
}

// combined is runCmd with the output collected.
func (s *shell) combined(c *exec.Cmd) ([]byte, error) {
	var out bytes.Buffer
	c.Stdout, c.Stderr = &out, &out
	err := s.runCmd(c)
	return out.Bytes(), err
}

func (s *shell) where(st readmeStep) string { return fmt.Sprintf("%s:%d", s.name, st.line) }

// normFor is how a step's output is compared: the shell's normalizer, the
// step's vary patterns, and by shape if it says so.
func (s *shell) normFor(st readmeStep) *normalizer {
	n := s.norm.with(st.vary)
	if st.shape != "" {
		n = n.shaped(st.repeats)
	}
	return n
}

// run runs one step and returns an error describing how it differs from
// the README.
func (s *shell) run(st readmeStep) error {
	switch {
	case st.skip != "":
		s.log("%s: SKIP %s  (%s)", s.where(st), firstLine(st.cmd), st.skip)
		return nil
	case st.interrupt != "":
		return s.interruptBG(st)
	case st.bg != "":
		return s.startBG(st)
	}
	if st.brk != nil {
		restore, err := s.breakLine(st)
		if err != nil {
			return err
		}
		defer restore()
	}
	cmd := st.cmd
	for _, in := range st.instead {
		cmd = strings.Replace(cmd, in[1], in[0], 1)
	}
	if err := s.warm(st, cmd); err != nil {
		return err
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
	defer cancel()
	c := s.command(ctx, cmd)
	var out bytes.Buffer
	c.Stdout, c.Stderr = &out, &out
	err := s.runCmd(c)
	if err != nil && ctx.Err() == nil && fuzzDeadlineRace(cmd, out.String()) {
		// Go 1.26's fuzzer can report its own -fuzztime deadline as a
		// failure (golang/go#75804, fixed in Go 1.27; scripts/fuzz.sh's
		// header says where): nothing was found, so run it once more.
		s.log("%s: the fuzzer reported its own deadline (golang/go#75804), not an input: ran it once more", s.where(st))
		out.Reset()
		c = s.command(ctx, cmd)
		c.Stdout, c.Stderr = &out, &out
		err = s.runCmd(c)
	}
	if d, rerr := os.ReadFile(s.dirFile); rerr == nil && len(d) > 0 {
		s.dir = strings.TrimSpace(string(d))
	}
	s.log("%s: ran %s  (%.1fs)", s.where(st), firstLine(st.cmd), time.Since(start).Seconds())
	for _, in := range st.instead {
		s.log("%s: ran with %s instead of %s: %s", s.where(st), in[0], in[1], in[2])
	}
	if st.shape != "" {
		how := "numbers as wildcards"
		if st.repeats {
			how += ", a run of same-shaped lines as one"
		}
		s.log("%s: compared by shape (%s): %s", s.where(st), how, st.shape)
	}
	if ctx.Err() != nil {
		return fmt.Errorf("%s: $ %s\ndid not end within %v; output so far:\n%s", s.where(st), st.cmd, s.timeout, out.String())
	}
	switch {
	case st.brk != nil && err == nil:
		return fmt.Errorf("%s: $ %s\npassed with the change %q => %q in %s: the test no longer catches it; output:\n%s",
			s.where(st), st.cmd, st.brk[1], st.brk[2], st.brk[0], out.String())
	case st.brk == nil && err != nil:
		return fmt.Errorf("%s: $ %s\nfailed (%v); output:\n%s", s.where(st), st.cmd, err, out.String())
	}
	want, got := trimWant(st.want), outputLines(out.String())
	if !s.normFor(st).matchLines(want, got) {
		if fuzzEndedInBaseline(cmd, out.String()) {
			// -fuzztime counts from the start: on a machine this busy it
			// ran out while the fuzzer was still replaying its corpus, so
			// the run passed without the fuzzing lines the README shows.
			s.log("%s: the fuzzer's -fuzztime ran out while it gathered its baseline (a busy machine): passed, without the lines of fuzzing the README shows", s.where(st))
			return nil
		}
		return s.mismatch(st, want, got)
	}
	return nil
}

// fuzzEndedInBaseline reports whether a go test -fuzz command passed while
// still gathering its baseline coverage: no "now fuzzing" line, then PASS.
func fuzzEndedInBaseline(cmd, out string) bool {
	return strings.Contains(cmd, "-fuzz ") && strings.Contains(out, "gathering baseline coverage") &&
		!strings.Contains(out, "now fuzzing") && strings.Contains(out, "\nPASS\n")
}

// breakLine makes a block's one-line change, "Break it": the old text must
// be in the file exactly once, so a README whose line has moved on fails.
// It returns the function that puts the file back.
func (s *shell) breakLine(st readmeStep) (func(), error) {
	path := filepath.Join(s.readme, st.brk[0])
	orig, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%s: break: %v", s.where(st), err)
	}
	if n := strings.Count(string(orig), st.brk[1]); n != 1 {
		return nil, fmt.Errorf("%s: break: %s holds %q %d times, not once", s.where(st), st.brk[0], st.brk[1], n)
	}
	broken := strings.Replace(string(orig), st.brk[1], st.brk[2], 1)
	if err := os.WriteFile(path, []byte(broken), 0o644); err != nil {
		return nil, err
	}
	s.log("%s: break: in %s, %q => %q", s.where(st), st.brk[0], st.brk[1], st.brk[2])
	return func() { os.WriteFile(path, orig, 0o644) }, nil
}

func (s *shell) mismatch(st readmeStep, want, got []string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: $ %s\nthe README shows:\n", s.where(st), st.cmd)
	for _, w := range want {
		fmt.Fprintf(&b, "    %s\n", w)
	}
	b.WriteString("the command printed:\n")
	for _, g := range got {
		fmt.Fprintf(&b, "    %s\n", g)
	}
	b.WriteString("compared by shape as:\n")
	norm := s.normFor(st)
	for _, w := range want {
		fmt.Fprintf(&b, "  - %s\n", norm.line(w))
	}
	for _, g := range got {
		fmt.Fprintf(&b, "  + %s\n", norm.line(g))
	}
	return errors.New(b.String())
}

// startBG starts a command as in a second terminal and waits until its first
// shown line has appeared (a server's "serving ..." line).
func (s *shell) startBG(st readmeStep) error {
	if _, ok := s.bg[st.bg]; ok {
		return fmt.Errorf("%s: background %s is already running", s.where(st), st.bg)
	}
	c := s.command(context.Background(), st.cmd)
	out := &lockedBuffer{}
	c.Stdout, c.Stderr = out, out
	if err := c.Start(); err != nil {
		return err
	}
	if err := s.check.started(c.Process.Pid); err != nil {
		c.Wait()
		return err
	}
	b := &bgCommand{step: st, cmd: c, out: out, done: make(chan error, 1)}
	go func() {
		err := c.Wait()
		s.check.ended(c.Process.Pid)
		b.done <- err
	}()
	s.bg[st.bg] = b
	s.log("%s: started in the background as %s: %s", s.where(st), st.bg, firstLine(st.cmd))
	first := beforeCtrlC(trimWant(st.want))
	if len(first) == 0 || st.noWait {
		return nil
	}
	return s.waitOutput(st, b, first[:1])
}

// waitOutput polls a background command's output until it starts with want
// (by shape), failing if the command ends first or the deadline passes.
func (s *shell) waitOutput(st readmeStep, b *bgCommand, want []string) error {
	deadline := time.Now().Add(s.timeout)
	pattern := append(append([]string{}, want...), "...")
	norm := s.normFor(st)
	for {
		got := outputLines(b.out.String())
		if norm.matchLines(pattern, got) {
			return nil
		}
		// All the lines are there and differ: no need to wait longer.
		if !slices.Contains(want, "...") && len(got) >= len(want) {
			return s.mismatch(st, want, got[:len(want)])
		}
		select {
		case err := <-b.done:
			b.done <- err
			return fmt.Errorf("%s: background %s ended (%v) before printing what the README shows; output:\n%s", s.where(st), st.bg, err, b.out.String())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: background %s did not print what the README shows before ^C within %v; the README shows:\n%s\nit printed:\n%s",
				s.where(st), st.bg, s.timeout, strings.Join(want, "\n"), b.out.String())
		}
	}
}

func (s *shell) interruptBG(st readmeStep) error {
	b, ok := s.bg[st.interrupt]
	if !ok {
		return fmt.Errorf("%s: interrupt %s: not running", s.where(st), st.interrupt)
	}
	delete(s.bg, st.interrupt)
	want := trimWant(b.step.want)
	if err := s.waitOutput(b.step, b, beforeCtrlC(want)); err != nil {
		s.kill(b)
		return err
	}
	syscall.Kill(-b.cmd.Process.Pid, syscall.SIGINT)
	select {
	case <-b.done:
		// Its exit status is not checked: what a program does on SIGINT is
		// its own (kubectl get -w exits 1); its output, below, is.
	case <-time.After(30 * time.Second):
		s.kill(b)
		return fmt.Errorf("%s: background %s did not end within 30s of Ctrl-C; output:\n%s", s.where(b.step), st.interrupt, b.out.String())
	}
	s.log("%s: interrupted %s (Ctrl-C)", s.where(st), st.interrupt)
	if got := outputLines(b.out.String()); !s.normFor(b.step).matchLines(withoutCtrlC(want), got) {
		return s.mismatch(b.step, withoutCtrlC(want), got)
	}
	return nil
}

func (s *shell) kill(b *bgCommand) {
	syscall.Kill(-b.cmd.Process.Pid, syscall.SIGKILL)
	<-b.done
}

// close kills whatever still runs in the background.
func (s *shell) close() {
	for _, b := range s.bg {
		s.kill(b)
	}
	os.RemoveAll(filepath.Dir(s.state))
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " ..."
	}
	return s
}

// runREADME runs every step of one README in a fresh shell; it stops at the
// first difference, since the commands after it build on it.
func runREADME(name, root string, steps []readmeStep, env []string, log func(string, ...any), run *checkRun) error {
	sh, err := newShell(name, root, env, newNormalizer(root), log, run)
	if err != nil {
		return err
	}
	defer sh.close()
	for _, st := range steps {
		if err := sh.run(st); err != nil {
			return err
		}
	}
	return nil
}

// copyCheckout copies the files git knows (tracked, and new ones not
// ignored) from root to dst, so README edits not yet committed are checked.
func copyCheckout(root, dst string) error {
	if err := os.RemoveAll(dst); err != nil {
		return err
	}
	out, err := exec.Command("git", "-C", root, "ls-files", "-z", "--cached", "--others", "--exclude-standard").Output()
	if err != nil {
		return fmt.Errorf("git ls-files: %v", err)
	}
	for _, f := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		src := filepath.Join(root, f)
		fi, err := os.Lstat(src)
		if errors.Is(err, os.ErrNotExist) {
			continue // deleted, not yet committed
		} else if err != nil {
			return err
		}
		if !fi.Mode().IsRegular() {
			continue
		}
		if err := os.MkdirAll(filepath.Join(dst, filepath.Dir(f)), 0o755); err != nil {
			return err
		}
		data, err := os.ReadFile(src)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dst, f), data, fi.Mode().Perm()); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(filepath.Join(dst, ".cluster"), 0o700); err != nil {
		return err
	}
	return os.Symlink(filepath.Join(root, ".cluster", "bin"), filepath.Join(dst, ".cluster", "bin"))
}

// readmeEnv is the learner's environment: this process's, without what
// would point the commands at another cluster or workspace, and with
// -count=1 in GOFLAGS: a learner typing a README's `go test` on a fresh
// checkout sees it run, where this machine's shared test cache could answer
// "(cached)" from an earlier run of the same command.
func readmeEnv() []string {
	var env []string
	goflags := "-count=1"
	for _, kv := range os.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "KUBECONFIG", "GOWORK", "PWD", "OLDPWD":
			continue
		case "GOFLAGS":
			goflags = strings.TrimSpace(v + " " + goflags)
			continue
		}
		env = append(env, kv)
	}
	return append(env, "GOFLAGS="+goflags)
}

func TestREADMECommands(t *testing.T) {
	root, err := Root()
	if err != nil {
		t.Fatal(err)
	}
	files, err := readmes(root)
	if err != nil {
		t.Fatal(err)
	}
	if *readmeMatch != "" {
		re := regexp.MustCompile(*readmeMatch)
		var some []string
		for _, f := range files {
			if re.MatchString(f) {
				some = append(some, f)
			}
		}
		files = some
	}
	plans := map[string][]readmeStep{}
	for _, f := range files {
		text, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		steps, err := parseREADME(f, string(text))
		if err != nil {
			t.Fatal(err)
		}
		plans[f] = steps
	}
	if !*runREADMEs {
		t.Skip("parsed every README; run them with -readmes")
	}
	if _, err := os.Stat(filepath.Join(root, ".cluster", "bin", "labcluster")); err != nil {
		t.Fatalf("the README check runs .cluster/bin/labcluster (scripts/build-labcluster.sh builds it): %v", err)
	}
	// Ctrl-C or SIGTERM (scripts/test.sh passes either on as SIGINT) would
	// end this process before any defer ran, leaving each copy's cluster and
	// the command running in it. Instead: kill the running commands, stop the
	// clusters, start nothing new; each README then fails at once and the
	// test ends as tests do, running every clean-up.
	run := newCheckRun()
	defer run.close()
	stopOnSignal := make(chan os.Signal, 1)
	signal.Notify(stopOnSignal, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(stopOnSignal)
	go func() {
		select {
		case sig := <-stopOnSignal:
			run.interrupt(sig)
		case <-run.done:
		}
	}()

	env := readmeEnv()
	start := time.Now()
	// Each README in a copy of its own (.cluster/readme-check/<name>: stable
	// paths, so the build cache is warm on the next run) with a cluster of
	// its own, several at once: most of a README's time is spent waiting (on
	// a watch's timeout, a server's start), so they overlap well even on two
	// cores, and none sees another's objects. The top README starts and
	// stops its cluster with its own commands; the others get the cluster the
	// top README's set-up leaves a learner with, started here as the learner
	// did (scripts/cluster-up.sh).
	sem := make(chan struct{}, max(1, *readmeParallel))
	t.Run("each", func(t *testing.T) {
		for _, f := range files {
			steps := plans[f]
			if len(steps) == 0 {
				t.Logf("%s: no console block", f)
				continue
			}
			t.Run(f, func(t *testing.T) {
				t.Parallel()
				sem <- struct{}{}
				defer func() { <-sem }()
				if run.interrupted() {
					t.Skip("interrupted before it started")
				}
				copyDir := filepath.Join(root, ".cluster", "readme-check", strings.NewReplacer("/", "-", ".md", "").Replace(f))
				if err := copyCheckout(root, copyDir); err != nil {
					t.Fatal(err)
				}
				logf := func(format string, args ...any) { t.Logf(format, args...) }
				// The README's own temporary files (a learner's `mktemp`)
				// go to a $TMPDIR of its own, removed when it ends.
				tmp, err := os.MkdirTemp("", "readme-tmp-")
				if err != nil {
					t.Fatal(err)
				}
				defer os.RemoveAll(tmp)
				env := append(slices.Clip(env), "TMPDIR="+tmp)
				if f != "README.md" {
					t.Logf("scripts/cluster-up.sh: the cluster the top README's set-up leaves up, for this README")
					if err := run.clusterUp(copyDir, env); err != nil {
						t.Fatal(err)
					}
					defer run.clusterDown(copyDir, env)
				} else {
					// The top README starts its own: stop it if it failed
					// before its own cluster-down.
					defer run.clusterDown(copyDir, env)
				}
				if err := runREADME(f, copyDir, steps, env, logf, run); err != nil {
					if run.interrupted() {
						t.Fatal("interrupted (Ctrl-C or SIGTERM)")
					}
					t.Error(err)
				}
			})
		}
	})
	ran, skipped := 0, 0
	for _, f := range files {
		for _, st := range plans[f] {
			switch {
			case st.interrupt != "":
			case st.skip != "":
				skipped++
			default:
				ran++
			}
		}
	}
	t.Logf("README check: %d READMEs, %d commands run, %d skipped (each listed above with its reason), in %.0fs, %d at once",
		len(files), ran, skipped, time.Since(start).Seconds(), max(1, *readmeParallel))
}

// checkRun is what the README check has running, so that an interrupt can
// stop it: the process group of every command it started, and every copy
// whose cluster is up.
type checkRun struct {
	mu       sync.Mutex
	groups   map[int]bool
	clusters map[string]bool
	stopping bool
	done     chan struct{}
}

func newCheckRun() *checkRun {
	return &checkRun{groups: map[int]bool{}, clusters: map[string]bool{}, done: make(chan struct{})}
}

func (r *checkRun) close() { close(r.done) }

// started records a command's process group; it fails once an interrupt
// has begun, so nothing new starts while the clean-up runs.
func (r *checkRun) started(pgid int) error {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopping {
		syscall.Kill(-pgid, syscall.SIGKILL)
		return errors.New("the README check was interrupted")
	}
	r.groups[pgid] = true
	return nil
}

func (r *checkRun) ended(pgid int) {
	if r == nil {
		return
	}
	r.mu.Lock()
	delete(r.groups, pgid)
	r.mu.Unlock()
}

// clusterUp runs scripts/cluster-up.sh in a copy and waits for what the
// controller-manager adds to every namespace: a learner's cluster is older
// than a few seconds.
func (r *checkRun) clusterUp(copyDir string, env []string) error {
	r.mu.Lock()
	stopping := r.stopping
	if !stopping {
		r.clusters[copyDir] = true
	}
	r.mu.Unlock()
	if stopping {
		return errors.New("the README check was interrupted")
	}
	c := exec.Command(filepath.Join(copyDir, "scripts", "cluster-up.sh"))
	c.Dir, c.Env = copyDir, env
	if out, err := c.CombinedOutput(); err != nil {
		return fmt.Errorf("cluster-up.sh: %v\n%s", err, out)
	}
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		c := exec.Command(filepath.Join(copyDir, "scripts", "kubectl"), "-n", "default", "get", "configmap", "kube-root-ca.crt")
		c.Dir, c.Env = copyDir, env
		return c.Run() == nil, nil
	})
	if err != nil {
		return errors.New("no ConfigMap default/kube-root-ca.crt a minute after cluster-up")
	}
	return nil
}

// clusterDown stops a copy's cluster (scripts/cluster-down.sh says "nothing
// to stop" when none is up).
func (r *checkRun) clusterDown(copyDir string, env []string) {
	c := exec.Command(filepath.Join(copyDir, "scripts", "cluster-down.sh"))
	c.Dir, c.Env = copyDir, env
	c.Run()
	r.mu.Lock()
	delete(r.clusters, copyDir)
	r.mu.Unlock()
}

// interrupt kills every running command and stops every cluster, then says
// what it stopped (last: if go test was killed too, a write to its closed
// pipe would end this process). What runs after it fails at once.
func (r *checkRun) interrupt(sig os.Signal) {
	r.mu.Lock()
	r.stopping = true
	groups, clusters := len(r.groups), len(r.clusters)
	for g := range r.groups {
		syscall.Kill(-g, syscall.SIGKILL)
	}
	var copies []string
	for dir := range r.clusters {
		copies = append(copies, dir)
	}
	r.mu.Unlock()
	var wg sync.WaitGroup
	for _, dir := range copies {
		wg.Go(func() {
			c := exec.Command(filepath.Join(dir, "scripts", "cluster-down.sh"))
			c.Dir, c.Env = dir, readmeEnv()
			c.Run()
		})
	}
	wg.Wait()
	fmt.Fprintf(os.Stderr, "README check: %v: interrupted; stopped %d running commands and %d clusters\n", sig, groups, clusters)
}

// interrupted reports whether an interrupt has stopped the check.
func (r *checkRun) interrupted() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stopping
}

// TestREADMECheckCatches shows the check failing: a README whose shown
// output is not what its command prints, one whose command fails, a
// background command whose Ctrl-C output differs, and annotations it cannot
// follow. It needs no cluster.
func TestREADMECheckCatches(t *testing.T) {
	t.Parallel() // in a directory of its own
	dir := t.TempDir()
	good := "Say hello:\n\n```console\n$ cd sub\n$ X=hello\n$ echo $X from $(basename $PWD)\nhello from sub\n```\n" +
		"A server, in a second terminal:\n\n<!-- check: background srv -->\n```console\n$ trap 'echo stopped; exit 0' INT; echo serving on 127.0.0.1:40123; while :; do sleep 0.1; done\nserving on 127.0.0.1:8080\n^C\nstopped\n```\n" +
		"```console\n$ echo \"$X again, $(date +%s)s\"\nhello again, 5s\n```\n<!-- check: interrupt srv -->\n" +
		"Break it:\n<!-- check: break sub/code.txt: answer=42 => answer=41 -->\n```console\n$ grep answer=42 code.txt\n```\n" +
		"```console\n$ cat code.txt\nanswer=42\n```\n" +
		"A count that differs from run to run:\n<!-- check: vary pid \\d+ -->\n```console\n$ echo \"pid $$\"\npid 1\n```\n" +
		"A benchmark:\n<!-- check: shape: numbers vary -->\n```console\n" +
		"$ for i in a b; do printf 'BenchmarkX/impl=%s/objects=10-2\\t%d\\t%d.%d ns/op\\n' $i $RANDOM $RANDOM $RANDOM; done\n" +
		"BenchmarkX/impl=a/objects=10-2 \t 1000\t 5020.366 ns/op\nBenchmarkX/impl=b/objects=10-2 \t 1000\t 5435.569 ns/op\n```\n" +
		"A progress log, run shorter:\n<!-- check: shape repeats: one line per second -->\n<!-- check: run with seq 2 instead of seq 5: takes 5 lines as written -->\n```console\n" +
		"$ for i in $(seq 5); do echo \"elapsed: ${i}s, execs: $((i*100 + RANDOM))\"; done; echo done\n" +
		"elapsed: 1s, execs: 100\nelapsed: 2s, execs: 200\nelapsed: 3s, execs: 300\nelapsed: 4s, execs: 400\nelapsed: 5s, execs: 500\ndone\n```\n"
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "sub", "code.txt"), []byte("answer=42\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(text string) error {
		steps, err := parseREADME("README.md", text)
		if err != nil {
			return err
		}
		return runREADME("README.md", dir, steps, readmeEnv(), func(string, ...any) {}, nil)
	}
	if err := run(good); err != nil {
		t.Fatalf("a true README fails the check: %v", err)
	}
	for name, tc := range map[string]struct{ text, want string }{
		"wrong output": {strings.Replace(good, "hello from sub\n", "hello from labs\n", 1),
			"README.md:6: $ echo $X from $(basename $PWD)\nthe README shows:\n    hello from labs\nthe command printed:\n    hello from sub"},
		"cd not followed":    {strings.Replace(good, "$ cd sub\n", "", 1), "the command printed:\n    hello from " + filepath.Base(dir)},
		"command fails":      {strings.Replace(good, "$ X=hello", "$ X=hello; false", 1), "README.md:5: $ X=hello; false\nfailed (exit status 1)"},
		"output after ^C":    {strings.Replace(good, "^C\nstopped", "^C\nbye", 1), "the README shows:\n    serving on 127.0.0.1:8080\n    bye\nthe command printed:\n    serving on 127.0.0.1:40123\n    stopped"},
		"never interrupted":  {strings.Replace(good, "<!-- check: interrupt srv -->\n", "", 1), "background srv is never interrupted"},
		"unknown annotation": {strings.Replace(good, "background srv", "backgroud srv", 1), `unknown check annotation "backgroud srv"`},
		"a shell block":      {good + "```sh\n$ rm -rf /\n```\n", "a command in a ```sh block"},
		"break not caught":   {strings.Replace(good, "=> answer=41", "=> answer=420", 1), `passed with the change "answer=42" => "answer=420" in sub/code.txt: the test no longer catches it`},
		"vary missing":       {strings.Replace(good, "<!-- check: vary pid \\d+ -->\n", "", 1), "the README shows:\n    pid 1\nthe command printed:\n    pid "},
		"break line gone":    {strings.Replace(good, "break sub/code.txt: answer=42", "break sub/code.txt: answer=43", 1), `break: sub/code.txt holds "answer=43" 0 times, not once`},
		"shape: other unit":  {strings.Replace(good, "5435.569 ns/op", "5435.569 us/op", 1), "compared by shape as:\n  - BenchmarkX/impl=a/objects=10-# # # ns/op\n  - BenchmarkX/impl=b/objects=10-# # # us/op\n"},
		"shape: other name":  {strings.Replace(good, "impl=a/objects=10-2", "impl=a/objects=100-2", 1), "  - BenchmarkX/impl=a/objects=100-# # # ns/op\n"},
		"shape: a line gone": {strings.Replace(good, "BenchmarkX/impl=a/objects=10-2 \t 1000\t 5020.366 ns/op\n", "", 1), "the README shows:\n    BenchmarkX/impl=b/objects=10-2"},
		"shape: no repeats":  {strings.Replace(good, "shape repeats:", "shape:", 1), "  - elapsed: <dur>, execs: #\n  - elapsed: <dur>, execs: #\n  - elapsed: <dur>, execs: #\n"},
		"repeats: last line": {strings.Replace(good, "execs: 500\ndone\n", "execs: 500\nfinished\n", 1), "  - finished\n"},
		"instead: no shape":  {strings.Replace(good, "<!-- check: shape repeats: one line per second -->\n", "", 1), "run with ... instead of ... needs <!-- check: shape: REASON -->"},
		"instead: not there": {strings.Replace(good, "instead of seq 5", "instead of seq 9", 1), `run with seq 2 instead of seq 9: the command holds "seq 9" 0 times, not once`},
	} {
		err := run(tc.text)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v\nwant an error containing %q", name, err, tc.want)
		}
	}
}

// TestREADMEReleaseDirective: a block marked `release 1.N: REASON` runs
// against that release and is skipped, saying why, against the other
// (LAB_RELEASE=previous); a release directive without a reason, or with
// no MAJOR.MINOR, is refused. It needs no cluster.
func TestREADMEReleaseDirective(t *testing.T) {
	current, err := checkedRelease()
	if err != nil {
		t.Fatal(err)
	}
	readme := "<!-- check: release " + current + ": shows gzip -->\n```console\n$ echo hi\nhi\n```\n"
	steps, err := parseREADME("R.md", readme)
	if err != nil || len(steps) != 1 || steps[0].skip != "" {
		t.Fatalf("against %s: %+v, %v; want the block run", current, steps, err)
	}
	t.Setenv(EnvRelease, "previous")
	previous, err := checkedRelease()
	if err != nil || previous == current {
		t.Fatalf("LAB_RELEASE=previous: release %q (%v), want another than %s", previous, err, current)
	}
	steps, err = parseREADME("R.md", readme)
	if err != nil || len(steps) != 1 || !strings.Contains(steps[0].skip, "shows gzip") {
		t.Fatalf("against %s: %+v, %v; want the block skipped with its reason", previous, steps, err)
	}
	for _, bad := range []string{"release 1.37", "release 1.37:", "release v1.37.0: why"} {
		if _, err := parseREADME("R.md", "<!-- check: "+bad+" -->\n```console\n$ echo hi\nhi\n```\n"); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}
