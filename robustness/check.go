package robustness

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/labels"
)

// Violation is one broken promise, with the shortest part of the history
// that shows it.
type Violation struct {
	// Kind names the guarantee: ordered, unique, reliable, atomic,
	// bookmarkable, initial-state, linearizable, informer-final,
	// informer-delete.
	Kind    string
	Text    string
	Excerpt []string
}

func (v Violation) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s", v.Kind, v.Text)
	for _, l := range v.Excerpt {
		b.WriteString("\n    " + l)
	}
	return b.String()
}

// Report is what Check found, with what it looked at.
type Report struct {
	Violations []Violation
	// Counted: writes (and of those, with an unknown outcome that events
	// or the final LIST resolved), watch events checked, handler calls.
	Writes, Resolved, Events, Calls int
}

// version is one object's state after a write that changed it.
type version struct {
	rv       uint64
	exists   bool
	resource string // "configmaps" or "pods"
	value    string
	labels   labels.Set
	node     string // a Pod's spec.nodeName
	write    *Write
	// until, for a delete answered without an RV that no event placed:
	// it happened at some RV in [rv, until), rv being one past the key's
	// write before it and until the key's write after it (one writer owns
	// a key and sends one write at a time). Before until, the object may
	// still be there.
	until uint64
}

// model is the history's writes in resourceVersion order, as etcd applied
// them.
type model struct {
	h        *History
	applied  []*Write // with a known RV, in RV order
	byRV     map[uint64]*Write
	resolved map[int]uint64       // write ID -> RV found for an Unknown write
	versions map[string][]version // key -> versions in RV order
	windows  map[string][]deleteWindow
	report   *Report
	// marks: the RVs, by key, at which a Pod was marked deleting, as
	// the answers of the updates that deleted it showed them.
	marks map[string][]uint64
}

// Check validates a history against the promises of a Kubernetes watch and
// an informer. It never stops at the first violation: each is reported.
func Check(h *History) Report {
	r := &Report{Writes: len(h.Writes), Events: len(h.Events), Calls: len(h.Calls)}
	// The checker reads some writes differently from how they were
	// answered (deletesDuringUpdate): on a copy, so the history stays as
	// recorded.
	hc := *h
	hc.Writes = slices.Clone(h.Writes)
	h = &hc
	m := buildModel(h, r, deletesDuringUpdate(h))
	m.checkLinearizable()
	for _, w := range h.Watches {
		m.checkWatcher(w)
	}
	for _, inf := range h.Informers {
		m.checkInformer(inf)
	}
	r.Resolved = len(m.resolved)
	return *r
}

func (m *model) add(kind, text string, excerpt ...string) {
	m.report.Violations = append(m.report.Violations, Violation{Kind: kind, Text: text, Excerpt: excerpt})
}

