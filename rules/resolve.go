package rules

import (
	"cmp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// resolve checks every cross reference once all names are known, computes
// owners, sources, effective targets and the candidate index.
func (l *loader) resolve() {
	w := l.w
	l.checkNamespace()
	l.resolveStates()
	if l.initialNode != nil && w.states[w.Initial] == nil && !l.noStates {
		l.errorf(l.initialNode, "unknown initial state %q%s", w.Initial, didYouMean(w.Initial, l.stateNames()))
	}
	if l.onLimitNode != nil && w.states[w.Limits.OnLimit] == nil && !l.noStates {
		l.errorf(l.onLimitNode, "unknown on_limit state %q%s", w.Limits.OnLimit, didYouMean(w.Limits.OnLimit, l.stateNames()))
	}
	for _, ref := range l.pendingVisits {
		if w.states[ref.state] == nil && !l.noStates {
			l.errorAt(ref.pos, "unknown state %q in visits%s", ref.state, didYouMean(ref.state, l.stateNames()))
		}
	}
	l.resolveRules()
	l.checkOutgoing()
}

func (l *loader) stateNames() []string {
	out := make([]string, 0, len(l.w.States))
	for _, s := range l.w.States {
		out = append(out, s.Name)
	}
	return out
}

func (l *loader) agentIDs() []string {
	out := make([]string, 0, len(l.w.Agents))
	for _, a := range l.w.Agents {
		out = append(out, a.ID)
	}
	return out
}

// checkNamespace refuses a name that is both an agent and a state, at the
// later of the two declarations.
func (l *loader) checkNamespace() {
	for _, s := range l.w.States {
		a, ok := l.w.agents[s.Name]
		if !ok {
			continue
		}
		if before(a.Pos, s.Pos) {
			l.errorAt(s.Pos, "state %q has the name of agent %q (at %s): agents and states share one namespace", s.Name, a.ID, a.Pos)
		} else {
			l.errorAt(a.Pos, "agent %q has the name of state %q (at %s): agents and states share one namespace", a.ID, s.Name, s.Pos)
		}
	}
}

func before(a, b Pos) bool {
	return a.Line < b.Line || (a.Line == b.Line && a.Col < b.Col)
}

func (l *loader) resolveStates() {
	w := l.w
	for _, s := range w.States {
		if !s.explicitMaxVisits {
			s.MaxVisits = w.Limits.MaxVisits
		}
		known := true
		if n, ok := l.stateAgent[s]; ok && s.Agent != "" && w.agents[s.Agent] == nil {
			l.unknownAgent(n, s.Agent, nil)
			known = false
		}
		if n, ok := l.stateAgent[s]; ok && s.Iterates() && s.Foreach.Agent != "" && w.agents[s.Foreach.Agent] == nil {
			l.unknownAgent(n, s.Foreach.Agent, nil)
		}
		switch {
		case s.Terminal:
		case s.Parallel(), s.Waits(), s.Iterates(), s.Calls():
			s.owner = s.Name
		case s.Agent != "" && known:
			s.owner = s.Agent
		}
	}
	for _, p := range l.parallelNodes {
		for _, n := range p.nodes {
			id := deref(n).Value
			if w.agents[id] == nil && identName.match(id) {
				l.unknownAgent(n, id, nil)
			}
		}
	}
}

func (l *loader) resolveRules() {
	w := l.w
	firstID := map[string]*Rule{}
	for _, r := range w.Rules {
		rn := l.ruleNodes[r]
		if r.ID != "" {
			if prev, dup := firstID[r.ID]; dup {
				l.errorf(rn.id, "duplicate rule id %q (first at %s)", r.ID, posOf(l.ruleNodes[prev].id))
			} else {
				firstID[r.ID] = r
				w.rules[r.ID] = r
			}
		}
		parallel := l.resolveFrom(r, rn)
		if src, ok := w.states[r.From]; ok && src.Waits() && len(r.Sources) > 0 {
			if len(src.Wait.Signals) > 0 {
				l.checkSignals(r, rn, src)
			}
		} else if ok && src.Iterates() && len(r.Sources) > 0 {
			l.checkOutcomes(r, rn, "foreach", foreachOutcomes)
		} else if ok && src.Calls() && len(r.Sources) > 0 {
			l.checkChildTriggers(r, rn)
		} else {
			l.checkTriggers(r, rn, parallel)
			if !parallel {
				l.checkKindTriggers(r, rn)
			}
		}
		l.resolveNext(r, rn)
	}
	lists := map[candKey][]*Rule{}
	for _, r := range w.Rules {
		if len(r.Sources) == 0 {
			continue
		}
		for _, t := range r.Triggers {
			k := candKey{r.From, t}
			lists[k] = append(lists[k], r)
		}
	}
	for k, c := range lists {
		slices.SortStableFunc(c, func(a, b *Rule) int {
			return cmp.Or(cmp.Compare(a.Priority, b.Priority), cmp.Compare(a.Index, b.Index))
		})
		w.cands[k] = newCandidates(c)
	}
}

// resolveFrom fills the rule's sources and reports whether it leaves a
// parallel state.
func (l *loader) resolveFrom(r *Rule, rn *ruleNodes) (parallel bool) {
	w := l.w
	if rn.from == nil {
		return false
	}
	if s, ok := w.states[r.From]; ok && w.agents[r.From] == nil {
		switch {
		case s.Terminal:
			l.errorf(rn.from, "terminal state %q has outgoing rule %q", s.Name, r.ID)
		case s.Parallel():
			r.Sources = []string{s.Name}
			return true
		case s.Waits(), s.Iterates(), s.Calls():
			r.Sources = []string{s.Name}
			return false
		case s.Agent != "":
			l.errorf(rn.from, "from names state %q, which agent %q owns: use from: %s", s.Name, s.Agent, s.Agent)
		}
		return false
	}
	if _, ok := w.agents[r.From]; !ok {
		cands := l.agentIDs()
		for _, s := range w.States {
			if s.Parallel() || s.Waits() || s.Iterates() || s.Calls() {
				cands = append(cands, s.Name)
			}
		}
		l.unknownAgent(rn.from, r.From, cands)
		return false
	}
	r.Sources = l.agentSources(r.From)
	if len(r.Sources) > 0 {
		return false
	}
	for _, s := range w.States {
		if slices.Contains(s.Agents, r.From) {
			l.errorf(rn.from, "agent %q owns no state: it only works in parallel state %q, whose rules name the state in from", r.From, s.Name)
			return false
		}
		if s.Iterates() && s.Foreach.Agent == r.From {
			l.errorf(rn.from, "agent %q owns no state: it only runs the items of foreach state %q, whose rules name the state in from", r.From, s.Name)
			return false
		}
	}
	l.errorf(rn.from, "agent %q owns no state", r.From)
	return false
}

// agentSources returns the non-terminal states agent owns, in file order.
// Every rule from the same agent shares one slice (capped, so that an append
// copies): a copy per rule would make the workflow quadratic in its size.
func (l *loader) agentSources(agent string) []string {
	if src, ok := l.sources[agent]; ok {
		return src
	}
	var src []string
	for _, s := range l.w.States {
		if !s.Terminal && s.Agent == agent {
			src = append(src, s.Name)
		}
	}
	src = src[:len(src):len(src)]
	if l.sources == nil {
		l.sources = map[string][]string{}
	}
	l.sources[agent] = src
	return src
}

// checkTriggers refuses outcomes the rule's source can never report.
func (l *loader) checkTriggers(r *Rule, rn *ruleNodes, parallel bool) {
	if len(r.Sources) == 0 {
		return
	}
	for i, t := range r.Triggers {
		switch {
		case parallel && !slices.Contains(reservedParallel, t) && !slices.Contains(reservedAny, t):
			l.errorf(rn.triggers[i], "parallel state %q only reports %s, not %q", r.From,
				strings.Join(append(slices.Clone(reservedParallel), reservedAny...), ", "), t)
		case !parallel && slices.Contains(reservedParallel, t):
			l.errorf(rn.triggers[i], "trigger %q is only reported by parallel and foreach states", t)
		}
	}
}

// checkSignals refuses outcomes a wait state never reports: its triggers
// are its signals and timeout.
func (l *loader) checkSignals(r *Rule, rn *ruleNodes, s *State) {
	allowed := append(slices.Clone(s.Wait.Signals), "timeout")
	for i, t := range r.Triggers {
		if !slices.Contains(allowed, t) {
			l.errorf(rn.triggers[i], "wait state %q only reports its signals (%s) and timeout, not %q%s",
				s.Name, strings.Join(s.Wait.Signals, ", "), t, didYouMean(t, allowed))
		}
	}
}

// checkOutcomes refuses triggers a state of kind what never reports.
func (l *loader) checkOutcomes(r *Rule, rn *ruleNodes, what string, allowed []string) {
	for i, t := range r.Triggers {
		if !slices.Contains(allowed, t) {
			l.errorf(rn.triggers[i], "%s state %q only reports %s, not %q%s",
				what, r.From, strings.Join(allowed, ", "), t, didYouMean(t, allowed))
		}
	}
}

// resolveNext checks `next` and `to`, and computes the effective target.
func (l *loader) resolveNext(r *Rule, rn *ruleNodes) {
	w := l.w
	if rn.to != nil && w.agents[r.To] == nil {
		l.unknownAgent(rn.to, r.To, nil)
		r.To = ""
		rn.to = nil
	}
	if rn.next == nil {
		return
	}
	next, ok := w.states[r.Next]
	if !ok {
		if !l.noStates {
			l.errorf(rn.next, "unknown state %q%s", r.Next, didYouMean(r.Next, l.stateNames()))
		}
		return
	}
	switch {
	case next.Terminal:
		// `to`, if any, receives a final notice.
	case next.Parallel():
		if rn.to != nil {
			l.errorf(rn.to, "a rule into parallel state %q must omit to: entering it hands off to each of its agents", next.Name)
		}
		r.To = ""
	case next.Waits():
		if rn.to != nil {
			l.errorf(rn.to, "a rule into wait state %q must omit to: a wait state runs no agent", next.Name)
		}
		r.To = ""
	case next.Calls():
		if rn.to != nil {
			l.errorf(rn.to, "a rule into workflow state %q must omit to: entering it starts its child workflow", next.Name)
		}
		r.To = ""
	case next.Iterates():
		if rn.to != nil {
			l.errorf(rn.to, "a rule into foreach state %q must omit to: entering it runs its agent over each item", next.Name)
		}
		r.To = ""
	default:
		if rn.to != nil && r.To != next.Agent {
			l.errorf(rn.to, "to %q does not own next state %q (agent %q does); only a rule into a terminal state may name another agent", r.To, next.Name, next.Agent)
		}
		r.To = next.Agent
	}
}

// unknownAgent reports a reference to an undeclared agent, suggesting the
// nearest of cands (the agent ids when nil).
func (l *loader) unknownAgent(n *yaml.Node, id string, cands []string) {
	if l.noAgents {
		return
	}
	if cands == nil {
		cands = l.agentIDs()
	}
	l.errorf(n, "unknown agent %q%s", id, didYouMean(id, cands))
}

// checkOutgoing refuses a non-terminal state that no rule leaves; a rule
// whose from could not be read might have been that rule, so then it stays
// silent.
func (l *loader) checkOutgoing() {
	w := l.w
	if l.brokenFrom {
		return
	}
	hasRule := map[string]bool{}
	for _, r := range w.Rules {
		hasRule[r.From] = true
	}
	for _, s := range w.States {
		owner := s.owner
		if owner != "" && !hasRule[owner] {
			l.errorAt(s.Pos, "non-terminal state %q has no outgoing rule (no rule has from: %s)", s.Name, owner)
		}
	}
}
