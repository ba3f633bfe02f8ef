package check

import (
	"fmt"
	"slices"
	"strings"

	"github.com/batonhq/baton/rules"
)

// edge is one transition the rules allow: in from, the outcome trigger
// fires rule (nil for a limit hit entering the on_limit state).
type edge struct {
	from, trigger string
	rule          *rules.Rule
	to            string
}

// checker analyses one workflow.
type checker struct {
	w        *rules.Workflow
	triggers map[string][]string
	parsed   map[*rules.Expr]parsed

	handoffIn map[string]bool
	outs      map[string][]outcome // by state
	succ      map[string][]edge    // by state
	prev      map[string]edge      // the edge a shortest path enters a state by
	reached   map[string]bool
}

func newChecker(w *rules.Workflow) *checker {
	return &checker{w: w, triggers: agentTriggers(w), parsed: map[*rules.Expr]parsed{}}
}

func (c *checker) parse(e *rules.Expr) parsed {
	p, ok := c.parsed[e]
	if !ok {
		p = parseCondition(e.Source)
		c.parsed[e] = p
	}
	return p
}

// rulesFor returns the rules that may fire for an outcome of s: the
// candidates up to the first unconditional one, after which none is tried.
func (c *checker) rulesFor(s *rules.State, trigger string) []*rules.Rule {
	cands := c.w.Candidates(s.Name, c.w.Owner(s.Name), trigger)
	for i, r := range cands {
		if r.Condition == nil {
			return cands[:i+1]
		}
	}
	return cands
}

func (c *checker) run() *Report {
	w := c.w
	c.walk()
	r := &Report{Workflow: w.Name, File: w.File, States: len(w.States), Findings: []Finding{},
		Reachable: []string{}, Unreachable: []string{}, Produces: []StateOutcomes{}, Terminals: []Terminal{}}
	for _, s := range w.States {
		if c.reached[s.Name] {
			r.Reachable = append(r.Reachable, s.Name)
		} else {
			r.Unreachable = append(r.Unreachable, s.Name)
		}
	}
	for _, s := range w.States {
		if !c.reached[s.Name] {
			continue
		}
		if s.Terminal {
			r.Terminals = append(r.Terminals, Terminal{State: s.Name, Reachable: true, Path: c.path(s.Name)})
			continue
		}
		so := StateOutcomes{State: s.Name, Outcomes: []OutcomeSummary{}}
		for _, o := range c.outs[s.Name] {
			cov, f := c.cover(s, o)
			so.Outcomes = append(so.Outcomes, OutcomeSummary{Trigger: o.trigger, Coverage: cov})
			if f != nil {
				r.Findings = append(r.Findings, *f)
			}
		}
		r.Produces = append(r.Produces, so)
	}
	for _, s := range w.States {
		if s.Terminal && !c.reached[s.Name] {
			r.Terminals = append(r.Terminals, Terminal{State: s.Name})
			r.Findings = append(r.Findings, c.finding(KindUnreachedOutcome, SeverityWarning, s, s.Pos,
				fmt.Sprintf("terminal state %s is never reached: no path from %s leads to it", s.Name, w.Initial)))
		}
	}
	r.Findings = append(r.Findings, c.traps()...)
	r.Findings = append(r.Findings, c.hangs()...)
	r.WorstCase = c.worstCase()
	slices.SortStableFunc(r.Findings, func(a, b Finding) int {
		if a.Line != b.Line {
			return a.Line - b.Line
		}
		return a.Col - b.Col
	})
	r.Summary = summary(r)
	return r
}

// walk finds the reachable states and a shortest path to each, breadth
// first from the initial state. A limit hit is an edge from every state
// into on_limit, tried after the rules so that paths prefer rules. Whether
// a state can be rejected depends on a hand-off entering it from a
// reachable state, so the walk repeats until that settles.
func (c *checker) walk() {
	w := c.w
	c.handoffIn = map[string]bool{}
	for range 4 {
		c.outs = map[string][]outcome{}
		c.succ = map[string][]edge{}
		c.prev = map[string]edge{}
		c.reached = map[string]bool{w.Initial: true}
		queue := []string{w.Initial}
		for len(queue) > 0 {
			name := queue[0]
			queue = queue[1:]
			s, _ := w.State(name)
			c.outs[name] = c.outcomes(s, c.handoffIn[name])
			for _, o := range c.outs[name] {
				for _, r := range c.rulesFor(s, o.trigger) {
					c.succ[name] = append(c.succ[name], edge{from: name, trigger: o.trigger, rule: r, to: r.Next})
				}
			}
			if w.Limits.OnLimit != "" && !s.Terminal && name != w.Limits.OnLimit {
				c.succ[name] = append(c.succ[name], edge{from: name, trigger: "limit", to: w.Limits.OnLimit})
			}
			for _, e := range c.succ[name] {
				if !c.reached[e.to] {
					c.reached[e.to] = true
					c.prev[e.to] = e
					queue = append(queue, e.to)
				}
			}
		}
		// A rule out of a wait state dispatches the next run itself, as a
		// limit hit does: neither is a hand-off the target can reject.
		in := map[string]bool{}
		for from, es := range c.succ {
			src, _ := w.State(from)
			for _, e := range es {
				if e.rule != nil && e.rule.To != "" && e.to != from && !e.rule.FinalNotice(w) && !src.Waits() {
					in[e.to] = true
				}
			}
		}
		if mapsEqual(in, c.handoffIn) {
			return
		}
		c.handoffIn = in
	}
}

