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
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Transcript accumulates transcript lines and renders them with stable
// resourceVersion labels.
//
// The labelling rule: the object resourceVersions (of ADDED, MODIFIED,
// DELETED events and List items) that appear anywhere in the transcript are
// ranked numerically, and the k-th smallest is shown as rvk. So rv1 < rv2
// exactly when the real values compare so, wherever each first appeared: a
// LIST at a newer resourceVersion can never show an older object with a
// bigger label. A collection resourceVersion (of a List, a BOOKMARK, a number
// in a Status message) is not an object's: it is shown as ">=rvN", where rvN
// is the biggest object resourceVersion of the transcript at or below it
// (">=rv0" when there is none), because writes elsewhere in the cluster move
// it and only its order against the objects is stable.
//
// Labels depend on every resourceVersion in the transcript, so they are
// assigned when the transcript is rendered (String, Lines), not when a frame
// is added: adding a frame can change the labels of earlier lines.
type Transcript struct {
	// SquashBookmarks drops a BOOKMARK that directly follows another BOOKMARK
	// with the same (relative) resourceVersion: it tells nothing new. The
	// watch cache may send its pre-timeout bookmark once or twice (its timer
	// buckets are a second wide), and writes elsewhere in the cluster may add
	// one, so a golden file cannot count them.
	SquashBookmarks bool

	fields    []string
	objectRVs map[uint64]bool // every object resourceVersion seen
	lines     []line
}

// line is one transcript line before rendering: text in which resourceVersions
// stand as placeholders (see ObjectRV and CollectionRV).
type line struct {
	text     string
	bookmark string // for a BOOKMARK line, the placeholder of its resourceVersion
}

// Placeholders: a resourceVersion inside a line's text until it is rendered.
// The brackets are printable, so they survive strconv.Quote (Status messages
// are quoted), and no Kubernetes field the transcripts show contains them.
const (
	placeObject     = "⟦o"
	placeCollection = "⟦c"
	placeEnd        = "⟧"
)

var placeholder = regexp.MustCompile(`⟦([oc])([^⟧]*)⟧`)

// NewTranscript returns an empty transcript that shows the given fields
// (dotted paths such as "data.color") of each object.
func NewTranscript(fields ...string) *Transcript {
	return &Transcript{fields: fields, objectRVs: map[uint64]bool{}}
}

// String returns the transcript, one line per event, each ending in "\n".
func (t *Transcript) String() string {
	lines := t.Lines()
	if len(lines) == 0 {
		return ""
	}
	return strings.Join(lines, "\n") + "\n"
}

// Lines returns the rendered transcript lines.
func (t *Transcript) Lines() []string {
	renderRV := t.renderer()
	var out []string
	lastBookmark := "" // rendered RV of the previous line, if it was a BOOKMARK
	for _, l := range t.lines {
		if l.bookmark != "" {
			rv := placeholder.ReplaceAllStringFunc(l.bookmark, renderRV)
			if t.SquashBookmarks && rv == lastBookmark {
				continue
			}
			lastBookmark = rv
		} else {
			lastBookmark = ""
		}
		out = append(out, placeholder.ReplaceAllStringFunc(l.text, renderRV))
	}
	return out
}

// Len is the number of lines added so far (before any squashing).
func (t *Transcript) Len() int { return len(t.lines) }

// Pending returns the lines added from index from on, not yet rendered: their
// resourceVersions are placeholders, for Render to label once every frame is
// in. For a lab that interleaves lines of its own with the events' and
// renders at the end (lab 02's loop steps).
func (t *Transcript) Pending(from int) []string {
	var out []string
	for _, l := range t.lines[from:] {
		out = append(out, l.text)
	}
	return out
}

// Render labels the placeholders in text (from Pending, ObjectRV or
// CollectionRV) with the transcript's labels as they stand now.
func (t *Transcript) Render(text string) string {
	return placeholder.ReplaceAllStringFunc(text, t.renderer())
}

