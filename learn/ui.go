package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"
)

// ui writes to the learner's terminal: colours and a spinner when stdout is
// a terminal (and NO_COLOR is unset), plain lines otherwise (CI, pipes, tests).
type ui struct {
	out, err io.Writer
	color    bool
	tty      bool
	spin     bool // a spinner on stderr

	// cmd is how the learner runs this command from where they typed it
	// (../../scripts/labs from a lab's directory), and base that directory:
	// the commands and paths we print are ones they can type or open there.
	// scripts/labs passes its caller's directory as LABS_CWD (it runs us from
	// the root); without it they are relative to the root.
	cmd  string
	base string
	root string

	mu      sync.Mutex
	label   string
	detail  string
	stop    chan struct{}
	stopped chan struct{}
}

func newUI(stdout, stderr io.Writer) *ui {
	u := &ui{out: stdout, err: stderr, cmd: "scripts/labs"}
	// A terminal, not merely a character device (/dev/null is one too).
	if f, ok := stdout.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		u.tty = true
		u.color = os.Getenv("NO_COLOR") == "" && os.Getenv("TERM") != "dumb"
	}
	// The spinner goes to stderr: only when that is a terminal as well.
	if f, ok := stderr.(*os.File); !ok || !term.IsTerminal(int(f.Fd())) {
		u.spin = false
	} else {
		u.spin = u.tty
	}
	return u
}

// isTerminal tells whether r is a terminal the learner can answer a
// question on.
func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

func (u *ui) paint(code, s string) string {
	if !u.color {
		return s
	}
	return "\x1b[" + code + "m" + s + "\x1b[0m"
}

func (u *ui) red(s string) string    { return u.paint("31", s) }
func (u *ui) green(s string) string  { return u.paint("32", s) }
func (u *ui) yellow(s string) string { return u.paint("33", s) }
func (u *ui) bold(s string) string   { return u.paint("1", s) }
func (u *ui) dim(s string) string    { return u.paint("2", s) }

func (u *ui) printf(format string, args ...any) { fmt.Fprintf(u.out, format, args...) }

// start shows label with a spinner (and the latest progress detail) until
// done is called. Without a terminal it prints label once.
func (u *ui) start(label string) {
	u.mu.Lock()
	u.label, u.detail = label, ""
	u.mu.Unlock()
	if !u.spin {
		fmt.Fprintf(u.err, "%s ...\n", label)
		return
	}
	u.stop, u.stopped = make(chan struct{}), make(chan struct{})
	go func(stop, stopped chan struct{}) {
		defer close(stopped)
		frames := []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}
		begin := time.Now()
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			u.mu.Lock()
			line := fmt.Sprintf("%s %s %s", frames[i%len(frames)], u.label, u.dim(fmt.Sprintf("%.0fs %s", time.Since(begin).Seconds(), u.detail)))
			u.mu.Unlock()
			if len(line) > 150 {
				line = line[:150]
			}
			fmt.Fprintf(u.err, "\r\x1b[K%s", line)
			select {
			case <-stop:
				fmt.Fprint(u.err, "\r\x1b[K")
				return
			case <-tick.C:
			}
		}
	}(u.stop, u.stopped)
}

// progress sets the spinner's detail (the test now running).
func (u *ui) progress(detail string) {
	u.mu.Lock()
	u.detail = detail
	u.mu.Unlock()
}

func (u *ui) done() {
	if u.stop != nil {
		close(u.stop)
		<-u.stopped
		u.stop = nil
	}
}

// from sets cmd and base for a learner who typed the command in cwd, inside
// the workspace at root; outside it (or cwd empty) they stay root-relative.
func (u *ui) from(root, cwd string) {
	u.base, u.root = root, root
	if cwd == "" {
		return
	}
	if !inside(root, cwd) {
		return
	}
	u.base = cwd
	if c, err := filepath.Rel(cwd, filepath.Join(root, "scripts", "labs")); err == nil {
		u.cmd = c
	}
}

// path is p (absolute) as the learner can open it from where they are:
// relative when p is in the workspace, else as it is.
func (u *ui) path(p string) string {
	if u.base == "" || !inside(u.root, p) {
		return p
	}
	if r, err := filepath.Rel(u.base, p); err == nil {
		return r
	}
	return p
}

// inside says whether p is dir or below it.
func inside(dir, p string) bool {
	r, err := filepath.Rel(dir, p)
	return err == nil && r != ".." && !strings.HasPrefix(r, ".."+string(filepath.Separator))
}
