package robustness

import (
	"fmt"
	"maps"
	"math"
	"slices"
)

// interval is a stretch of resourceVersions over which an object exists and
// matches an informer's selector: [from, to), to 0 while it lasts.
type interval struct {
	from, to uint64
	// toMax: when the end is a delete whose RV is not known, it lies in
	// [to, toMax).
	toMax uint64
	index int
}

// visible lists key's intervals for sel, from its versions.
func (m *model) visible(key string, sel selector) []interval {
	var out []interval
	open := false
	for _, v := range m.versions[key] {
		in := sel.matches(key, v)
		switch {
		case in && !open:
			out = append(out, interval{from: v.rv, index: len(out)})
			open = true
		case !in && open:
			out[len(out)-1].to, out[len(out)-1].toMax = v.rv, max(v.rv+1, v.until)
			open = false
		}
	}
	return out
}

// RelistRecreate is the kind of a delete an informer's handler never got
// because the object was deleted and created again under its name while
// the informer relisted: the relist hands the handler OnUpdate(old, new)
// for two different objects. It is client-go's design, not a lost event
// (the `ResourceEventHandler` doc says OnUpdate is also called on a re-list,
// k8s.io/client-go@v0.37.0/tools/cache/controller.go:271-281, and
// `processReplacedAllInfo` pairs old and new objects by key alone,
// k8s.io/client-go@v0.37.0/tools/cache/controller.go:972-993), and a handler
// that must see every delete compares the objects' UIDs. Reported apart
// from the other kinds, with its history.
const RelistRecreate = "relist-recreate"

// checkInformer checks one informer: at the end its cache holds exactly
// what the final LIST returned (for its selector), and its handler saw
// every object it was shown leave: each stretch in which an object
// existed and matched, once the handler had seen it, ends with an OnDelete
// (DeletedFinalStateUnknown counts) before any call about a later stretch,
// and by the end when the stretch has ended.
func (m *model) checkInformer(inf InformerSpec) {
	sel, err := parseSelector(inf.Resource, inf.Selector, inf.FieldSelector)
	if err != nil {
		m.add("informer-final", fmt.Sprintf("informer %d (%s): %v", inf.ID, inf.Name, err))
		return
	}
	name := fmt.Sprintf("informer %d (%s on %s, selector %q", inf.ID, inf.Name, sel.resource, inf.Selector)
	if inf.FieldSelector != "" {
		name += fmt.Sprintf(", fieldSelector %q", inf.FieldSelector)
	}
	name += ")"
	if m.h.FinalList != nil {
		m.checkFinal(inf, sel, name)
	}
	calls := map[string][]HandlerCall{}
	for _, c := range m.h.Calls {
		if c.Informer == inf.ID {
			calls[c.Key] = append(calls[c.Key], c)
		}
	}
	for _, key := range slices.Sorted(maps.Keys(calls)) {
		ivs := m.visible(key, sel)
		which := func(c HandlerCall) int {
			for _, iv := range ivs {
				// An OnDelete's object is the last state seen, or the
				// deletion's (its RV is the end of the stretch).
				if c.RV >= iv.from && (iv.to == 0 || c.RV < iv.to || c.Kind == OnDelete && c.RV < iv.toMax) {
					return iv.index
				}
			}
			return -1
		}
		open := -1 // the stretch the handler was last shown and not told of its end
		var shown []string
		var prev HandlerCall // the handler's last call about key
		for _, c := range calls[key] {
			last := prev
			prev = c
			shown = append(shown, c.String())
			i := which(c)
			if i < 0 {
				m.add("informer-delete", fmt.Sprintf("%s: On%s for %s at RV %d, when no write had made it exist and match", name, c.Kind, key, c.RV), tail(shown, 3)...)
				continue
			}
			switch c.Kind {
			case OnDelete:
				open = -1
			default:
				if open >= 0 && open != i {
					if c.Kind == OnUpdate {
						// Only a relist merges two objects of one name into an
						// OnUpdate: client-go's `processReplacedAllInfo` gives
						// OnUpdate(old, new) for every key the cache held and
						// the new list has (k8s.io/client-go@v0.37.0/tools/cache/controller.go:972-1016).
						m.add(RelistRecreate, fmt.Sprintf("%s: %s was deleted at RV %d and created again at RV %d while the informer relisted: the handler got OnUpdate(rv %d -> rv %d) across the two objects, with no OnDelete between them", name, key, ivs[open].to, ivs[i].from, last.RV, c.RV), slices.Concat(tail(shown, 3), m.lifeOf(key, last.RV, c.RV))...)
					} else {
						m.add("informer-delete", fmt.Sprintf("%s: %s left at RV %d, and the handler was never told: its next call is about a later object of that name", name, key, ivs[open].to), slices.Concat(tail(shown, 3), m.lifeOf(key, ivs[open].from, c.RV))...)
					}
				}
				open = i
			}
		}
		if open >= 0 && ivs[open].to != 0 && (m.h.FinalList == nil || ivs[open].to <= m.h.FinalListRV) {
			m.add("informer-delete", fmt.Sprintf("%s: %s left at RV %d, and by the end the handler was never told", name, key, ivs[open].to), slices.Concat(tail(shown, 3), m.lifeOf(key, ivs[open].from, math.MaxUint64))...)
		}
	}
}

func (m *model) checkFinal(inf InformerSpec, sel selector, name string) {
	want := map[string]Object{}
	for key, o := range m.h.FinalList {
		// The model knows the object's labels and node, unless the write
		// that made it stayed Unknown; then it is expected either way, if
		// it is of the informer's resource.
		v := m.at(key, o.RV)
		if v.write == nil && m.resourceOf(key) == sel.resource || sel.matches(key, v) {
			want[key] = o
		}
	}
	got := m.h.Finals[inf.ID]
	var diff []string
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if g, ok := got[k]; !ok {
			diff = append(diff, fmt.Sprintf("%s: missing (the LIST has rv=%d value=%s)", k, want[k].RV, want[k].Value))
		} else if g != want[k] {
			diff = append(diff, fmt.Sprintf("%s: stale, rv=%d value=%s (the LIST has rv=%d value=%s)", k, g.RV, g.Value, want[k].RV, want[k].Value))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(got)) {
		if _, ok := want[k]; !ok {
			diff = append(diff, fmt.Sprintf("%s: still cached (rv=%d value=%s), gone from the LIST", k, got[k].RV, got[k].Value))
		}
	}
	if len(diff) > 0 {
		m.add("informer-final", fmt.Sprintf("%s: its cache at the end is not the final LIST at RV %d (%d difference(s))", name, m.h.FinalListRV, len(diff)), tail(diff, 8)...)
	}
}

// resourceOf is the resource of key's writes.
func (m *model) resourceOf(key string) string {
	for i := range m.h.Writes {
		if w := &m.h.Writes[i]; w.Key == key {
			return resourceName(w.Resource)
		}
	}
	return ""
}

// lifeOf is the writes that made key what it was from RV from to RV to:
// the last five, with the one in force at from.
func (m *model) lifeOf(key string, from, to uint64) []string {
	var out []string
	for _, v := range m.versions[key] {
		if v.rv <= to {
			out = append(out, v.write.String())
		}
		if v.rv <= from && len(out) > 1 {
			out = out[len(out)-1:] // only the one in force at from
		}
	}
	return tail(out, 5)
}

func tail(s []string, n int) []string {
	return s[max(0, len(s)-n):]
}
