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
// It does not allocate when the first candidate fires.
func (w *Workflow) Match(state, agent, trigger string, env *Env) (Match, error) {
	s, ok := w.states[state]
	if !ok {
		return Match{}, fmt.Errorf("%w %q", ErrUnknownState, state)
	}
	var cands []*Rule
	if s.owner == agent && agent != "" {
		cands = w.cands[candKey{agent, trigger}]
	}
	var tried []Evaluation
	for _, r := range cands {
		if r.Condition == nil {
			return Match{Rule: r, Tried: tried}, nil
		}
		ok, err := r.Condition.evalBool(env)
		if ok && tried == nil {
			return Match{Rule: r, Tried: r.alone}, nil
		}
		if tried == nil {
			tried = make([]Evaluation, 0, len(cands))
		}
		tried = append(tried, Evaluation{Rule: r, Result: ok, Err: err})
		if ok {
			return Match{Rule: r, Tried: tried}, nil
		}
	}
	e := &NoMatchError{State: state, Agent: agent, Trigger: trigger, Tried: tried}
	if env != nil && (env.Error.Message != "") && (trigger == "error" || trigger == "timeout" || trigger == "rejected") {
		e.AgentError = env.Error.Message
	}
	return Match{}, e
}
