package rules

import "fmt"

// Evaluation is one condition tried by Match. A run-time failure is in Err
// and counts as false.
type Evaluation struct {
	Rule   *Rule
	Result bool
	Err    error
}

// Match is the outcome of a successful rule selection.
type Match struct {
	// Rule is the rule that fired.
	Rule *Rule
	// Tried lists every conditional rule evaluated, in order, including the
	// one that fired. It may be shared between matches and must not be
	// modified.
	Tried []Evaluation
}

// Match selects the rule that fires when agent (the `from` key: the
// state's agent, or the state's own name for a parallel state) reports
// trigger in state: the candidates are tried in priority, then file order,
// and the first whose condition holds fires. Without one, the error is a
// *NoMatchError listing each condition tried; an undeclared state is
// ErrUnknownState.
//
// Match reads env as given: the caller fills its State, Agent and Trigger.
// It does not allocate when a rule fires and no condition failed at run
// time.
func (w *Workflow) Match(state, agent, trigger string, env *Env) (Match, error) {
	s, ok := w.states[state]
	if !ok {
		return Match{}, fmt.Errorf("%w %q", ErrUnknownState, state)
	}
	var c *candidates
	if s.owner == agent && agent != "" {
		c = w.cands[candKey{agent, trigger}]
	}
	if c == nil {
		return Match{}, w.noMatch(state, agent, trigger, env, nil)
	}
	var tried []Evaluation // built only once a condition failed at run time
	for i, r := range c.rules {
		if r.Condition == nil {
			return Match{Rule: r, Tried: c.triedAt(i, tried)}, nil
		}
		ok, err := r.Condition.evalBool(env)
		if err != nil && tried == nil {
			tried = c.falsePrefix(i)
		}
		if tried != nil {
			tried = append(tried, Evaluation{Rule: r, Result: ok, Err: err})
		}
		if ok {
			return Match{Rule: r, Tried: c.triedAt(i, tried)}, nil
		}
	}
	if tried == nil {
		tried = c.falsePrefix(len(c.rules))
	}
	return Match{}, w.noMatch(state, agent, trigger, env, tried)
}

// triedAt returns the Tried list when rules[i] fires: the one built while
// matching, else the shared one precomputed at load, else (for a list too
// long to precompute) a new one.
func (c *candidates) triedAt(i int, built []Evaluation) []Evaluation {
	if built != nil {
		return built
	}
	if i < len(c.fired) {
		return c.fired[i]
	}
	out := c.falsePrefix(i)
	if r := c.rules[i]; r.Condition != nil {
		out = append(out, Evaluation{Rule: r, Result: true})
	}
	return out
}

// falsePrefix builds the evaluations of the conditional rules before
// rules[i], all false, with room for the rest of the list.
func (c *candidates) falsePrefix(i int) []Evaluation {
	out := make([]Evaluation, 0, len(c.rules))
	for _, r := range c.rules[:i] {
		if r.Condition != nil {
			out = append(out, Evaluation{Rule: r})
		}
	}
	return out
}

func (w *Workflow) noMatch(state, agent, trigger string, env *Env, tried []Evaluation) error {
	e := &NoMatchError{State: state, Agent: agent, Trigger: trigger, Tried: tried}
	if env != nil && env.Error.Message != "" && (trigger == "error" || trigger == "timeout" || trigger == "rejected") {
		e.AgentError = env.Error.Message
	}
	return e
}
