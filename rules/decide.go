package rules

import (
	"fmt"
	"maps"
)

// Decision is what a workflow decides for one outcome: the rule that fires
// and the state it enters, or the limit that refuses the transition, and
// for a transition taken the hand-off's task description and the context
// values to merge. The engine applies it; replay compares it with what a
// history recorded. Both read it from Decide, so they cannot drift apart.
type Decision struct {
	// Match is the rule selection, with every condition tried.
	Match Match
	// Rule is the rule that fired; nil when none matched.
	Rule *Rule
	// Next is the state the rule enters.
	Next *State
	// Limit is the limit that refused the transition; nil when none did.
	// The task and context are then not evaluated.
	Limit *LimitHit
	// Task is the hand-off's task description.
	Task string
	// Context is the instance context after the rule's merge: a new map
	// holding Env.Context and the values the rule sets (Env.Context is not
	// changed); nil when the rule sets none.
	Context map[string]any
	// Items are the items of the foreach state the rule enters, evaluated
	// with the context after the merge; ItemsErr is why they could not be
	// (the state is entered and reports it as its outcome).
	Items    []any
	ItemsErr error
	// Err is why nothing can be applied: a *NoMatchError when no rule
	// matched, a *DecideError when the fired rule's task or context failed.
	Err error
}

// LimitHit says which limit refuses entering a state, and with what count.
type LimitHit struct {
	Limit string // max_visits, max_steps, max_tokens or max_cost
	State string // the state that would have been entered; for a state's own budget, that state
	Count int    // the count entering it would reach; for max_tokens, the tokens used
	Max   int
	// Total and Budget are, for a budget (max_tokens, max_cost), the
	// total reached and the budget; Visit marks a state's own budget,
	// which the runs of its current visit broke.
	Total, Budget float64
	Visit         bool
}

// DecideError is a fired rule's task or context expression failing at run
// time: it fails the instance.
type DecideError struct {
	Rule string
	Part string // "task" or "context"
	Key  string // the context key, for a context failure
	Err  error
}

func (e *DecideError) Error() string {
	if e.Part == "context" {
		return fmt.Sprintf("rule %s: context %q: %v", e.Rule, e.Key, e.Err)
	}
	return fmt.Sprintf("rule %s: %s: %v", e.Rule, e.Part, e.Err)
}

// Unwrap returns the expression's error.
func (e *DecideError) Unwrap() error { return e.Err }

// Decide matches env's outcome against the rules (env.State, env.Agent and
// env.Trigger say whose outcome it is), checks the limits of the state the
// chosen rule enters with env.Step and env.Visits, and, when the transition
// may be taken, evaluates the rule's task and then its context, in env.
func (w *Workflow) Decide(env *Env) Decision {
	m, err := w.Match(env.State, env.Agent, env.Trigger, env)
	d := Decision{Match: m, Rule: m.Rule}
	if err != nil {
		d.Err = err
		return d
	}
	r := m.Rule
	d.Next = w.states[r.Next]
	if d.Limit = w.BudgetOf(w.states[env.State], d.Next, env); d.Limit != nil {
		return d
	}
	if d.Limit = w.LimitOf(d.Next, env.Step, env.Visits); d.Limit != nil {
		return d
	}
	if d.Task, err = r.TaskDescription(env); err != nil {
		d.Err = &DecideError{Rule: r.ID, Part: "task", Err: err}
		return d
	}
	if len(r.Context) > 0 {
		// The new context is built once, at its size: the instance's,
		// then the rule's values, each evaluated against the context as
		// it was. A context that stays within one group of a map (eight
		// entries) is cloned, its group copied whole: inserting its
		// entries one by one, hashing each, was 3% of a step.
		var merged map[string]any
		if n := len(env.Context); n > 0 && n+len(r.Context) <= smallMap {
			merged = maps.Clone(env.Context)
		} else {
			merged = make(map[string]any, len(env.Context)+len(r.Context))
			for k, v := range env.Context {
				merged[k] = v
			}
		}
		for _, c := range r.Context {
			v, err := c.Expr.Eval(env)
			if err != nil {
				d.Err = &DecideError{Rule: r.ID, Part: "context", Key: c.Key, Err: err}
				return d
			}
			merged[c.Key] = v
		}
		d.Context = merged
	}
	if d.Next.Iterates() {
		w.decideItems(&d, env)
	}
	return d
}

// smallMap is how many entries a map holds in one group, the size up to
// which maps.Clone returns a map with room for them all.
const smallMap = 8

// LimitOf reports the limit that entering next would break after step runs
// with these visits, if any: next's max_visits (the entry counted), or
// max_steps (counting one run per agent of a parallel state; Decide counts
// the items of a foreach state once it knows them).
func (w *Workflow) LimitOf(next *State, step int, visits map[string]int) *LimitHit {
	if next == nil || next.Terminal {
		return nil
	}
	if v := visits[next.Name] + 1; v > next.MaxVisits {
		return &LimitHit{Limit: "max_visits", State: next.Name, Count: v, Max: next.MaxVisits}
	}
	runs := 1
	switch {
	case next.Parallel():
		runs = len(next.Agents) // each branch run is a step
	case next.Waits(), next.Iterates(), next.Calls():
		runs = 0 // waiting is not a step; a foreach counts its items as it is entered; a child's runs count in the child
	}
	if s := step + runs; s > w.Limits.MaxSteps {
		return &LimitHit{Limit: "max_steps", State: next.Name, Count: s, Max: w.Limits.MaxSteps}
	}
	return nil
}
