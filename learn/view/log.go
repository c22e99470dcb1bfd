package main

import (
	"sync"
	"time"
)

// logKept is how many entries the running log keeps: the view's memory
// stays bounded however long a burst runs.
const logKept = 200

// eventLog is the page's running log, in two parts kept apart so that a
// burst of events cannot push the rest out: notes (actions, errors, what
// ended) and the events the handler received, with the path they took.
type eventLog struct {
	mu     sync.Mutex
	seq    int64
	notes  []LogEntry // oldest first, at most logKept
	events []LogEntry // likewise
}

// LogEntry is one line of the running log.
type LogEntry struct {
	Seq   int64     `json:"seq"`
	At    time.Time `json:"at"`
	Layer string    `json:"layer"`
	Text  string    `json:"text"`
	Path  []string  `json:"path,omitempty"`
}

func (l *eventLog) add(layer, text string, path []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seq++
	e := LogEntry{Seq: l.seq, At: time.Now(), Layer: layer, Text: text, Path: path}
	if layer == "handler" {
		l.events = appendCapped(l.events, e)
	} else {
		l.notes = appendCapped(l.notes, e)
	}
}

func appendCapped(entries []LogEntry, e LogEntry) []LogEntry {
	if len(entries) == logKept {
		copy(entries, entries[1:])
		entries = entries[:logKept-1]
	}
	return append(entries, e)
}

// recent returns the newest n notes and n events, oldest first.
func (l *eventLog) recent(n int) (notes, events []LogEntry) {
	l.mu.Lock()
	defer l.mu.Unlock()
	last := func(es []LogEntry) []LogEntry { return append([]LogEntry(nil), es[max(0, len(es)-n):]...) }
	return last(l.notes), last(l.events)
}
