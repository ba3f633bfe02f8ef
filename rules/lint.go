package rules

import (
	"fmt"
	"slices"
	"strings"

	"github.com/batonhq/baton/internal/graph"
)

// lint returns the lint warnings for a workflow that loaded without
// errors: unreachable states, rules that can never fire, rules that may
// both match, and cycles bound only by the default limits. Whether every
// outcome is covered, and whether a wait can hang, is proven by the check
// package (wfrun check), with witnesses, rather than guessed here.
func lint(w *Workflow, l *loader) []Diagnostic {
	li := &linter{w: w, file: w.File}
	li.out = append(li.out, l.budgetWarnings...)
	li.unreachable()
	li.groups()
	li.waits()
	li.foreachItems(l)
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

// fromKey is the `from` of the rules leaving state s: its agent, or its own
// name for a state without one agent; "" for a terminal state. Every state
// with the same key has the same outgoing rules, which is what keeps the
// graph walks below linear in the file rather than in states × rules.
func fromKey(s *State) string {
	switch {
	case s.Terminal:
		return ""
	case s.Agent != "":
		return s.Agent
	}
	return s.Name
}

// rulesByFrom returns the rules that have sources, by `from`.
func (li *linter) rulesByFrom() map[string][]*Rule {
	out := map[string][]*Rule{}
	for _, r := range li.w.Rules {
		if len(r.Sources) > 0 {
			out[r.From] = append(out[r.From], r)
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
	byFrom := li.rulesByFrom()
	expanded := map[string]bool{}
	queue := []string{w.Initial}
	if w.Limits.OnLimit != "" {
		queue = append(queue, w.Limits.OnLimit)
	}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		key := fromKey(w.states[s])
		if key == "" || expanded[key] {
			continue
		}
		expanded[key] = true
		for _, r := range byFrom[key] {
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

// waits warns about each rule on the timeout of a wait state that has
// none: it can never fire.
func (li *linter) waits() {
	w := li.w
	for _, s := range w.States {
		if !s.Waits() || s.Timeout > 0 {
			continue
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

// cycles warns about each cycle of the state graph that neither a state's
// own max_visits nor a condition reading visits or step bounds.
//
// The graph walked has a node per state and one per `from` key (named
// "@key", which no state can be): a state leads to its key's node, the
// key's node to the rules' next states. A cycle of states is a cycle of
// this graph, and its size stays linear in the file.
func (li *linter) cycles() {
	w := li.w
	succ := map[string][]string{}
	added := map[[2]string]bool{}
	for _, r := range w.Rules {
		if len(r.Sources) == 0 || (r.Condition != nil && r.Condition.readsProgress) {
			continue
		}
		next, ok := w.states[r.Next]
		if !ok || next.explicitMaxVisits {
			continue
		}
		node := groupNode(r.From)
		if !added[[2]string{node, r.Next}] {
			added[[2]string{node, r.Next}] = true
			succ[node] = append(succ[node], r.Next)
		}
	}
	for _, s := range w.States {
		if key := fromKey(s); key != "" && !s.explicitMaxVisits {
			succ[s.Name] = []string{groupNode(key)}
		}
	}
	for _, comp := range sccs(w.States, succ) {
		start := comp[0]
		if _, isState := w.states[start]; !isState {
			continue
		}
		path := shortestCycle(start, succ, comp)
		if path == nil {
			continue
		}
		path = slices.DeleteFunc(path, isGroupNode)
		li.warnAt(w.states[start].Pos, "cycle %s is bounded only by the default limits (max_visits %d, max_steps %d): set max_visits or guard a rule with visits",
			strings.Join(path, " -> "), w.Limits.MaxVisits, w.Limits.MaxSteps)
	}
}

func groupNode(from string) string { return "@" + from }

func isGroupNode(n string) bool { return strings.HasPrefix(n, "@") }

// sccs returns the strongly connected components (Tarjan) of the graph
// whose nodes are the states and the keys of succ, each listed in file
// order (group nodes last), the components ordered by their first node.
func sccs(states []*State, succ map[string][]string) [][]string {
	order := map[string]int{}
	for i, s := range states {
		order[s.Name] = i
	}
	rank := func(n string) int {
		if i, ok := order[n]; ok {
			return i
		}
		return len(states)
	}
	roots := make([]string, len(states))
	for k, s := range states {
		roots[k] = s.Name
	}
	out := graph.Components(roots, func(v string) []string { return succ[v] })
	for _, comp := range out {
		slices.SortStableFunc(comp, func(a, b string) int { return rank(a) - rank(b) })
	}
	slices.SortStableFunc(out, func(a, b []string) int { return rank(a[0]) - rank(b[0]) })
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