// buildModel orders the writes whose RV is known, resolving Unknown ones
// from the events and the final LIST: a create or update is found by its
// value (each is unique), a delete by its key.
func buildModel(h *History, r *Report, marks map[string][]uint64) *model {
	m := &model{h: h, byRV: map[uint64]*Write{}, resolved: map[int]uint64{}, versions: map[string][]version{}, report: r, marks: marks}
	for i := range h.Writes {
		w := &h.Writes[i]
		if w.Outcome != OK {
			continue
		}
		if other, dup := m.byRV[w.RV]; dup {
			m.add("linearizable", fmt.Sprintf("two writes answered with resourceVersion %d", w.RV), other.String(), w.String())
			continue
		}
		m.byRV[w.RV] = w
	}
	// Writes answered without an RV (Unknown, Applied) are placed by what
	// shows them: a create or update by its value, first (each value is
	// unique); then a delete by the DELETED events whose RV no known write
	// has, in RV order, matched to the deletes of that key in the order
	// they were sent.
	placed := func(w *Write) bool {
		_, done := m.resolved[w.ID]
		return w.Outcome == OK || w.Outcome == Failed || done
	}
	byValue := map[string]*Write{}
	deletes := map[string][]*Write{}
	for i := range h.Writes {
		w := &h.Writes[i]
		if placed(w) {
			continue
		}
		if w.Op == Delete {
			deletes[w.Key] = append(deletes[w.Key], w)
		} else {
			byValue[w.Key+"\x00"+w.Value] = w
		}
	}
	for _, ws := range deletes {
		slices.SortFunc(ws, func(a, b *Write) int { return cmp.Compare(a.Start, b.Start) })
	}
	place := func(w *Write, rv uint64) {
		m.resolved[w.ID] = rv
		m.byRV[rv] = w
	}
	shown := func(key string, rv uint64, value string) {
		if _, known := m.byRV[rv]; known || rv == 0 {
			return
		}
		if w, ok := byValue[key+"\x00"+value]; ok && !placed(w) {
			place(w, rv)
		}
	}
	for _, e := range h.Events {
		if e.Type == Added || e.Type == Modified {
			shown(e.Key, e.RV, e.Value)
		}
	}
	for key, o := range h.FinalList {
		shown(key, o.RV, o.Value)
	}
	// An informer's handler is shown every object its watch delivers,
	// with its RV.
	for _, c := range h.Calls {
		if (c.Kind == OnAdd || c.Kind == OnUpdate) && !c.Tombstone {
			shown(c.Key, c.RV, c.Value)
		}
	}
	m.placeMarks()
	// A delete's RV lies between those of its key's writes before and
	// after it (one writer owns a key and sends one write at a time): a
	// DELETED event whose RV no write has is the delete whose window holds
	// it.
	m.windows = m.deleteWindows()
	// Only a watcher without a label selector sees a DELETED only for a
	// delete: with one, an update that takes the object out of the
	// selector is a DELETED too (with the old object, at the update's RV),
	// and placing a delete there would move it onto an update.
	// A field selector here is metadata.name or spec.nodeName, which no
	// update changes: it cannot do that.
	labelled := map[int]bool{}
	for _, w := range h.Watches {
		labelled[w.ID] = w.Selector != ""
	}
	// unsure: a write of key that got no answer, is not placed, and could
	// have taken the object out of a selector before the event was seen.
	unsure := func(key string, rv uint64, seen time.Duration) bool {
		// The key's placed write just below rv: the unsure one was sent
		// after it (one writer owns a key).
		var after time.Duration
		var below uint64
		for i := range h.Writes {
			w := &h.Writes[i]
			if r := m.rv(w); w.Key == key && r != 0 && r < rv && r > below {
				below, after = r, w.Start
			}
		}
		for i := range h.Writes {
			w := &h.Writes[i]
			if w.Key == key && w.Op != Delete && w.Outcome == Unknown && !placed(w) && w.Start > after && w.Start <= seen {
				return true
			}
		}
		return false
	}
	// First the DELETED events of watchers without a label selector, then
	// the others', unless an unplaced write could explain them.
	var deleted []Event
	for _, e := range h.Events {
		if e.Type == Deleted && !labelled[e.Watcher] {
			deleted = append(deleted, e)
		}
	}
	// An informer's OnDelete with the object (not a tombstone) is its
	// watch's DELETED event; without a label selector, a delete's. (A
	// field selector here selects on metadata.name or spec.nodeName,
	// which no update changes.)
	unlabelledInformer := map[int]bool{}
	for _, inf := range h.Informers {
		unlabelledInformer[inf.ID] = inf.Selector == ""
	}
	for _, c := range h.Calls {
		if c.Kind == OnDelete && !c.Tombstone && unlabelledInformer[c.Informer] {
			deleted = append(deleted, Event{Watcher: -1, At: c.At, Type: Deleted, Key: c.Key, RV: c.RV, Value: c.Value})
		}
	}
	for _, e := range h.Events {
		if e.Type == Deleted && labelled[e.Watcher] {
			deleted = append(deleted, e)
		}
	}
	for _, e := range deleted {
		if _, known := m.byRV[e.RV]; known || e.RV == 0 || (labelled[e.Watcher] && unsure(e.Key, e.RV, e.At)) {
			continue
		}
		ws := m.windows[e.Key]
		i, _ := slices.BinarySearchFunc(ws, e.RV, func(w deleteWindow, rv uint64) int {
			if w.hi <= rv {
				return -1
			}
			return 1
		})
		// Several deletes' windows can hold it: a delete that got no answer
		// and was not applied, then one that was, before the key's next
		// write. The one the server confirmed is the one (a writer's
		// deletes of one object after the first fail or are no-ops); with
		// none confirmed, the first sent.
		var pick *Write
		for ; i < len(ws) && ws[i].lo < e.RV; i++ {
			if d := ws[i].d; !placed(d) && e.RV < ws[i].hi {
				if pick == nil || (pick.Outcome != Applied && d.Outcome == Applied) {
					pick = d
				}
			}
		}
		if pick != nil {
			place(pick, e.RV)
		}
	}
	for _, w := range m.byRV {
		m.applied = append(m.applied, w)
	}
	slices.SortFunc(m.applied, func(a, b *Write) int { return cmp.Compare(m.rv(a), m.rv(b)) })
	for _, w := range m.applied {
		v := version{rv: m.rv(w), exists: w.Op != Delete, resource: resourceName(w.Resource), value: w.Value, labels: labels.Set(w.Labels), node: w.Node, write: w}
		// spec.nodeName is set by a Pod's create and never changes after
		// (`ValidatePodUpdate` refuses a spec change outside a short
		// list, which spec.nodeName is not in,
		// k8s.io/kubernetes@v1.37.0/pkg/apis/core/validation/validation.go:5849-6001):
		// an update keeps the node of the object it updates.
		if vs := m.versions[w.Key]; w.Op != Create && len(vs) > 0 && vs[len(vs)-1].exists {
			v.node = vs[len(vs)-1].node
		}
		m.versions[w.Key] = append(m.versions[w.Key], v)
	}
	// Deletes the server confirmed without an RV and no event placed: put
	// each in the window between its key's writes before and after it. So
	// too a delete that got no answer when what came after shows it was
	// applied (the key was gone at the key's next write, or at the end).
	for i := range h.Writes {
		d := &h.Writes[i]
		if d.Op != Delete || placed(d) || (d.Outcome != Applied && !(d.Outcome == Unknown && m.deleteHappened(d))) {
			continue
		}
		vs := m.versions[d.Key]
		lo, hi := uint64(0), uint64(math.MaxUint64)
		for _, w := range m.windows[d.Key] {
			if w.d == d {
				lo, hi = w.lo, w.hi
			}
		}
		at := 0
		for j, v := range vs {
			if v.write.Start < d.Start {
				at = j + 1
			}
		}
		m.versions[d.Key] = slices.Insert(vs, at, version{rv: lo + 1, resource: resourceName(d.Resource), write: d, until: hi})
	}
	return m
}

