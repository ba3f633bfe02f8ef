package check

import (
	"errors"
	"sort"

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
