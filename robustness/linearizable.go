package robustness

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
)

// The writes, and the final LIST, are checked for linearizability in two
// parts. Per key, with porcupine, on a model of one object: whether it
// exists, and the highest resourceVersion handed out for it so far. A write
// answered OK at RV r must find its precondition (create: the key absent;
// update and delete: present) and r above every RV before it on that key; a
// write refused with AlreadyExists or NotFound must find the key present or
// absent; the LIST must show the key as it is, at an RV no lower than the
// key's last write. An Unknown write may have been applied or not, unless
// an event or the LIST showed it applied: the model branches, as the model
// of etcd's robustness suite does, which considers both cases for a
// request whose response was unknown or an error (`NonDeterministicModel`,
// go.etcd.io/etcd/tests/v3@v3.7.0/robustness/model/non_deterministic.go:39-43).
// Across keys, without a search: one resourceVersion order for everything,
// so a write (or the LIST) that was answered before another was sent has
// the lower RV. The two together are linearizability of the whole
// history, since every RV is unique and the per-key orders are the RV
// order; splitting it keeps porcupine's search small (it is NP-hard, as
// the doc of porcupine's `CheckResult` says,
// github.com/anishathalye/porcupine@v1.3.1/model.go:359-361, and one model over
// every key ran out of its minute on a 15-second run).

type kvState struct {
	exists bool
	lastRV uint64
}

type kvInput struct {
	op  Op // or "list"
	key string
}

type kvOutput struct {
	outcome Outcome
	rv      uint64
	err     string
	present bool // the list's answer for this key
}

var kvModel = porcupine.NondeterministicModel{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		byKey := map[string][]porcupine.Operation{}
		for _, op := range history {
			k := op.Input.(kvInput).key
			byKey[k] = append(byKey[k], op)
		}
		var out [][]porcupine.Operation
		for _, k := range slices.Sorted(maps.Keys(byKey)) {
			out = append(out, byKey[k])
		}
		return out
	},
	Init: func() []any { return []any{kvState{}} },
	Step: func(state, input, output any) []any {
		s, in, out := state.(kvState), input.(kvInput), output.(kvOutput)
		if in.op == "list" {
			if out.present != s.exists || out.rv < s.lastRV {
				return nil
			}
			return []any{kvState{exists: s.exists, lastRV: out.rv}}
		}
		pre := s.exists == (in.op != Create) // create needs absence, the others presence
		apply := func(rv uint64) kvState {
			return kvState{exists: in.op != Delete, lastRV: max(rv, s.lastRV)}
		}
		switch out.outcome {
		case OK:
			if !pre || out.rv <= s.lastRV {
				return nil
			}
			return []any{apply(out.rv)}
		case Failed:
			switch {
			case strings.Contains(out.err, "AlreadyExists"):
				if !s.exists {
					return nil
				}
			case strings.Contains(out.err, "NotFound"):
				if s.exists {
					return nil
				}
			}
			return []any{s}
		case Applied: // at an RV we do not know
			if !pre {
				return nil
			}
			return []any{apply(0)}
		default: // Unknown and unresolved: applied (at an RV we do not know) or not
			if pre {
				return []any{s, apply(0)}
			}
			return []any{s}
		}
	},
	Equal: func(a, b any) bool { return a.(kvState) == b.(kvState) },
	DescribeOperation: func(input, output any) string {
		in, out := input.(kvInput), output.(kvOutput)
		if in.op == "list" {
			return fmt.Sprintf("list at rv=%d: %s present=%v", out.rv, in.key, out.present)
		}
		return fmt.Sprintf("%s %s -> %s rv=%d %s", in.op, in.key, out.outcome, out.rv, out.err)
	},
}

// linearizeTimeout bounds porcupine's search (the problem is NP-hard); a
// search that runs out is reported, not passed.
var linearizeTimeout = time.Minute