// placeMarks finds the first of a Pod delete's two writes. The pod registry
// deletes gracefully (`CheckGracefulDelete` answers true for every delete
// that has options,
// k8s.io/kubernetes@v1.37.0/pkg/registry/core/pod/strategy.go:175-206),
// so kube-apiserver's registry first writes the Pod with its
// deletionTimestamp and deletionGracePeriodSeconds set
// (`updateForGracefulDeletionAndFinalizers`,
// k8s.io/apiserver@v0.37.0/pkg/registry/generic/registry/store.go:1116-1192)
// and, when that period is 0, deletes it in a second write in the same
// request (`Delete`,
// k8s.io/apiserver@v0.37.0/pkg/registry/generic/registry/store.go:1246-1279):
// a MODIFIED event, at an RV of its own, with the object's content
// unchanged, then the DELETED. So an object shown at an RV no write has,
// with the value of its key's write just below, is such a mark when a
// delete of that key was sent after that write. It becomes a write of its
// own (Op Mark, in the delete's time), and every watcher is held to it
// from then on. A mark nothing showed is not known, and not required.
// Lab 03 leaves graceful deletion out: on the course's stack a Pod's
// delete is one write.
func (m *model) placeMarks() {
	type seen struct {
		key   string
		rv    uint64
		value string
	}
	var shows []seen
	for _, e := range m.h.Events {
		if e.Type == Added || e.Type == Modified {
			shows = append(shows, seen{e.Key, e.RV, e.Value})
		}
	}
	for key, o := range m.h.FinalList {
		shows = append(shows, seen{key, o.RV, o.Value})
	}
	for _, c := range m.h.Calls {
		if (c.Kind == OnAdd || c.Kind == OnUpdate) && !c.Tombstone {
			shows = append(shows, seen{c.Key, c.RV, c.Value})
		}
	}
	// An update that deleted a marked Pod answered with the mark's RV;
	// its value is the one below it.
	for key, rvs := range m.marks {
		for _, rv := range rvs {
			shows = append(shows, seen{key, rv, ""})
		}
	}
	for _, sh := range shows {
		if _, known := m.byRV[sh.rv]; known || sh.rv == 0 {
			continue
		}
		// The key's placed write just below, and a delete sent after it.
		var below *Write
		for i := range m.h.Writes {
			w := &m.h.Writes[i]
			if r := m.rv(w); w.Key == sh.key && r != 0 && r < sh.rv && (below == nil || r > m.rv(below)) {
				below = w
			}
		}
		if below == nil || below.Op == Delete || (sh.value != "" && below.Value != sh.value) || resourceName(below.Resource) != "pods" {
			continue
		}
		var del *Write
		for i := range m.h.Writes {
			w := &m.h.Writes[i]
			if w.Key == sh.key && w.Op == Delete && w.Outcome != Failed && w.Start > below.Start && (del == nil || w.Start < del.Start) {
				del = w
			}
		}
		if del == nil || (m.rv(del) != 0 && m.rv(del) <= sh.rv) {
			continue
		}
		end := del.End
		if del.Outcome == Unknown {
			end = time.Duration(math.MaxInt64) // it may take effect any time
		}
		mark := &Write{ID: -del.ID, Client: del.Client, Op: Mark, Key: del.Key, Resource: del.Resource, Value: below.Value, Labels: below.Labels,
			Start: del.Start, End: end, Outcome: OK, RV: sh.rv}
		m.byRV[sh.rv] = mark
	}
}

