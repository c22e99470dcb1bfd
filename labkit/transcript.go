package labkit

// The event transcript: the one text format golden files use. It must read the
// same on every cluster, run and version, so it keeps what a lesson is about
// (event types, kinds, names, the order of resourceVersions, chosen fields)
// and drops or renumbers what changes from run to run (uids, timestamps,
// managedFields, the absolute resourceVersion numbers).

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Transcript accumulates transcript lines. Object resourceVersions are
// labelled rv1, rv2 ... in order of first appearance; collection
// resourceVersions (of a List, a BOOKMARK, numbers in a Status message) are
// shown as ">=rvN", relative to the newest object resourceVersion at or below
// them, because writes elsewhere in the cluster move them.
type Transcript struct {
	// SquashBookmarks drops a BOOKMARK that directly follows another BOOKMARK
	// with the same (relative) resourceVersion: it tells nothing new. The
	// watch cache may send its pre-timeout bookmark once or twice (its timer
	// buckets are a second wide), and writes elsewhere in the cluster may add
	// one, so a golden file cannot count them.
	SquashBookmarks bool
	lastBookmarkRV  string // the RV of the line just added, if it was a BOOKMARK

	fields []string
	labels map[uint64]int // object resourceVersion -> its label number
	lines  []string
}

// NewTranscript returns an empty transcript that shows the given fields
// (dotted paths such as "data.color") of each object.
func NewTranscript(fields ...string) *Transcript {
	return &Transcript{fields: fields, labels: map[uint64]int{}}
}

// String returns the transcript, one line per event, each ending in "\n".
func (t *Transcript) String() string {
	if len(t.lines) == 0 {
		return ""
	}
	return strings.Join(t.lines, "\n") + "\n"
}

// Lines returns the transcript lines.
func (t *Transcript) Lines() []string { return append([]string(nil), t.lines...) }

// AddStream adds every JSON value in r: watch event lines, a List, a Status,
// pretty-printed or not. A value cut off at the end is an error.
func (t *Transcript) AddStream(r io.Reader) error {
	dec := json.NewDecoder(r)
	dec.UseNumber()
	for n := 1; ; n++ {
		var frame map[string]any
		err := dec.Decode(&frame)
		if err == io.EOF {
			return nil
		}
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return fmt.Errorf("value %d is cut off: the stream ended inside it", n)
		}
		if err != nil {
			return fmt.Errorf("value %d: %v", n, err)
		}
		if err := t.add(frame); err != nil {
			return fmt.Errorf("value %d: %v", n, err)
		}
	}
}

// Add adds one JSON value (a watch event, a List or a Status).
func (t *Transcript) Add(frame []byte) error {
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(frame))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		return err
	}
	return t.add(m)
}

func (t *Transcript) add(frame map[string]any) error {
	if typ, ok := frame["type"].(string); ok {
		obj, _ := frame["object"].(map[string]any)
		if obj == nil {
			return fmt.Errorf("watch event %s without an object", typ)
		}
		return t.addEvent(typ, obj)
	}
	kind, _ := frame["kind"].(string)
	switch {
	case kind == "Status":
		t.lines = append(t.lines, "STATUS "+t.status(frame))
	case strings.HasSuffix(kind, "List"):
		items, _ := frame["items"].([]any)
		// Label the items first: the List's own resourceVersion is shown
		// relative to them.
		var itemLines []string
		for _, it := range items {
			obj, _ := it.(map[string]any)
			itemLines = append(itemLines, "ITEM "+t.object(strings.TrimSuffix(kind, "List"), obj))
		}
		line := fmt.Sprintf("LIST %s %s items=%d", kind, t.collectionRV(str(frame, "metadata", "resourceVersion")), len(items))
		if cont := str(frame, "metadata", "continue"); cont != "" {
			line += " continue=yes"
		}
		t.lines = append(t.lines, line)
		t.lines = append(t.lines, itemLines...)
	default:
		return fmt.Errorf("not a watch event, List or Status (kind %q)", kind)
	}
	return nil
}