func (m *model) checkLinearizable() {
	var ops []porcupine.Operation
	for _, w := range m.h.Writes {
		out := kvOutput{outcome: w.Outcome, rv: w.RV, err: w.Err}
		ret := int64(w.End)
		if w.Outcome == Unknown {
			ret = math.MaxInt64 // no answer: it may take effect any time after its call
		}
		if rv, ok := m.resolved[w.ID]; ok {
			out = kvOutput{outcome: OK, rv: rv}
		}
		ops = append(ops, porcupine.Operation{ClientId: w.Client, Input: kvInput{op: w.Op, key: w.Key}, Call: int64(w.Start), Output: out, Return: ret, Metadata: w.String()})
	}
	if m.h.FinalList != nil {
		at := int64(m.h.FinalListAt)
		keys := map[string]bool{}
		for _, w := range m.h.Writes {
			keys[w.Key] = true
		}
		for k := range m.h.FinalList {
			keys[k] = true
		}
		for _, k := range slices.Sorted(maps.Keys(keys)) {
			_, present := m.h.FinalList[k]
			ops = append(ops, porcupine.Operation{ClientId: -1, Input: kvInput{op: "list", key: k}, Call: at, Output: kvOutput{outcome: OK, rv: m.h.FinalListRV, present: present}, Return: at})
		}
	}
	m.checkRVOrder()
	res, info := porcupine.CheckOperationsVerbose(kvModel.ToModel(), ops, linearizeTimeout)
	switch res {
	case porcupine.Ok:
	case porcupine.Unknown:
		m.add("linearizable", fmt.Sprintf("porcupine found no answer within %v over %d operations", linearizeTimeout, len(ops)))
	default:
		m.add("linearizable", "the writes (and the final LIST) cannot be put in one order that respects their times, their answers and their resourceVersions", m.nonLinearExcerpt(ops, info)...)
	}
}

// checkRVOrder checks that the resourceVersions of the writes (placed ones
// included) and the final LIST follow real time: nothing answered before
// another was sent has the higher RV.
func (m *model) checkRVOrder() {
	type timed struct {
		rank       uint64 // 2*RV for a write, 2*RV+1 for the LIST (after the writes it includes)
		start, end time.Duration
		what       string
	}
	var ts []timed
	for _, w := range m.applied {
		end := w.End
		if w.Outcome == Unknown {
			end = time.Duration(math.MaxInt64)
		}
		ts = append(ts, timed{2 * m.rv(w), w.Start, end, w.String()})
	}
	if m.h.FinalList != nil {
		ts = append(ts, timed{2*m.h.FinalListRV + 1, m.h.FinalListAt, m.h.FinalListAt, fmt.Sprintf("the final LIST at %v, rv=%d", m.h.FinalListAt, m.h.FinalListRV)})
	}
	slices.SortFunc(ts, func(a, b timed) int { return cmp.Compare(a.rank, b.rank) })
	latest := -1 // the lower-ranked entry that started last
	reported := map[int]bool{}
	for i, t := range ts {
		if latest >= 0 && t.end < ts[latest].start && !reported[latest] {
			reported[latest] = true
			m.add("linearizable", "a write with a lower resourceVersion was sent after one with a higher resourceVersion was answered", ts[latest].what, t.what)
		}
		if latest < 0 || t.start > ts[latest].start {
			latest = i
		}
	}
}

// nonLinearExcerpt is, for each key whose operations porcupine could not
// linearize, the end of the longest order it found and the operations it
// could not place after it: the part of the history that shows the
// violation.
func (m *model) nonLinearExcerpt(ops []porcupine.Operation, info porcupine.LinearizationInfo) []string {
	var out []string
	parts := kvModel.Partition(ops)
	for p, lins := range info.PartialLinearizationsOperations() {
		var longest []porcupine.Operation
		for _, lin := range lins {
			if len(lin) > len(longest) {
				longest = lin
			}
		}
		if p >= len(parts) || len(longest) == len(parts[p]) {
			continue
		}
		placed := map[string]bool{}
		out = append(out, fmt.Sprintf("key %s, linearized so far:", parts[p][0].Input.(kvInput).key))
		for _, op := range longest {
			placed[describe(op)] = true
		}
		for _, op := range longest[max(0, len(longest)-5):] {
			out = append(out, "  "+describe(op))
		}
		out = append(out, "none of these can come next:")
		n := 0
		for _, op := range parts[p] {
			if d := describe(op); !placed[d] && n < 5 {
				out = append(out, "  "+d)
				n++
			}
		}
	}
	return out
}

func describe(op porcupine.Operation) string {
	if s, ok := op.Metadata.(string); ok {
		return s
	}
	return kvModel.DescribeOperation(op.Input, op.Output)
}
