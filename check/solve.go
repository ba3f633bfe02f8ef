package check

import (
	"errors"
	"maps"
	"math"
	"slices"
	"sort"
	"strconv"

	"github.com/batonhq/baton/rules"
)

// Search budgets of one question to the solver: beyond them the answer is
// "undecided", never a guess.
const (
	maxNodes  = 20_000
	maxLeaves = 64
	// maxWork bounds the condition evaluations of one search, so that an
	// outcome with thousands of conditional rules stays fast.
	maxWork = 2_000_000
	// maxCandidates bounds the values tried for one field; a field with
	// more literals than that makes the search incomplete (undecided).
	maxCandidates = 64
)

// problem asks for values of the free fields under which the rules tried
// for one outcome select want (an index into cands), or none when want is
// -1. The answer is checked by the workflow's own Match before it is given.
type problem struct {
	w              *rules.Workflow
	state, trigger string
	cands          []*rules.Rule
	want           int
	// base holds what is not free: the outcome's state, agent and trigger,
	// and whatever the caller knows (a path's context and counters).
	base rules.Env
	// free says which roots the solver may choose: result, input,
	// context, error, attempt, step, visits.
	free map[string]bool
	// result and input type the fields of those roots.
	result, input *rules.Schema
	// kinds are the error kinds the outcome may carry ("" for an outcome
	// that is no failure).
	kinds []string
	// attempts, steps and visits bound the counters.
	attempts, steps, visits [2]int
	// noRetry fixes error.retryable to false: a scripted failure that is
	// not retried.
	noRetry bool
}

// answer is a solution: the values chosen, by subject, and the env they make.
type answer struct {
	values []binding
	env    rules.Env
}

// binding is one field the conditions read and the value a witness gives it.
type binding struct {
	key string
	val val
}

// verdict of a search.
type verdict int

const (
	found     verdict = iota
	proved            // no value can do it: the conditions are fully analysed
	undecided         // out of budget, or the conditions have opaque parts
)

type variable struct {
	subj  subject
	cands []val
	uses  int
}

type solver struct {
	p      *problem
	conds  []parsed // per candidate; zero for an unconditional rule
	vars   []variable
	a      assignment
	nodes  int
	leaves int
	work   int
	doubt  bool // a leaf the three-valued check passed failed the real evaluation
	cut    bool // a field had more values than the search tries
	out    *answer
}

// solve searches values for p. parse caches parsed conditions.
func solve(p *problem, parse func(*rules.Expr) parsed) (verdict, *answer) {
	s := &solver{p: p, a: assignment{}}
	last := len(p.cands)
	if p.want >= 0 {
		last = p.want + 1
	}
	opaqueSeen := false
	for i, r := range p.cands[:last] {
		if r.Condition == nil {
			if i == p.want {
				s.conds = append(s.conds, parsed{f: constF(true)})
				continue
			}
			return proved, nil // an earlier unconditional rule always fires
		}
		c := parse(r.Condition)
		opaqueSeen = opaqueSeen || opaque(c.f)
		s.conds = append(s.conds, c)
	}
	s.vars = s.variables()
	s.search(0)
	switch {
	case s.out != nil:
		return found, s.out
	case opaqueSeen || s.doubt || s.cut || s.nodes >= maxNodes || s.leaves >= maxLeaves || s.work >= maxWork:
		return undecided, nil
	}
	return proved, nil
}

func (s *solver) search(i int) bool {
	if s.nodes >= maxNodes || s.leaves >= maxLeaves || s.work >= maxWork {
		return false
	}
	s.nodes++
	s.work += len(s.conds)
	if !s.consistent() {
		return false
	}
	if i == len(s.vars) {
		return s.leaf()
	}
	v := s.vars[i]
	for _, c := range v.cands {
		s.a[v.subj.key] = c
		if s.search(i + 1) {
			return true
		}
	}
	delete(s.a, v.subj.key)
	return false
}

// consistent is false when the assignment so far already decides a
// condition against the goal.
func (s *solver) consistent() bool {
	for i, c := range s.conds {
		t := eval(c.f, s.a)
		if i == s.p.want {
			if t == triFalse {
				return false
			}
		} else if t == triTrue {
			return false
		}
	}
	return true
}

// leaf builds the env of a full assignment and asks the workflow's own
// Match what it selects.
func (s *solver) leaf() bool {
	s.leaves++
	env, ok := s.env()
	if !ok {
		s.doubt = true
		return false
	}
	if !s.p.selects(&env) {
		s.doubt = true
		return false
	}
	out := &answer{env: env}
	for _, v := range s.vars {
		if v.uses > 0 {
			out.values = append(out.values, binding{key: v.subj.key, val: s.a[v.subj.key]})
		}
	}
	s.out = out
	return true
}

