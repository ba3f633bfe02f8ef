package check

import (
	"math"
	"slices"
	"strconv"

	"github.com/batonhq/baton/rules"
)

// fixedError reports whether the outcome is no failure: its error is the
// zero value.
func (p *problem) fixedError() bool { return len(p.kinds) == 1 && p.kinds[0] == "" }

// fixed is the value base gives a subject the search does not choose.
func (p *problem) fixed(subj subject) val {
	b := &p.base
	path := subj.path
	switch path[0] {
	case "result", "input", "context":
		m := map[string]map[string]any{"result": b.Result, "input": b.Input, "context": b.Context}[path[0]]
		var cur any = m
		for _, k := range path[1:] {
			mm, ok := cur.(map[string]any)
			if !ok {
				return val{missing: true}
			}
			if cur, ok = mm[k]; !ok {
				return val{missing: true}
			}
		}
		return val{v: cur}
	case "error":
		switch path[1] {
		case "kind":
			return val{v: b.Error.Kind}
		case "message":
			return val{v: b.Error.Message}
		}
		return val{v: b.Error.Retryable}
	case "state":
		return val{v: b.State}
	case "agent":
		return val{v: b.Agent}
	case "trigger":
		return val{v: b.Trigger}
	case "step":
		return val{v: b.Step}
	case "attempt":
		return val{v: b.Attempt}
	case "visits":
		return val{v: b.Visits[path[1]]}
	}
	return val{missing: true}
}

// fieldType is the declared type of a subject, and whether it may be missing.
func (s *solver) fieldType(subj subject) (typ string, optional bool) {
	path := subj.path
	switch path[0] {
	case "result", "input":
		schema := s.p.result
		if path[0] == "input" {
			schema = s.p.input
		}
		if f, ok := schema.Field(path[1]); ok && len(path) == 2 {
			return f.Type, f.Optional
		}
		return rules.TypeAny, true
	case "context":
		return rules.TypeAny, true
	case "error":
		if path[1] == "retryable" {
			return rules.TypeBool, false
		}
		return rules.TypeString, false
	}
	return rules.TypeInt, false
}

func (s *solver) candidates(subj subject, lits []any) []val {
	p := s.p
	switch subj.key {
	case "error.kind":
		if p.kinds == nil {
			// An agent may name any kind: the ones the conditions name,
			// the engine's default, and one no condition names.
			out := []val{{v: "error"}}
			for _, v := range strs(lits) {
				if v.v != "error" {
					out = append(out, v)
				}
			}
			return out
		}
		return vals(p.kinds)
	case "error.message":
		if len(p.kinds) == 1 && p.kinds[0] == "" {
			return []val{{v: ""}}
		}
	case "error.retryable":
		if p.noRetry || len(p.kinds) == 1 && p.kinds[0] == "" {
			return []val{{v: false}}
		}
	case "attempt":
		return intRange(p.attempts, lits)
	case "step":
		return intRange(p.steps, lits)
	}
	if subj.path[0] == "visits" {
		return intRange(p.visits, lits)
	}
	typ, optional := s.fieldType(subj)
	var out []val
	switch typ {
	case rules.TypeInt:
		out = numbers(lits, true)
	case rules.TypeNumber:
		out = numbers(lits, false)
	case rules.TypeString:
		out = strs(lits)
	case rules.TypeBool:
		out = []val{{v: true}, {v: false}}
	case rules.TypeList:
		out = lists(lits)
	case rules.TypeMap:
		out = []val{{v: map[string]any{}}}
	default:
		out = anyValues(lits)
	}
	if optional {
		out = append(out, val{missing: true})
	}
	return out
}

func vals(xs []string) []val {
	out := make([]val, 0, len(xs))
	for _, x := range xs {
		out = append(out, val{v: x})
	}
	return out
}

// anyValues are the values tried for an undeclared field: those of the
// kinds of its literals, or a few of each kind without literals.
func anyValues(lits []any) []val {
	var ns, ss, bs []any
	for _, l := range lits {
		switch l.(type) {
		case int, float64:
			ns = append(ns, l)
		case string:
			ss = append(ss, l)
		case bool:
			bs = append(bs, l)
		}
	}
	var out []val
	if len(ns) > 0 {
		out = append(out, numbers(ns, false)...)
	}
	if len(ss) > 0 {
		out = append(out, strs(ss)...)
	}
	if len(bs) > 0 || len(lits) == 0 {
		out = append(out, val{v: true}, val{v: false})
	}
	if len(lits) == 0 {
		out = append(out, val{v: ""}, val{v: 0})
	}
	return out
}

// numbers are the literals, their neighbours, the points between them,
// and zero: one value in each region the comparisons cut the line into.
func numbers(lits []any, integer bool) []val {
	var pts []float64
	for _, l := range lits {
		if f, ok := num(l); ok && !math.IsInf(f, 0) {
			pts = append(pts, f)
		}
	}
	slices.Sort(pts)
	pts = slices.Compact(pts)
	var out []float64
	add := func(f float64) {
		if integer {
			for _, g := range []float64{math.Floor(f), math.Ceil(f)} {
				if !slices.Contains(out, g) {
					out = append(out, g)
				}
			}
			return
		}
		if !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	for _, p := range pts {
		add(p)
	}
	for i, p := range pts {
		add(p - 1)
		add(p + 1)
		if i+1 < len(pts) && !integer {
			add((p + pts[i+1]) / 2)
		}
	}
	add(0)
	// In order along the line: the region below every literal comes
	// first, which is where a set of equalities leaves its gap.
	slices.Sort(out)
	res := make([]val, 0, len(out))
	for _, f := range out {
		res = append(res, val{v: numberValue(f)})
	}
	return res
}

// numberValue is f as an int when it is whole, so that it fits an int
// declaration and reads as written.
func numberValue(f float64) any {
	if f == math.Trunc(f) && math.Abs(f) < 1<<53 {
		return int(f)
	}
	return f
}

// intRange are the counter values worth trying within [lo, hi].
func intRange(r [2]int, lits []any) []val {
	var out []val
	seen := map[int]bool{}
	add := func(i int) {
		if i >= r[0] && i <= r[1] && !seen[i] {
			seen[i] = true
			out = append(out, val{v: i})
		}
	}
	for _, v := range numbers(lits, true) {
		add(v.v.(int))
	}
	add(r[0])
	add(r[1])
	return out
}

// strs are a string none of the literals is, the literals, and the empty
// string.
func strs(lits []any) []val {
	var named []val
	seen := map[string]bool{}
	for _, l := range lits {
		if s, ok := l.(string); ok && !seen[s] {
			seen[s] = true
			named = append(named, val{v: s})
		}
	}
	fresh := "other"
	for i := 2; seen[fresh]; i++ {
		fresh = "other" + strconv.Itoa(i)
	}
	out := append([]val{{v: fresh}}, named...)
	if !seen[""] {
		out = append(out, val{v: ""})
	}
	return out
}

// lists are the empty list and a list of each literal a condition looks
// for in it.
func lists(lits []any) []val {
	out := []val{{v: []any{}}}
	for _, l := range lits {
		out = append(out, val{v: []any{l}})
	}
	return out
}