// renderer returns the function that turns one placeholder into its label.
func (t *Transcript) renderer() func(string) string {
	ranked := make([]uint64, 0, len(t.objectRVs))
	for rv := range t.objectRVs {
		ranked = append(ranked, rv)
	}
	slices.Sort(ranked)
	return func(m string) string {
		sub := placeholder.FindStringSubmatch(m)
		kind, rv := sub[1], sub[2]
		n, err := strconv.ParseUint(rv, 10, 64)
		switch {
		case rv == "":
			return "rv?"
		case err != nil:
			return "rv(" + rv + ")" // not a number: show it as it is
		case kind == "o":
			i, _ := slices.BinarySearch(ranked, n)
			return "rv" + strconv.Itoa(i+1)
		default:
			// The number of object resourceVersions <= n is the label of
			// the biggest of them.
			i, found := slices.BinarySearch(ranked, n)
			if found {
				i++
			}
			return ">=rv" + strconv.Itoa(i)
		}
	}
}

// ObjectRV returns the placeholder of an object's resourceVersion, to use in
// a line given to Note: it renders as rvN.
func (t *Transcript) ObjectRV(rv string) string {
	if n, err := strconv.ParseUint(rv, 10, 64); err == nil {
		t.objectRVs[n] = true
	}
	return placeObject + rv + placeEnd
}

// CollectionRV returns the placeholder of a collection's resourceVersion (a
// List's, a BOOKMARK's), to use in a line given to Note: it renders as >=rvN.
func (t *Transcript) CollectionRV(rv string) string {
	return placeCollection + rv + placeEnd
}

// Note adds a line of the caller's own (a lab's step lines between events).
// Placeholders from ObjectRV and CollectionRV in it are rendered like the
// events' resourceVersions.
func (t *Transcript) Note(text string) {
	t.lines = append(t.lines, line{text: text})
}

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
		t.Note("STATUS " + t.status(frame))
	case strings.HasSuffix(kind, "List"):
		items, _ := frame["items"].([]any)
		var itemLines []string
		for _, it := range items {
			obj, _ := it.(map[string]any)
			itemLines = append(itemLines, "ITEM "+t.object(strings.TrimSuffix(kind, "List"), obj))
		}
		list := fmt.Sprintf("LIST %s %s items=%d", kind, t.CollectionRV(str(frame, "metadata", "resourceVersion")), len(items))
		if cont := str(frame, "metadata", "continue"); cont != "" {
			list += " continue=yes"
		}
		t.Note(list)
		for _, l := range itemLines {
			t.Note(l)
		}
	default:
		return fmt.Errorf("not a watch event, List or Status (kind %q)", kind)
	}
	return nil
}

func (t *Transcript) addEvent(typ string, obj map[string]any) error {
	kind, _ := obj["kind"].(string)
	switch typ {
	case "ADDED", "MODIFIED", "DELETED":
		t.Note(typ + " " + t.object(kind, obj))
	case "BOOKMARK":
		rv := t.CollectionRV(str(obj, "metadata", "resourceVersion"))
		text := fmt.Sprintf("BOOKMARK %s %s", kind, rv)
		if ann, ok := get(obj, "metadata", "annotations").(map[string]any); ok {
			keys := make([]string, 0, len(ann))
			for k := range ann {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				text += fmt.Sprintf(" %s=%v", k, ann[k])
			}
		}
		t.lines = append(t.lines, line{text: text, bookmark: rv})
		return nil
	case "ERROR":
		t.Note("ERROR " + kind + " " + t.status(obj))
	default:
		return fmt.Errorf("unknown watch event type %q", typ)
	}
	return nil
}

// object renders "Kind name rvN field=value...".
func (t *Transcript) object(kind string, obj map[string]any) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s %s", kind, str(obj, "metadata", "name"), t.ObjectRV(str(obj, "metadata", "resourceVersion")))
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
		out := sub[1] + t.CollectionRV(sub[2])
		if sub[4] != "" {
			out += " (" + t.CollectionRV(sub[4]) + ")"
		}
		return out
	})
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