// selects reports whether Match, given env, selects what p wants, with no
// condition failing at run time.
func (p *problem) selects(env *rules.Env) bool {
	m, err := p.w.Match(p.state, env.Agent, p.trigger, env)
	if p.want < 0 {
		var nm *rules.NoMatchError
		if !errors.As(err, &nm) {
			return false
		}
		for _, e := range nm.Tried {
			if e.Err != nil {
				return false
			}
		}
		return true
	}
	if err != nil || m.Rule != p.cands[p.want] {
		return false
	}
	for _, e := range m.Tried {
		if e.Err != nil {
			return false
		}
	}
	return true
}

// variables collects the free fields the conditions read, with the values
// worth trying for each: the literals they are compared with, their
// neighbours, and values no literal names.
func (s *solver) variables() []variable {
	lits := map[string][]any{}
	uses := map[string]int{}
	subjects := map[string]subject{}
	for _, c := range s.conds {
		for _, at := range atoms(c.f, nil) {
			k := at.subj.key
			subjects[k] = subject{key: k, path: at.subj.path}
			uses[k]++
			lits[k] = append(lits[k], at.lits...)
			if at.subj.hasDef {
				lits[k] = append(lits[k], at.subj.def)
			}
		}
		for _, r := range c.refs {
			if _, ok := subjects[r.key]; !ok {
				subjects[r.key] = subject{key: r.key, path: r.path}
			}
		}
	}
	var out []variable
	for k, subj := range subjects {
		if !s.p.free[subj.path[0]] || (subj.key == "error.kind" || subj.key == "error.message") && s.p.fixedError() {
			// What the outcome fixes is known: the conditions on it are
			// decided before the search.
			s.a[k] = s.p.fixed(subj)
			continue
		}
		cands := s.candidates(subj, lits[k])
		if len(cands) == 0 {
			s.a[k] = s.p.fixed(subj)
			continue
		}
		if len(cands) > maxCandidates {
			cands, s.cut = cands[:maxCandidates], true
		}
		out = append(out, variable{subj: subj, cands: cands, uses: uses[k]})
	}
	// Most constrained first, then by name, so that pruning bites early
	// and the search is deterministic.
	sort.Slice(out, func(i, j int) bool {
		if out[i].uses != out[j].uses {
			return out[i].uses > out[j].uses
		}
		return out[i].subj.key < out[j].subj.key
	})
	return out
}

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

// env builds the environment of the current assignment on top of base.
// It fails when the values break the result or input declaration: such a
// result is an invalid_result failure, not an outcome.
func (s *solver) env() (rules.Env, bool) {
	p := s.p
	env := p.base
	env.Result = cloneMap(env.Result)
	env.Input = cloneMap(env.Input)
	env.Context = cloneMap(env.Context)
	env.Visits = maps.Clone(env.Visits)
	if p.free["result"] {
		fill(env.Result, p.result)
	}
	if p.free["input"] {
		fill(env.Input, p.input)
	}
	for _, v := range s.vars {
		x, ok := s.a[v.subj.key]
		if !ok {
			continue
		}
		path := v.subj.path
		switch path[0] {
		case "result":
			setPath(env.Result, path[1:], x)
		case "input":
			setPath(env.Input, path[1:], x)
		case "context":
			setPath(env.Context, path[1:], x)
		case "error":
			switch path[1] {
			case "kind":
				env.Error.Kind, _ = x.v.(string)
			case "message":
				env.Error.Message, _ = x.v.(string)
			case "retryable":
				env.Error.Retryable, _ = x.v.(bool)
			}
		case "attempt":
			env.Attempt, _ = x.v.(int)
		case "step":
			env.Step, _ = x.v.(int)
		case "visits":
			if env.Visits == nil {
				env.Visits = map[string]int{}
			}
			env.Visits[path[1]], _ = x.v.(int)
		}
	}
	if p.result.Check(env.Result) != nil || p.input.Check(env.Input) != nil {
		return env, false
	}
	return env, true
}

// fill gives each required declared field missing from m a value of its type.
func fill(m map[string]any, s *rules.Schema) {
	if s == nil {
		return
	}
	for _, f := range s.Fields {
		if _, ok := m[f.Name]; ok || f.Optional {
			continue
		}
		m[f.Name] = zero(f.Type)
	}
}

func zero(typ string) any {
	switch typ {
	case rules.TypeString:
		return ""
	case rules.TypeNumber, rules.TypeInt:
		return 0
	case rules.TypeBool:
		return false
	case rules.TypeList:
		return []any{}
	case rules.TypeMap:
		return map[string]any{}
	}
	return nil
}

func setPath(m map[string]any, path []string, x val) {
	for _, k := range path[:len(path)-1] {
		next, ok := m[k].(map[string]any)
		if !ok {
			if x.missing {
				return
			}
			next = map[string]any{}
			m[k] = next
		}
		m = next
	}
	last := path[len(path)-1]
	if x.missing {
		delete(m, last)
		return
	}
	m[last] = x.v
}

// cloneMap copies m deeply enough for setPath: nested maps are copied.
func cloneMap(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		if sub, ok := v.(map[string]any); ok {
			v = cloneMap(sub)
		}
		out[k] = v
	}
	return out
}
