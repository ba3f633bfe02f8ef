package scenario

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/batonhq/baton/internal/suggest"
	"github.com/batonhq/baton/rules"
)

// Check compares the scenario with its workflow: every scripted agent,
// expected state, outcome and hand-off must be the workflow's. A trigger, a
// dynamic hand-off's target or a selected agent that is a near miss of a
// name the workflow has is a typo; one far from every name is taken as
// meant (a scenario may script an outcome no rule answers, to test that the
// instance fails). Each problem is an *Error at its position with a "did you
// mean"; all are joined, sorted by position.
func Check(s *Scenario, w *rules.Workflow) error {
	c := &checker{s: s, w: w}
	family := workflows(w)
	agents := make([]string, 0, len(w.Agents))
	for _, fw := range family {
		for _, a := range fw.Agents {
			if !slices.Contains(agents, a.ID) {
				agents = append(agents, a.ID)
			}
		}
	}
	states, terminals := []string{}, []string{}
	for _, st := range w.States {
		states = append(states, st.Name)
		if st.Terminal {
			terminals = append(terminals, st.Name)
		}
	}
	triggers := map[string][]string{} // by the rules' from
	for _, fw := range family {
		for _, r := range fw.Rules {
			for _, t := range r.Triggers {
				if !slices.Contains(triggers[r.From], t) {
					triggers[r.From] = append(triggers[r.From], t)
				}
			}
		}
	}
	for name, replies := range s.Agents {
		if !slices.Contains(agents, name) {
			c.unknown(s.agentAt[name], "agent", name, agents, true)
			continue
		}
		for _, r := range replies {
			if slices.Contains(reserved, r.Trigger) {
				c.add(r.triggerAt, fmt.Sprintf("trigger %q is reported by the engine, never by an agent: script a failure with {error: message}, a rejection with {reject: reason}, a timeout with a delay past the state's timeout", r.Trigger))
				continue
			}
			if r.Trigger != "" && triggers[name] != nil && !slices.Contains(triggers[name], r.Trigger) {
				c.typo(r.triggerAt, fmt.Sprintf("trigger %q of agent %s matches no rule", r.Trigger, name), r.Trigger, triggers[name])
			}
			to := r.Select
			if r.Handoff != nil {
				to = r.Handoff.To
			}
			if _, ok := w.Agent(to); to != "" && !ok {
				c.unknown(r.toAt, "agent", to, agents, false)
			}
		}
	}
	c.checkInput()
	e := s.Expect
	if e.Outcome != "" && !slices.Contains(terminals, e.Outcome) {
		what := "no state"
		if slices.Contains(states, e.Outcome) {
			what = "not a terminal state"
		}
		c.add(e.outcomeAt, fmt.Sprintf("outcome %q is %s of workflow %s%s", e.Outcome, what, w.Name, didYouMean(e.Outcome, terminals)))
	}
	for i, st := range e.States {
		if !slices.Contains(states, st) {
			c.unknown(posAt(e.statesAt, i), "state", st, states, true)
		}
	}
	for i, h := range e.Handoffs {
		from, to, ok := strings.Cut(h, "->")
		if !ok {
			c.add(posAt(e.handoffAt, i), fmt.Sprintf("hand-off %q must read from->to, two agents", h))
			continue
		}
		// A parallel state hands off to its branches under its own name.
		for _, a := range []string{strings.TrimSpace(from), strings.TrimSpace(to)} {
			if _, ok := w.Agent(a); !ok && !slices.Contains(states, a) {
				c.unknown(posAt(e.handoffAt, i), "agent", a, agents, true)
			}
		}
	}
	if len(c.errs) == 0 {
		return nil
	}
	// Agents come from a map: order the problems of one position too.
	slices.SortStableFunc(c.errs, func(a, b *Error) int { return cmp.Compare(a.Msg, b.Msg) })
	return joinSorted(c.errs)
}

// workflows returns w and the workflows its workflow states call,
// transitively, w first: a scenario scripts the agents of all of them.
func workflows(w *rules.Workflow) []*rules.Workflow {
	out := []*rules.Workflow{w}
	for k := 0; k < len(out); k++ {
		for _, st := range out[k].States {
			if st.Calls() && st.Child.Target != nil && !slices.Contains(out, st.Child.Target) {
				out = append(out, st.Child.Target)
			}
		}
	}
	return out
}

// posAt returns ps[i], or no position for a Scenario built without Parse.
func posAt(ps []Pos, i int) Pos {
	if i < len(ps) {
		return ps[i]
	}
	return Pos{}
}

// reserved are the outcomes only the engine produces.
var reserved = []string{"error", "timeout", "rejected", "joined", "partial", "conflict"}

type checker struct {
	s    *Scenario
	w    *rules.Workflow
	errs []*Error
}

func (c *checker) add(at Pos, msg string) {
	c.errs = append(c.errs, &Error{File: c.s.File, Line: max(at.Line, 1), Col: max(at.Col, 1), Msg: msg})
}

// unknown reports a name the workflow lacks; when always is false, only a
// near miss is reported.
func (c *checker) unknown(at Pos, what, name string, known []string, always bool) {
	hint := didYouMean(name, known)
	if hint == "" && !always {
		return
	}
	c.add(at, fmt.Sprintf("%s %q is not in workflow %s%s", what, name, c.w.Name, hint))
}

// typo reports msg only when name is a near miss of one of known.
func (c *checker) typo(at Pos, msg, name string, known []string) {
	if hint := didYouMean(name, known); hint != "" {
		c.add(at, msg+hint)
	}
}

func didYouMean(name string, known []string) string {
	if s := suggest.Nearest(name, known); s != "" {
		return fmt.Sprintf(" (did you mean %q?)", s)
	}
	return ""
}
