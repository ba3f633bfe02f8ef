package check

import (
	"fmt"
	"slices"

	"github.com/batonhq/baton/rules"
)

// fanOut is how a script drives a parallel or foreach state to one of its
// outcomes: the replies of its runs, and the result and error the engine
// then matches the rules with.
type fanOut struct {
	replies map[string][]reply
	result  map[string]any
	err     rules.ErrorInfo
	runs    int
}

// items is what a foreach state's items expression gave as it was entered.
type items struct {
	list []any
	err  error
}

// firstTrigger is a trigger agent may report: the first its rules name, or
// any when no rule reads it; "" when its rules name only the engine's
// outcomes.
func (c *checker) firstTrigger(agent string) string {
	if ts := c.triggers[agent]; len(ts) > 0 {
		return ts[0]
	}
	if slices.ContainsFunc(c.w.Rules, func(r *rules.Rule) bool { return r.From == agent }) {
		return ""
	}
	return "done"
}

// fanOut scripts outcome trigger of a parallel or foreach state: every
// branch or item succeeds (joined); the first item fails and the rest
// succeed (partial, within a tolerated count); the items are no list
// (error, kind invalid_items). "" reasons why it cannot.
func (sc *script) fanOut(s *rules.State, trigger string) (fanOut, string) {
	c := sc.c
	out := fanOut{replies: map[string][]reply{}}
	no := "its path needs " + trigger + " of state " + s.Name + ", which the written scenarios do not drive"
	if s.Parallel() {
		if trigger != "joined" && (trigger != "conflict" || s.Merge == "") {
			return out, no
		}
		results := map[string]any{}
		for i, a := range s.Agents {
			t := c.firstTrigger(a)
			if t == "" {
				return out, no
			}
			// Every branch answers the same option, so that a merge
			// resolves it; for a conflict, each another one.
			res := map[string]any{}
			if ag, ok := c.w.Agent(a); ok {
				fill(res, ag.Result)
			}
			switch {
			case trigger == "conflict":
				res["option"] = fmt.Sprintf("option%d", i)
			case s.Merge != "":
				res["option"] = "agreed"
			}
			out.replies[a] = append(out.replies[a], reply{Trigger: t, Result: nonEmpty(res)})
			results[a] = res
		}
		out.result = map[string]any{"results": results}
		return out, ""
	}
	it := sc.items[s.Name]
	agent := s.Foreach.Agent
	switch {
	case trigger == "error" && it.err != nil:
		out.result = map[string]any{"results": []any{}, "errors": []any{}}
		out.err = rules.ErrorInfo{Message: it.err.Error(), Kind: "invalid_items"}
		return out, ""
	case it.err != nil || trigger == "error":
		return out, no
	}
	t := c.firstTrigger(agent)
	if t == "" {
		return out, no
	}
	n := len(it.list)
	results, errs := make([]any, 0, n), []any{}
	for i := range n {
		if trigger == "partial" && i == 0 {
			no := false
			out.replies[agent] = append(out.replies[agent], reply{Error: "failed", Retryable: &no})
			results = append(results, nil)
			errs = append(errs, map[string]any{"index": 0, "message": "failed", "kind": "error"})
			continue
		}
		out.replies[agent] = append(out.replies[agent], reply{Trigger: t})
		results = append(results, map[string]any{})
	}
	if trigger == "partial" && (n == 0 || s.Foreach.TolerateIsPercent || s.Foreach.Tolerate < 1) {
		return out, no
	}
	out.result = map[string]any{"results": results, "errors": errs}
	out.runs = n
	return out, ""
}

// listField is the result field a rule entering foreach state next must
// carry as a list for the state to have items: F for `items: result.F`,
// or for `items: context.K` when the rule merges `K: result.F`.
func listField(r *rules.Rule, next *rules.State) string {
	p := exprPath(next.Foreach.Items.Source)
	if len(p) != 2 {
		return ""
	}
	switch p[0] {
	case "result":
		return p[1]
	case "context":
		for _, c := range r.Context {
			if q := exprPath(c.Expr.Source); c.Key == p[1] && len(q) == 2 && q[0] == "result" {
				return q[1]
			}
		}
	}
	return ""
}

// childRun scripts the child of workflow state s to its terminal state
// trigger, along the child's shortest path there: the child's agents are
// scripted in the same file. It returns the child's final context, which
// is the outcome's result.
func (sc *script) childRun(s *rules.State, trigger string) (map[string]any, string) {
	no := "its path needs " + trigger + " of state " + s.Name + ", which the written scenarios do not drive"
	child := s.Child.Target
	in, ok := sc.inputs[s.Name]
	if child == nil || !ok {
		return nil, no
	}
	if st, ok := child.State(trigger); !ok || !st.Terminal {
		return nil, no
	}
	cc := newChecker(child)
	cc.walk()
	if !cc.reached[trigger] {
		return nil, no
	}
	sub := &script{c: cc, items: map[string]items{}, inputs: map[string]map[string]any{}, file: sc.file}
	sub.env = rules.Env{Input: in, Context: map[string]any{}, Visits: map[string]int{child.Initial: 1}}
	if init, _ := child.State(child.Initial); init.Iterates() || init.Calls() {
		return nil, no
	} else if runsPerVisit(init) > 0 {
		sub.env.Step = 1
	}
	steps := cc.steps(trigger)
	for i, st := range steps {
		if st.Rule == "" {
			return nil, no
		}
		then := trigger
		if i+1 < len(steps) {
			then = steps[i+1].Trigger
		}
		if why := sub.advance(st, then); why != "" {
			return nil, why
		}
	}
	sc.file.Signals = sub.file.Signals
	return sub.env.Context, ""
}