func (t *Transcript) addEvent(typ string, obj map[string]any) error {
	kind, _ := obj["kind"].(string)
	if typ != "BOOKMARK" {
		t.lastBookmarkRV = "" // any other event ends a run of bookmarks
	}
	switch typ {
	case "ADDED", "MODIFIED", "DELETED":
		t.lines = append(t.lines, typ+" "+t.object(kind, obj))
	case "BOOKMARK":
		rv := t.collectionRV(str(obj, "metadata", "resourceVersion"))
		if t.SquashBookmarks && rv == t.lastBookmarkRV {
			return nil
		}
		line := fmt.Sprintf("BOOKMARK %s %s", kind, rv)
		if ann, ok := get(obj, "metadata", "annotations").(map[string]any); ok {
			keys := make([]string, 0, len(ann))
			for k := range ann {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				line += fmt.Sprintf(" %s=%v", k, ann[k])
			}
		}
		t.lines = append(t.lines, line)
		t.lastBookmarkRV = rv
		return nil
	case "ERROR":
		t.lines = append(t.lines, "ERROR "+kind+" "+t.status(obj))
	default:
		return fmt.Errorf("unknown watch event type %q", typ)
	}
	return nil
}

// object renders "Kind name rvN field=value...".
func (t *Transcript) object(kind string, obj map[string]any) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s %s", kind, str(obj, "metadata", "name"), t.objectRV(str(obj, "metadata", "resourceVersion")))
	for _, f := range t.fields {
		v := get(obj, strings.Split(f, ".")...)
		if v == nil {
			continue
		}
		fmt.Fprintf(&b, " %s=%s", f, render(v))
	}
	return b.String()
}

// status renders "Failure 410 Expired \"message\"".
func (t *Transcript) status(obj map[string]any) string {
	reason := str(obj, "reason")
	if reason == "" {
		reason = "(none)" // keep the columns: a Status may have no reason
	}
	return fmt.Sprintf("%s %s %s %q", str(obj, "status"), str(obj, "code"), reason, t.message(str(obj, "message")))
}

// rvInMessage finds the resourceVersions apiserver messages carry, as in
// "too old resource version: 123 (456)".
var rvInMessage = regexp.MustCompile(`(resource ?version:? )(\d+)( \((\d+)\))?`)

func (t *Transcript) message(msg string) string {
	return rvInMessage.ReplaceAllStringFunc(msg, func(m string) string {
		sub := rvInMessage.FindStringSubmatch(m)
		out := sub[1] + t.collectionRV(sub[2])
		if sub[4] != "" {
			out += " (" + t.collectionRV(sub[4]) + ")"
		}
		return out
	})
}

func (t *Transcript) objectRV(rv string) string {
	n, err := strconv.ParseUint(rv, 10, 64)
	if err != nil {
		if rv == "" {
			return "rv?"
		}
		return "rv(" + rv + ")" // not a number: show it as it is
	}
	label, ok := t.labels[n]
	if !ok {
		label = len(t.labels) + 1
		t.labels[n] = label
	}
	return "rv" + strconv.Itoa(label)
}

func (t *Transcript) collectionRV(rv string) string {
	n, err := strconv.ParseUint(rv, 10, 64)
	if err != nil {
		if rv == "" {
			return "rv?"
		}
		return "rv(" + rv + ")"
	}
	best, label := uint64(0), 0
	for v, l := range t.labels {
		if v <= n && v >= best {
			best, label = v, l
		}
	}
	return ">=rv" + strconv.Itoa(label)
}

func get(m map[string]any, path ...string) any {
	var v any = m
	for _, p := range path {
		mm, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = mm[p]
	}
	return v
}

func str(m map[string]any, path ...string) string {
	switch v := get(m, path...).(type) {
	case string:
		return v
	case json.Number:
		return v.String()
	case nil:
		return ""
	default:
		return fmt.Sprint(v)
	}
}

// render shows a field value: strings bare unless they need quotes, anything
// else as compact JSON (map keys sorted by encoding/json).
func render(v any) string {
	if s, ok := v.(string); ok {
		if s == "" || strings.ContainsAny(s, " \t\n\"=") {
			return strconv.Quote(s)
		}
		return s
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