func mapsEqual(a, b map[string]bool) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if !b[k] {
			return false
		}
	}
	return true
}

// steps returns the transitions of a shortest path to state.
func (c *checker) steps(state string) []Step {
	out := []Step{}
	for cur := state; cur != c.w.Initial; {
		e, ok := c.prev[cur]
		if !ok {
			return nil
		}
		st := Step{State: e.from, Trigger: e.trigger, Next: e.to}
		if e.rule != nil {
			st.Rule = e.rule.ID
		}
		out = append(out, st)
		cur = e.from
	}
	slices.Reverse(out)
	return out
}

// path returns the states of a shortest path to state, initial first.
func (c *checker) path(state string) []string {
	out := []string{c.w.Initial}
	for _, st := range c.steps(state) {
		out = append(out, st.Next)
	}
	return out
}

func (c *checker) finding(k Kind, sev Severity, s *rules.State, at rules.Pos, msg string) Finding {
	f := Finding{Kind: k, Severity: sev, File: c.w.File, Line: at.Line, Col: at.Col, Workflow: c.w.Name,
		State: s.Name, Message: msg, Path: []string{}, Steps: []Step{}}
	if c.reached[s.Name] {
		f.Path, f.Steps = c.path(s.Name), c.steps(s.Name)
	}
	return f
}

// cover decides whether some rule fires for every value of outcome o of s,
// and returns a finding with a witness when none may.
func (c *checker) cover(s *rules.State, o outcome) (Coverage, *Finding) {
	sev := SeverityError
	if o.engine {
		sev = SeverityWarning
	}
	cands := c.rulesFor(s, o.trigger)
	if len(cands) == 0 {
		f := c.finding(KindUncovered, sev, s, s.Pos, fmt.Sprintf("%s: %s matches no rule", s.Name, describeOutcome(s, o.trigger)))
		f.Trigger = o.trigger
		f.Witness = &Witness{Trigger: o.trigger, Values: []Value{}, Result: map[string]any{}, Input: map[string]any{}, Context: map[string]any{}}
		return Uncovered, &f
	}
	if cands[len(cands)-1].Condition == nil {
		return Covered, nil
	}
	p := c.problem(s, o, cands, -1)
	v, ans := solve(p, c.parse)
	switch v {
	case proved:
		return Covered, nil
	case undecided:
		return Undecided, nil
	}
	first := cands[0]
	for _, r := range cands {
		if r.Index < first.Index {
			first = r
		}
	}
	wit := witness(o.trigger, ans)
	f := c.finding(KindUncovered, sev, s, first.Pos, fmt.Sprintf("%s: %s%s matches no rule", s.Name, describeOutcome(s, o.trigger), withValues(wit.Values)))
	f.Trigger = o.trigger
	f.Witness = wit
	return Uncovered, &f
}

// problem sets up the search for values of outcome o of s under which the
// rules cands select want (-1: none).
func (c *checker) problem(s *rules.State, o outcome, cands []*rules.Rule, want int) *problem {
	w := c.w
	p := &problem{
		w: w, state: s.Name, trigger: o.trigger, cands: cands, want: want,
		base:  rules.Env{State: s.Name, Agent: w.Owner(s.Name), Trigger: o.trigger, Step: 1, Visits: map[string]int{s.Name: 1}},
		free:  map[string]bool{"result": true, "input": true, "context": true, "step": true, "visits": true},
		input: w.Input, result: o.result, kinds: o.kinds,
		steps: [2]int{1, w.Limits.MaxSteps}, visits: [2]int{0, w.Limits.MaxVisits},
	}
	if o.kinds == nil || o.kinds[0] != "" {
		p.free["error"] = true
		p.base.Error = rules.ErrorInfo{Kind: "error", Message: "failed"}
		if len(o.kinds) > 0 {
			p.base.Error.Kind = o.kinds[0]
		}
	}
	if !s.Terminal && s.Agent != "" && s.Foreach == nil {
		p.free["attempt"] = true
		p.base.Attempt = 1
		p.attempts = [2]int{1, 1 + s.Retry.Max}
		if o.trigger == "rejected" {
			p.attempts = [2]int{1, 1}
		}
	}
	return p
}

