package robustness

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
)

// The writes, and the final LIST, are checked for linearizability with
// porcupine on a model of the API's object store: which keys exist, and the
// highest resourceVersion handed out so far. A write answered OK at RV r
// must find its precondition (create: the key absent; update and delete: the
// key present) and r above every RV before it in the linearization; a write
// refused with AlreadyExists or NotFound must find the key present or
// absent; the LIST must return exactly the keys present, at an RV no lower
// than the last write's. An Unknown write may have been applied or not
// (the model branches, as etcd's robustness model does for a lost
// response), unless an event or the LIST showed it applied.

type kvState struct {
	exists string // the present keys, sorted, joined by "\n": comparable
	lastRV uint64
}

func (s kvState) has(key string) bool {
	return slices.Contains(s.keys(), key)
}

func (s kvState) keys() []string {
	if s.exists == "" {
		return nil
	}
	return strings.Split(s.exists, "\n")
}

func (s kvState) with(key string, present bool) kvState {
	ks := slices.DeleteFunc(s.keys(), func(k string) bool { return k == key })
	if present {
		ks = append(ks, key)
		slices.Sort(ks)
	}
	return kvState{exists: strings.Join(ks, "\n"), lastRV: s.lastRV}
}

type kvInput struct {
	op  Op     // or "list"
	key string // "" for the list
}

type kvOutput struct {
	outcome Outcome
	rv      uint64
	err     string
	keys    string // the list's keys, as kvState.exists
}

var kvModel = porcupine.NondeterministicModel{
	Init: func() []any { return []any{kvState{}} },
	Step: func(state, input, output any) []any {
		s, in, out := state.(kvState), input.(kvInput), output.(kvOutput)
		if in.op == "list" {
			if out.keys != s.exists || out.rv < s.lastRV {
				return nil
			}
			return []any{kvState{exists: s.exists, lastRV: out.rv}}
		}
		pre := s.has(in.key) == (in.op != Create) // create needs absence, the others presence
		apply := func(rv uint64) kvState {
			n := s.with(in.key, in.op != Delete)
			n.lastRV = max(rv, s.lastRV)
			return n
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
				if !s.has(in.key) {
					return nil
				}
			case strings.Contains(out.err, "NotFound"):
				if s.has(in.key) {
					return nil
				}
			}
			return []any{s}
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
			return fmt.Sprintf("list -> rv=%d keys=[%s]", out.rv, strings.ReplaceAll(out.keys, "\n", " "))
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
			if rv, ok := m.resolved[w.ID]; ok {
				out = kvOutput{outcome: OK, rv: rv}
			}
		}
		ops = append(ops, porcupine.Operation{ClientId: w.Client, Input: kvInput{op: w.Op, key: w.Key}, Call: int64(w.Start), Output: out, Return: ret, Metadata: w.String()})
	}
	if m.h.FinalList != nil {
		keys := slices.Sorted(maps.Keys(m.h.FinalList))
		at := int64(m.h.FinalListAt)
		ops = append(ops, porcupine.Operation{ClientId: -1, Input: kvInput{op: "list"}, Call: at, Output: kvOutput{outcome: OK, rv: m.h.FinalListRV, keys: strings.Join(keys, "\n")}, Return: at})
	}
	res, info := porcupine.CheckOperationsVerbose(kvModel.ToModel(), ops, linearizeTimeout)
	switch res {
	case porcupine.Ok:
	case porcupine.Unknown:
		m.add("linearizable", fmt.Sprintf("porcupine found no answer within %v over %d operations", linearizeTimeout, len(ops)))
	default:
		m.add("linearizable", "the writes (and the final LIST) cannot be put in one order that respects their times, their answers and their resourceVersions", m.nonLinearExcerpt(ops, info)...)
	}
}

// nonLinearExcerpt is the longest prefix porcupine could linearize, and the
// operations it could not place after it: the part of the history that
// shows the violation.
func (m *model) nonLinearExcerpt(ops []porcupine.Operation, info porcupine.LinearizationInfo) []string {
	var out []string
	partials := info.PartialLinearizations()
	for _, part := range partials {
		longest := []int{}
		for _, lin := range part {
			if len(lin) > len(longest) {
				longest = lin
			}
		}
		placed := map[int]bool{}
		out = append(out, "linearized so far:")
		for _, i := range longest[max(0, len(longest)-5):] {
			out = append(out, "  "+describe(ops[i]))
		}
		for _, i := range longest {
			placed[i] = true
		}
		out = append(out, "none of these can come next:")
		n := 0
		for i := range ops {
			if !placed[i] && n < 5 {
				out = append(out, "  "+describe(ops[i]))
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