// deletesDuringUpdate finds the updates that deleted their Pod, and
// rewrites each as the delete it was. kube-apiserver's registry deletes an
// object in place of updating it when the stored object already has a
// deletionTimestamp with a grace period of 0 (or none) and the update
// leaves it no finalizers (`ShouldDeleteDuringUpdate`,
// k8s.io/apiserver@v0.37.0/pkg/registry/generic/registry/store.go:633-654,
// called at store.go:845-849), and then answers 200 with the object the
// update asked for, not the one it deleted (`deleteWithoutFinalizers`,
// k8s.io/apiserver@v0.37.0/pkg/registry/generic/registry/store.go:658-679),
// which carries the stored object's resourceVersion (`UpdateObject`,
// k8s.io/apiserver@v0.37.0/pkg/registry/generic/registry/store.go:789-810).
// A Pod is left so when its delete fails between its two writes
// (placeMarks), as upstream's own comment in `BeforeDelete` allows
// (k8s.io/apiserver@v0.37.0/pkg/registry/rest/delete.go:75-121): the mark
// is written, the delete is not. In the runs that was a connection cut
// (the request's context is cancelled and the second write's etcd call
// fails with it) or etcd failing the second write (a leader moved or
// killed). The writer's next update of that Pod is then answered OK, with
// its own value, at the mark's RV. Such an update, of a Pod whose last
// delete got no answer, answered at an RV that is older than a write
// answered before it was sent, or at which an event, a handler call or the
// final LIST shows the Pod with another value, becomes a delete answered
// without an RV (the DELETED events place it), and its RV is returned as a
// mark of that Pod. It is a heuristic: an update of a marked Pod that
// nothing showed, after an outage that failed every other write, is not
// recognised, and is reported as a violation, with the history saved to
// look at. Lab 03 has neither the marks nor this.
func deletesDuringUpdate(h *History) map[string][]uint64 {
	// The highest RV answered by each time: OK writes by the end.
	var done []*Write
	for i := range h.Writes {
		if w := &h.Writes[i]; w.Outcome == OK {
			done = append(done, w)
		}
	}
	slices.SortFunc(done, func(a, b *Write) int { return cmp.Compare(a.End, b.End) })
	highest := make([]uint64, len(done)) // highest[i]: max RV of done[:i+1]
	for i, w := range done {
		highest[i] = w.RV
		if i > 0 {
			highest[i] = max(highest[i], highest[i-1])
		}
	}
	answeredBefore := func(t time.Duration) uint64 {
		i, _ := slices.BinarySearchFunc(done, t, func(w *Write, t time.Duration) int { return cmp.Compare(w.End, t) })
		if i == 0 {
			return 0
		}
		return highest[i-1]
	}
	// The Pod's last delete with no answer, and no create answered OK
	// after it, before w was sent.
	markedBy := func(w *Write) bool {
		var last *Write
		for i := range h.Writes {
			v := &h.Writes[i]
			if v.Key != w.Key || v.Start >= w.Start || (last != nil && v.Start < last.Start) {
				continue
			}
			if v.Op == Delete || (v.Op == Create && v.Outcome == OK) {
				last = v
			}
		}
		return last != nil && last.Op == Delete && last.Outcome == Unknown
	}
	// What the events, the handler calls and the final LIST showed of each
	// key at each RV.
	shown := map[string]map[string]bool{} // key@rv -> values
	show := func(key string, rv uint64, value string) {
		k := key + "@" + strconv.FormatUint(rv, 10)
		if shown[k] == nil {
			shown[k] = map[string]bool{}
		}
		shown[k][value] = true
	}
	// Not DELETED events nor OnDelete calls: they carry the old content
	// at the RV of the write that removed the object (from the watcher's
	// selector, or from the store).
	for _, e := range h.Events {
		if e.Type == Added || e.Type == Modified {
			show(e.Key, e.RV, e.Value)
		}
	}
	for _, c := range h.Calls {
		if (c.Kind == OnAdd || c.Kind == OnUpdate) && !c.Tombstone {
			show(c.Key, c.RV, c.Value)
		}
	}
	for key, o := range h.FinalList {
		show(key, o.RV, o.Value)
	}
	shownOtherwise := func(w *Write) bool {
		for v := range shown[w.Key+"@"+strconv.FormatUint(w.RV, 10)] {
			if v != w.Value {
				return true
			}
		}
		return false
	}
	marks := map[string][]uint64{}
	for i := range h.Writes {
		w := &h.Writes[i]
		if w.Op != Update || w.Outcome != OK || resourceName(w.Resource) != "pods" || !markedBy(w) ||
			(w.RV > answeredBefore(w.Start) && !shownOtherwise(w)) {
			continue
		}
		marks[w.Key] = append(marks[w.Key], w.RV)
		w.Err = fmt.Sprintf("answered OK at rv=%d, older than writes answered before it was sent: the Pod was marked deleting, and the update deleted it", w.RV)
		w.Op, w.Outcome, w.RV = Delete, Applied, 0
	}
	return marks
}

