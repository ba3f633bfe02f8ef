package rules

import (
	"fmt"
	"slices"
	"strings"
)

// lint returns the warnings of SPEC §2 for a workflow that loaded without
// errors: unreachable states, rules that can never fire, rules that may
// both match, outcomes without an unconditional fallback, and cycles bound
// only by the default limits.
func lint(w *Workflow, l *loader) []Diagnostic {
	li := &linter{w: w, file: w.File}
	li.unreachable()
	li.groups()
	li.waits()
	if !l.explicitLimit {
		li.cycles()
	}
	return li.out
}

type linter struct {
	w    *Workflow
	file string
	out  []Diagnostic
}

func (li *linter) warnAt(p Pos, format string, args ...any) {
	li.out = append(li.out, Diagnostic{File: li.file, Line: p.Line, Col: p.Col, Severity: SeverityWarning, Message: fmt.Sprintf(format, args...)})
}

// edges returns the rule edges of the state graph, by source state.
func (li *linter) edges() map[string][]*Rule {
	out := map[string][]*Rule{}
	for _, r := range li.w.Rules {
		for _, s := range r.Sources {
			out[s] = append(out[s], r)
		}
	}
	return out
}

// unreachable warns about states no path from the initial state enters;
// on_limit counts as an edge from every state.
func (li *linter) unreachable() {
	w := li.w
	seen := map[string]bool{w.Initial: true}
	if w.Limits.OnLimit != "" {
		seen[w.Limits.OnLimit] = true
	}
	edges := li.edges()
	queue := []string{w.Initial}
	if w.Limits.OnLimit != "" {
		queue = append(queue, w.Limits.OnLimit)
	}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		for _, r := range edges[s] {
			if !seen[r.Next] {
				seen[r.Next] = true
				queue = append(queue, r.Next)
			}
		}
	}
	for _, s := range w.States {
		if !seen[s.Name] {
			li.warnAt(s.Pos, "state %q is unreachable from initial state %q", s.Name, w.Initial)
		}
	}
}

// waits warns about each signal of a wait state without a timeout that no
// rule covers: sent, it fails the instance; never sent, the instance waits
// for ever.
func (li *linter) waits() {
	w := li.w
	for _, s := range w.States {
		if !s.Waits() || s.Timeout > 0 {
			continue
		}
		for _, sig := range s.Wait.Signals {
			if len(w.Candidates(s.Name, s.Name, sig)) == 0 {
				li.warnAt(s.Pos, "wait state %q has no timeout and no rule covers its signal %q: the instance may wait for ever", s.Name, sig)
			}
		}
		for _, r := range w.Candidates(s.Name, s.Name, "timeout") {
			li.warnAt(r.Pos, "rule %q can never fire on timeout: wait state %q has no timeout", r.ID, s.Name)
		}
	}
}

// groups checks each (from, trigger) candidate list.
func (li *linter) groups() {
	w := li.w
	type pair struct{ a, b *Rule }
	warnedPair := map[pair]bool{}
	blockedBy := map[*Rule]map[string]*Rule{} // rule -> trigger -> earlier unconditional rule
	for _, r := range w.Rules {
		if len(r.Sources) == 0 {
			continue
		}
		for _, t := range r.Triggers {
			cands := w.Candidates(r.Sources[0], r.From, t)
			if len(cands) == 0 {
				continue
			}
			if firstInFile(cands) == r {
				li.fallback(cands, t)
			}
			i := slices.Index(cands, r)
			for _, prev := range cands[:max(i, 0)] {
				if prev.Condition == nil {
					if blockedBy[r] == nil {
						blockedBy[r] = map[string]*Rule{}
					}
					if blockedBy[r][t] == nil {
						blockedBy[r][t] = prev
					}
					continue
				}
				if r.Condition == nil || prev.Priority != r.Priority || exclusive(prev.Condition, r.Condition) {
					continue
				}
				a, b := prev, r
				if b.Index < a.Index {
					a, b = b, a
				}
				if warnedPair[pair{a, b}] {
					continue
				}
				warnedPair[pair{a, b}] = true
				li.warnAt(b.Pos, "rules %q and %q may both match (from %s, trigger %s, priority %d): the earlier in the file wins", a.ID, b.ID, r.From, t, r.Priority)
			}
		}
		if blk := blockedBy[r]; len(blk) == len(r.Triggers) && len(blk) > 0 {
			by := blk[r.Triggers[0]]
			li.warnAt(r.Pos, "rule %q can never fire: rule %q has no condition and is tried before it", r.ID, by.ID)
		}
	}
}