func witness(trigger string, a *answer) *Witness {
	wit := &Witness{Trigger: trigger, Values: []Value{}, Result: a.env.Result, Input: a.env.Input, Context: a.env.Context,
		Error:   ErrorValue{Message: a.env.Error.Message, Retryable: a.env.Error.Retryable, Kind: a.env.Error.Kind},
		Attempt: a.env.Attempt, Step: a.env.Step, Visits: a.env.Visits}
	for _, b := range a.values {
		v := Value{Field: b.key, Missing: b.val.missing}
		if !b.val.missing {
			v.Value = b.val.v
		}
		wit.Values = append(wit.Values, v)
	}
	slices.SortFunc(wit.Values, func(a, b Value) int { return strings.Compare(a.Field, b.Field) })
	return wit
}

// describeOutcome names an outcome the way a reader of the state thinks of it.
func describeOutcome(s *rules.State, trigger string) string {
	switch {
	case s.Waits() && trigger != "timeout":
		return "signal " + trigger
	case s.Calls() && trigger != "error" && trigger != "timeout":
		return "child outcome " + trigger
	case slices.Contains(reserved, trigger):
		return "outcome " + trigger
	}
	return "trigger " + trigger
}

// withValues renders a witness's values: " with result.score == 7 and
// result.note missing".
func withValues(vs []Value) string {
	if len(vs) == 0 {
		return ""
	}
	parts := make([]string, 0, len(vs))
	for _, v := range vs {
		if v.Missing {
			parts = append(parts, v.Field+" missing")
			continue
		}
		parts = append(parts, v.Field+" == "+literalText(v.Value))
	}
	return " with " + strings.Join(parts, " and ")
}

// traps are the reachable states from which no terminal state can be
// reached.
func (c *checker) traps() []Finding {
	w := c.w
	pred := map[string][]string{}
	for from, es := range c.succ {
		for _, e := range es {
			pred[e.to] = append(pred[e.to], from)
		}
	}
	escapes := map[string]bool{}
	var queue []string
	for _, s := range w.States {
		if s.Terminal && c.reached[s.Name] {
			escapes[s.Name] = true
			queue = append(queue, s.Name)
		}
	}
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		for _, p := range pred[n] {
			if !escapes[p] {
				escapes[p] = true
				queue = append(queue, p)
			}
		}
	}
	var out []Finding
	for _, s := range w.States {
		if c.reached[s.Name] && !escapes[s.Name] {
			out = append(out, c.finding(KindTrap, SeverityError, s, s.Pos,
				fmt.Sprintf("state %s is a trap: no terminal state can be reached from it", s.Name)))
		}
	}
	return out
}

// hangs are the reachable states that may wait for ever: a wait with no
// timeout, and a state running agents with no timeout and no heartbeat.
func (c *checker) hangs() []Finding {
	var out []Finding
	for _, s := range c.w.States {
		if !c.reached[s.Name] {
			continue
		}
		var msg string
		switch {
		case s.Terminal, s.Calls():
		case s.Waits():
			if s.Timeout == 0 {
				msg = fmt.Sprintf("wait state %s has no timeout: an instance waits for ever if no signal comes", s.Name)
			}
		case s.Parallel():
			if s.Timeout == 0 && s.Heartbeat == 0 && (s.Join == nil || s.Join.Timeout == 0) {
				msg = fmt.Sprintf("parallel state %s has no join timeout, no timeout and no heartbeat: a branch that never replies hangs the instance", s.Name)
			}
		default:
			if s.Timeout == 0 && s.Heartbeat == 0 {
				agent := s.Agent
				if s.Foreach != nil {
					agent = s.Foreach.Agent
				}
				msg = fmt.Sprintf("state %s runs agent %s with no timeout and no heartbeat: a run that never reports hangs the instance", s.Name, agent)
			}
		}
		if msg != "" {
			out = append(out, c.finding(KindHang, SeverityWarning, s, s.Pos, msg))
		}
	}
	return out
}