// deleteHappened tells, for a delete that got no answer and that no event
// placed, whether it was applied: the first later write of its key whose
// answer says whether the object existed (a create that succeeded or an
// update refused with NotFound: it was gone; an update or delete that
// succeeded, a create refused with AlreadyExists: it was there), else the
// final LIST. One writer owns a key and only it creates the object, so
// gone means deleted by d; later writes with no answer are passed over.
func (m *model) deleteHappened(d *Write) bool {
	var next *Write
	for i := range m.h.Writes {
		w := &m.h.Writes[i]
		if w.Key != d.Key || w.Start < d.End || w.Outcome == Unknown {
			continue
		}
		if next == nil || w.Start < next.Start {
			next = w
		}
	}
	if next == nil {
		if m.h.FinalList == nil {
			return false
		}
		_, present := m.h.FinalList[d.Key]
		return !present
	}
	switch {
	case next.Op == Create && next.Outcome == OK:
		return true
	case next.Outcome == Failed && strings.Contains(next.Err, "NotFound"):
		return true
	}
	return false
}

// deleteWindow is where the RV of d, a delete answered without an RV, must
// lie: above the RVs of its key's placed writes sent before it, below those
// of the ones sent after it was answered.
type deleteWindow struct {
	d      *Write
	lo, hi uint64
}

// deleteWindows computes, per key, the window of each delete not yet
// placed, in the order sent (so with increasing windows).
func (m *model) deleteWindows() map[string][]deleteWindow {
	byKey := map[string][]*Write{}
	for i := range m.h.Writes {
		w := &m.h.Writes[i]
		byKey[w.Key] = append(byKey[w.Key], w)
	}
	out := map[string][]deleteWindow{}
	for key, ws := range byKey {
		slices.SortFunc(ws, func(a, b *Write) int { return cmp.Compare(a.Start, b.Start) })
		// suffix[i]: the lowest RV among the placed writes ws[i:].
		suffix := make([]uint64, len(ws)+1)
		suffix[len(ws)] = math.MaxUint64
		for i := len(ws) - 1; i >= 0; i-- {
			suffix[i] = suffix[i+1]
			if rv := m.rv(ws[i]); rv != 0 {
				suffix[i] = min(suffix[i], rv)
			}
		}
		var lo uint64
		for i, w := range ws {
			if w.Op == Delete && m.rv(w) == 0 && w.Outcome != Failed {
				j := i + 1
				for j < len(ws) && ws[j].Start <= w.End {
					j++ // sent before it was answered: no order known
				}
				out[key] = append(out[key], deleteWindow{d: w, lo: lo, hi: suffix[j]})
			}
			if rv := m.rv(w); rv != 0 {
				lo = max(lo, rv)
			}
		}
	}
	return out
}

// rv is a write's resourceVersion, known or resolved.
func (m *model) rv(w *Write) uint64 {
	if w.Outcome == OK {
		return w.RV
	}
	return m.resolved[w.ID]
}

// at returns key's version in force at rv (exists false: none).
func (m *model) at(key string, rv uint64) version {
	vs := m.versions[key]
	i, _ := slices.BinarySearchFunc(vs, rv, func(v version, rv uint64) int {
		if v.rv <= rv {
			return -1
		}
		return 1
	})
	if i == 0 {
		return version{}
	}
	return vs[i-1]
}

// selector is what a watch or an informer selects: a resource, a label
// selector and a field selector, which here can be metadata.name=NAME, a
// field every resource can select on, since kube-apiserver's generic
// registry puts it in every object's field set (`ObjectMetaFieldsSet`,
// k8s.io/apiserver@v0.37.0/pkg/registry/generic/matcher.go:25-35), or for
// Pods spec.nodeName=NODE, which the pod registry adds to a Pod's fields
// (`ToSelectableFields`,
// k8s.io/kubernetes@v1.37.0/pkg/registry/core/pod/strategy.go:533-539).
// Lab 03 serves both.
type selector struct {
	resource string
	labels   labels.Selector
	name     string // the name metadata.name must be; "" for any
	node     string // the node spec.nodeName must be; "" for any
}

func parseSelector(resource, label, field string) (selector, error) {
	l, err := labels.Parse(label)
	if err != nil {
		return selector{}, fmt.Errorf("selector %q: %v", label, err)
	}
	s := selector{resource: resourceName(resource), labels: l}
	if field != "" {
		f, v, _ := strings.Cut(field, "=")
		switch {
		case v == "" || strings.ContainsAny(v, ",=!"):
		case f == "metadata.name":
			s.name = v
			return s, nil
		case f == "spec.nodeName" && s.resource == "pods":
			s.node = v
			return s, nil
		}
		return selector{}, fmt.Errorf("fieldSelector %q: the checker knows only metadata.name=NAME, and spec.nodeName=NODE for pods", field)
	}
	return s, nil
}