func firstInFile(rs []*Rule) *Rule {
	first := rs[0]
	for _, r := range rs[1:] {
		if r.Index < first.Index {
			first = r
		}
	}
	return first
}

// fallback warns when every candidate of an outcome has a condition.
func (li *linter) fallback(cands []*Rule, trigger string) {
	for _, r := range cands {
		if r.Condition == nil {
			return
		}
	}
	first := firstInFile(cands)
	li.warnAt(first.Pos, "no unconditional rule from %s on trigger %s: the instance fails when no condition holds", first.From, trigger)
}

// cycles warns about each cycle of the state graph that neither a state's
// own max_visits nor a condition reading visits or step bounds.
func (li *linter) cycles() {
	w := li.w
	succ := map[string][]string{}
	for _, r := range w.Rules {
		if r.Condition != nil && r.Condition.readsProgress {
			continue
		}
		next, ok := w.states[r.Next]
		if !ok || next.explicitMaxVisits {
			continue
		}
		for _, s := range r.Sources {
			if src := w.states[s]; src != nil && !src.explicitMaxVisits && !slices.Contains(succ[s], r.Next) {
				succ[s] = append(succ[s], r.Next)
			}
		}
	}
	for _, comp := range sccs(w.States, succ) {
		start := comp[0]
		path := shortestCycle(start, succ, comp)
		if path == nil {
			continue
		}
		li.warnAt(w.states[start].Pos, "cycle %s is bounded only by the default limits (max_visits %d, max_steps %d): set max_visits or guard a rule with visits",
			strings.Join(path, " -> "), w.Limits.MaxVisits, w.Limits.MaxSteps)
	}
}

// sccs returns the strongly connected components (Tarjan), each listed in
// file order, the components ordered by their first state.
func sccs(states []*State, succ map[string][]string) [][]string {
	order := map[string]int{}
	for i, s := range states {
		order[s.Name] = i
	}
	index, low := map[string]int{}, map[string]int{}
	onStack := map[string]bool{}
	var stack []string
	var out [][]string
	next := 0
	var visit func(v string)
	visit = func(v string) {
		index[v], low[v] = next, next
		next++
		stack = append(stack, v)
		onStack[v] = true
		for _, u := range succ[v] {
			if _, seen := index[u]; !seen {
				visit(u)
				low[v] = min(low[v], low[u])
			} else if onStack[u] {
				low[v] = min(low[v], index[u])
			}
		}
		if low[v] == index[v] {
			var comp []string
			for {
				u := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				onStack[u] = false
				comp = append(comp, u)
				if u == v {
					break
				}
			}
			slices.SortFunc(comp, func(a, b string) int { return order[a] - order[b] })
			out = append(out, comp)
		}
	}
	for _, s := range states {
		if _, seen := index[s.Name]; !seen {
			visit(s.Name)
		}
	}
	slices.SortFunc(out, func(a, b []string) int { return order[a[0]] - order[b[0]] })
	return out
}

// shortestCycle returns start -> ... -> start inside comp, or nil.
func shortestCycle(start string, succ map[string][]string, comp []string) []string {
	in := map[string]bool{}
	for _, s := range comp {
		in[s] = true
	}
	prev := map[string]string{}
	queue := []string{start}
	seen := map[string]bool{}
	for len(queue) > 0 {
		v := queue[0]
		queue = queue[1:]
		for _, u := range succ[v] {
			if !in[u] {
				continue
			}
			if u == start {
				path := []string{start}
				for x := v; x != start; x = prev[x] {
					path = append(path, x)
				}
				slices.Reverse(path[1:])
				return append(path, start)
			}
			if !seen[u] {
				seen[u] = true
				prev[u] = v
				queue = append(queue, u)
			}
		}
	}
	return nil
}
