package main

import (
	"context"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// `labs watch NN [EXERCISE]`: check, then check again whenever a file of the
// lab changes, and say what changed since the last check ("now passes:
// resume-rv"). It polls the files' modification times and sizes every
// watchPoll, which needs nothing beyond the standard library and behaves
// the same on Linux and macOS (and with editors that save by renaming a new
// file over the old one). It clears nothing: each check follows the last.

// watchPoll is how often watch looks at the lab's files.
const watchPoll = 300 * time.Millisecond

// watchedFile reports whether a change to the file at path (relative to the
// lab) is one watch checks again for: the lab's sources, its module files,
// its exercises and its tests' data; not what a test may write as it runs.
func watchedFile(path string) bool {
	switch filepath.Ext(path) {
	case ".go", ".mod", ".sum", ".json", ".txtar":
		return true
	}
	return false
}

// fileStamp is what watch compares: a file's modification time and size.
type fileStamp struct {
	mod  time.Time
	size int64
}

// labFiles is a stamp of every watched file under dir, by path relative to
// dir, leaving out hidden directories.
func labFiles(dir string) map[string]fileStamp {
	files := map[string]fileStamp{}
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // a file removed during the walk: the next poll sees it
		}
		if d.IsDir() {
			if path != dir && strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir
			}
			return nil
		}
		rel, _ := filepath.Rel(dir, path)
		if !watchedFile(rel) {
			return nil
		}
		if info, err := d.Info(); err == nil {
			files[rel] = fileStamp{info.ModTime(), info.Size()}
		}
		return nil
	})
	return files
}

// changedFiles lists the files that differ between two stamps, sorted.
func changedFiles(before, after map[string]fileStamp) []string {
	var changed []string
	for p, a := range after {
		if b, ok := before[p]; !ok || !b.mod.Equal(a.mod) || b.size != a.size {
			changed = append(changed, p)
		}
	}
	for p := range before {
		if _, ok := after[p]; !ok {
			changed = append(changed, p)
		}
	}
	sort.Strings(changed)
	return changed
}

func cmdWatch(ctx context.Context, u *ui, root string, lab *Lab, only *Exercise, verbose bool) int {
	if len(lab.Exercises) == 0 {
		fmt.Fprintf(u.err, "labs: lab %s has no exercises yet\n", lab.Num)
		return 2
	}
	what := "the exercises"
	if only != nil {
		what = only.Name
	}
	rel := u.path(lab.Dir)
	u.printf("%s checks %s of lab %s now, then again each time you save a file under %s/ (Ctrl-C stops it)\n", u.bold("labs watch"), what, lab.Num, rel)
	var last map[string]bool
	files := labFiles(lab.Dir)
	for {
		pass, code := checkOnce(ctx, u, root, lab, only, false, false, verbose)
		if code == 130 || ctx.Err() != nil {
			return 130 // checkOnce said "labs: interrupted"
		}
		if pass != nil {
			u.printf("%s\n", watchSummary(u, lab, only, pass, last))
			last = pass
		}
		u.printf("%s\n", u.dim(fmt.Sprintf("watching %s/ for changes (Ctrl-C stops)", rel)))
		// Wait for a save: a change in the files since the check began (one
		// made while it ran counts too).
		tick := time.NewTicker(watchPoll)
		var changed []string
		for len(changed) == 0 {
			select {
			case <-ctx.Done():
				tick.Stop()
				return interruptedCmd(u)
			case <-tick.C:
			}
			now := labFiles(lab.Dir)
			changed = changedFiles(files, now)
			files = now
		}
		tick.Stop()
		if len(changed) > 3 {
			changed = append(changed[:3], fmt.Sprintf("and %d more", len(changed)-3))
		}
		u.printf("\n%s %s changed: checking again\n", u.dim(time.Now().Format("15:04:05")), strings.Join(changed, ", "))
	}
}

// watchSummary is one line: the time, which exercises pass and which fail,
// and what changed since the check before (last; nil for the first).
func watchSummary(u *ui, lab *Lab, only *Exercise, pass, last map[string]bool) string {
	var states, nowPass, nowFail []string
	n := 0
	for _, ex := range lab.Exercises {
		if only != nil && ex.Name != only.Name {
			continue
		}
		if pass[ex.Name] {
			n++
			states = append(states, u.green("✓")+" "+ex.Name)
		} else {
			states = append(states, u.red("✗")+" "+ex.Name)
		}
		if last != nil && pass[ex.Name] != last[ex.Name] {
			if pass[ex.Name] {
				nowPass = append(nowPass, ex.Name)
			} else {
				nowFail = append(nowFail, ex.Name)
			}
		}
	}
	line := fmt.Sprintf("%s lab %s: %d of %d pass: %s", time.Now().Format("15:04:05"), lab.Num, n, len(states), strings.Join(states, "  "))
	switch {
	case len(nowPass) > 0 || len(nowFail) > 0:
		if len(nowPass) > 0 {
			line += "; " + u.green("now passes: "+strings.Join(nowPass, ", "))
		}
		if len(nowFail) > 0 {
			line += "; " + u.red("now fails: "+strings.Join(nowFail, ", "))
		}
	case last != nil:
		line += "; no change since the last check"
	}
	return u.bold("==> ") + line
}