// matches tells whether the object key (namespace/name), as it is in
// version v, exists and is selected.
func (s selector) matches(key string, v version) bool {
	if !v.exists || v.resource != s.resource {
		return false
	}
	if s.name != "" {
		if _, name, _ := strings.Cut(key, "/"); name != s.name {
			return false
		}
	}
	if s.node != "" && v.node != s.node {
		return false
	}
	return s.labels.Matches(v.labels)
}

// stateAt is every object that exists at rv and matches sel, and apart
// those that may (a delete whose RV is not known may or may not have
// happened by rv).
func (m *model) stateAt(rv uint64, sel selector) (certain, maybe map[string]version) {
	certain, maybe = map[string]version{}, map[string]version{}
	for key := range m.versions {
		v := m.at(key, rv)
		if v.until != 0 && rv < v.until {
			if p := m.at(key, v.rv-1); sel.matches(key, p) {
				maybe[key] = p
			}
			continue
		}
		if sel.matches(key, v) {
			certain[key] = v
		}
	}
	return certain, maybe
}

// expected is the event a watcher with sel must get for write w (of
// version cur), or "" for none: what `convertToWatchEvent`
// makes of it (k8s.io/apiserver@v0.37.0/pkg/storage/cacher/cache_watcher.go:373-408),
// with the object's value it must carry (the old one for a DELETED).
func (m *model) expected(cur version, sel selector) (EventType, string) {
	prev := m.at(cur.write.Key, cur.rv-1)
	was := sel.matches(cur.write.Key, prev)
	is := sel.matches(cur.write.Key, cur)
	switch {
	case !was && is:
		return Added, cur.value
	case was && is:
		return Modified, cur.value
	case was && !is:
		return Deleted, prev.value
	}
	return "", ""
}

func (m *model) eventsOf(id int) []Event {
	var es []Event
	for _, e := range m.h.Events {
		if e.Watcher == id {
			es = append(es, e)
		}
	}
	return es
}

// checkWatcher checks one watcher's stream: its initial events show the
// state at its start, then every matching write comes once, in RV order,
// with the right type and content, none missing before the last RV it saw;
// bookmarks never go back and never pass an event not yet delivered; an
// ERROR ends the stream.
func (m *model) checkWatcher(spec WatchSpec) {
	sel, err := parseSelector(spec.Resource, spec.Selector, spec.FieldSelector)
	if err != nil {
		m.add("ordered", fmt.Sprintf("watcher %d: %v", spec.ID, err))
		return
	}
	es := m.eventsOf(spec.ID)
	head := fmt.Sprintf("watcher %d: %s resourceVersion=%q selector=%q sendInitialEvents=%v", spec.ID, sel.resource, spec.StartRV, spec.Selector, spec.SendInitialEvents)
	if spec.FieldSelector != "" {
		head += fmt.Sprintf(" fieldSelector=%q", spec.FieldSelector)
	}
	start, rest, ok := m.initial(spec, sel, es, head)
	if !ok {
		return
	}
	last := start
	seen := map[string]bool{}
	for i, e := range rest {
		ctx := func() []string {
			ex := []string{head}
			for _, p := range rest[max(0, i-2) : i+1] {
				ex = append(ex, p.String())
			}
			return ex
		}
		if e.Type == Error {
			if i != len(rest)-1 {
				m.add("ordered", fmt.Sprintf("watcher %d: events after an ERROR", spec.ID), append(ctx(), rest[i+1].String())...)
			}
			return
		}
		if e.Type == Bookmark {
			if e.RV < last {
				m.add("bookmarkable", fmt.Sprintf("watcher %d: a bookmark at %d after RV %d: it went back", spec.ID, e.RV, last), ctx()...)
				continue
			}
			if missed := m.missing(sel, last, e.RV); len(missed) > 0 {
				m.add("bookmarkable", fmt.Sprintf("watcher %d: a bookmark at %d passed %d matching write(s) not delivered", spec.ID, e.RV, len(missed)), append(ctx(), missed...)...)
			}
			last = e.RV
			continue
		}
		id := e.Key + "@" + strconv.FormatUint(e.RV, 10)
		if seen[id] {
			m.add("unique", fmt.Sprintf("watcher %d: %s at RV %d delivered twice", spec.ID, e.Key, e.RV), ctx()...)
			continue
		}
		seen[id] = true
		if e.RV <= last {
			m.add("ordered", fmt.Sprintf("watcher %d: RV %d after RV %d", spec.ID, e.RV, last), ctx()...)
			continue
		}
		if missed := m.missing(sel, last, e.RV-1); len(missed) > 0 {
			m.add("reliable", fmt.Sprintf("watcher %d: %d matching write(s) between RV %d and %d never delivered", spec.ID, len(missed), last, e.RV), append(ctx(), missed...)...)
		}
		w, ok := m.byRV[e.RV]
		if !ok && e.Type == Deleted && m.unplacedDeleteAt(e.Key, e.RV) {
			// A delete that got no RV, left unplaced because the event
			// could also be an unanswered update leaving the selector:
			// either explains it.
			last = e.RV
			continue
		}
		if !ok || w.Key != e.Key {
			m.add("atomic", fmt.Sprintf("watcher %d: an event for %s at RV %d, which no write of %s made", spec.ID, e.Key, e.RV, e.Key), ctx()...)
			last = e.RV
			continue
		}
		typ, value := m.expected(m.at(w.Key, e.RV), sel)
		if typ != e.Type || value != e.Value {
			want := "no event"
			if typ != "" {
				want = fmt.Sprintf("%s value=%s", typ, value)
			}
			m.add("atomic", fmt.Sprintf("watcher %d: %s for %s, want %s", spec.ID, e.Type, w, want), ctx()...)
		}
		last = e.RV
	}
}

// unplacedDeleteAt tells whether a delete of key whose RV is not known may
// lie at rv (rv is inside its window).
func (m *model) unplacedDeleteAt(key string, rv uint64) bool {
	for _, w := range m.windows[key] {
		if _, placed := m.resolved[w.d.ID]; !placed && w.lo < rv && rv < w.hi {
			return true
		}
	}
	return false
}

// missing lists the matching writes with from < RV <= to, each as the
// event the watcher should have had.
func (m *model) missing(sel selector, from, to uint64) []string {
	var out []string
	i, _ := slices.BinarySearchFunc(m.applied, from+1, func(w *Write, rv uint64) int { return cmp.Compare(m.rv(w), rv) })
	for ; i < len(m.applied) && m.rv(m.applied[i]) <= to; i++ {
		w := m.applied[i]
		if typ, _ := m.expected(m.at(w.Key, m.rv(w)), sel); typ != "" {
			out = append(out, fmt.Sprintf("missed %s from %s", typ, w))
		}
	}
	return out
}

// initial checks the part of the stream that shows the state at the
// watch's start, and returns that start and the events after it.
//   - resourceVersion=N: no initial part, the start is N.
//   - sendInitialEvents: ADDED events up to the bookmark marked
//     initial-events-end, whose RV is the start.
//   - "" or "0" without sendInitialEvents: a leading run of ADDED events
//     (the state at some RV S) and then events after S. Both servers
//     default such a watch to sendInitialEvents=true
//     (`SetListOptionsDefaults`,
//     k8s.io/apimachinery@v0.37.0/pkg/apis/meta/internalversion/defaults.go:25-37),
//     so if it allows bookmarks, S is on the wire as the initial-events-end
//     bookmark after the run, and that bookmark's RV is the candidate.
//     Without bookmarks S is not on the wire, so the longest leading run
//     that equals a state is taken.
func (m *model) initial(spec WatchSpec, sel selector, es []Event, head string) (uint64, []Event, bool) {
	if spec.StartRV != "" && spec.StartRV != "0" && !spec.SendInitialEvents {
		n, err := strconv.ParseUint(spec.StartRV, 10, 64)
		if err != nil {
			m.add("ordered", fmt.Sprintf("watcher %d: resourceVersion %q is not a number", spec.ID, spec.StartRV), head)
			return 0, nil, false
		}
		return n, es, true
	}
	end := slices.IndexFunc(es, func(e Event) bool { return e.Type == Bookmark && e.InitialEventsEnd })
	if spec.SendInitialEvents || end >= 0 {
		// sendInitialEvents, or "" or "0" with bookmarks, which both
		// servers serve as sendInitialEvents: the bookmark marked
		// initial-events-end names the state's RV.
		if end < 0 {
			// The stream ended before its initial events did (an error, a
			// 410): nothing to hold the rest against.
			return 0, nil, false
		}
		rv := es[end].RV
		m.sameState(spec, sel, es[:end], rv, head)
		m.freshEnough(spec, rv, head)
		return rv, es[end+1:], true
	}
	run := 0
	for run < len(es) && es[run].Type == Added {
		run++
	}
	// search finds the longest leading run that is the state at some RV,
	// and with fresh, a state no older than the writes answered before a
	// watch from "" was sent.
	search := func(fresh bool) (uint64, int, bool) {
		for k := run; k >= 0; k-- {
			var candidates []uint64
			lo := uint64(0)
			for _, e := range es[:k] {
				lo = max(lo, e.RV)
			}
			switch {
			case k < len(es) && es[k].Type == Bookmark:
				// The state at the bookmark's RV: nothing matching may come
				// between the start and it.
				candidates = append(candidates, es[k].RV)
			case k < len(es) && es[k].Type != Error && es[k].RV > 0:
				candidates = append(candidates, es[k].RV-1)
			default:
				candidates = append(candidates, lo)
				for _, w := range m.applied {
					if rv := m.rv(w); rv > lo {
						candidates = append(candidates, rv)
					}
				}
			}
			for _, s := range candidates {
				if certain, maybe := m.stateAt(s, sel); s >= lo && sameObjects(es[:k], certain, maybe) && (!fresh || m.fresh(spec, s)) {
					return s, k, true
				}
			}
		}
		return 0, 0, false
	}
	if s, k, ok := search(true); ok {
		return s, es[k:], true
	}
	if s, k, ok := search(false); ok {
		m.freshEnough(spec, s, head)
		return s, es[k:], true
	}
	if run == len(es) && run > 0 {
		// Nothing but ADDED events: the stream ended (the client stopped
		// it, its timeout came, the server closed a slow watcher) before
		// its initial events were all sent. They must be part of one
		// state; which part is not known.
		lo := uint64(0)
		for _, e := range es {
			lo = max(lo, e.RV)
		}
		candidates := []uint64{lo}
		for _, w := range m.applied {
			if rv := m.rv(w); rv > lo {
				candidates = append(candidates, rv)
			}
		}
		for _, s := range candidates {
			if certain, maybe := m.stateAt(s, sel); partOfObjects(es, certain, maybe) {
				return s, nil, true
			}
		}
	}
	excerpt := []string{head}
	for _, e := range es[:min(run, 5)] {
		excerpt = append(excerpt, e.String())
	}
	m.add("initial-state", fmt.Sprintf("watcher %d: its leading ADDED events are not the state at any resourceVersion", spec.ID), excerpt...)
	return 0, nil, false
}

// freshest is the highest RV of a write answered before the watch was
// sent: a watch from "" is a consistent read, served from the cache once it
// holds etcd's current revision, so its state is no older.
func (m *model) freshest(spec WatchSpec) (uint64, *Write) {
	if spec.StartRV != "" || spec.Start == 0 {
		return 0, nil
	}
	var rv uint64
	var w *Write
	for _, a := range m.applied {
		if a.Outcome == OK && a.End < spec.Start && a.RV > rv {
			rv, w = a.RV, a
		}
	}
	return rv, w
}

func (m *model) fresh(spec WatchSpec, rv uint64) bool {
	least, _ := m.freshest(spec)
	return rv >= least
}

// freshEnough reports a watch from "" whose initial state is older than a
// write answered before it was sent.
func (m *model) freshEnough(spec WatchSpec, rv uint64, head string) {
	if least, w := m.freshest(spec); rv < least {
		m.add("initial-state", fmt.Sprintf("watcher %d: from \"\" it showed the state at RV %d, older than a write answered before the watch was sent", spec.ID, rv), head, w.String())
	}
}

// sameState reports initial events that differ from the state at rv.
func (m *model) sameState(spec WatchSpec, sel selector, initial []Event, rv uint64, head string) {
	want, maybe := m.stateAt(rv, sel)
	if sameObjects(initial, want, maybe) {
		return
	}
	got := map[string]string{}
	for _, e := range initial {
		got[e.Key] = fmt.Sprintf("%s rv=%d value=%s", e.Type, e.RV, e.Value)
	}
	var diff []string
	for _, k := range slices.Sorted(maps.Keys(want)) {
		w := fmt.Sprintf("ADDED rv=%d value=%s", want[k].rv, want[k].value)
		if got[k] != w {
			diff = append(diff, fmt.Sprintf("%s: got %q, want %q", k, got[k], w))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(got)) {
		if _, ok := want[k]; !ok && !maybeHas(maybe, k, got[k]) {
			diff = append(diff, fmt.Sprintf("%s: got %q, want nothing", k, got[k]))
		}
	}
	m.add("initial-state", fmt.Sprintf("watcher %d: its initial events are not the state at RV %d", spec.ID, rv), append([]string{head}, diff...)...)
}

// sameObjects: the events are ADDED, one per object, with each object's
// RV and value: every certain object, and any of the maybe ones.
func sameObjects(es []Event, certain, maybe map[string]version) bool {
	return objectsOf(es, certain, maybe, true)
}

// partOfObjects: the same, but some objects may be missing (a stream cut
// short in its initial events).
func partOfObjects(es []Event, certain, maybe map[string]version) bool {
	return objectsOf(es, certain, maybe, false)
}

func objectsOf(es []Event, certain, maybe map[string]version, all bool) bool {
	seen := map[string]bool{}
	for _, e := range es {
		v, ok := certain[e.Key]
		if !ok {
			v, ok = maybe[e.Key]
		}
		if e.Type != Added || !ok || seen[e.Key] || v.rv != e.RV || v.value != e.Value {
			return false
		}
		seen[e.Key] = true
	}
	if all {
		for k := range certain {
			if !seen[k] {
				return false
			}
		}
	}
	return true
}

func maybeHas(maybe map[string]version, key, got string) bool {
	v, ok := maybe[key]
	return ok && got == fmt.Sprintf("ADDED rv=%d value=%s", v.rv, v.value)
}
