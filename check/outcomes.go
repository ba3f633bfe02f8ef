package check

import (
	"slices"

	"github.com/batonhq/baton/rules"
)

// outcome is one outcome a state can produce, and what its environment
// can hold.
type outcome struct {
	trigger string
	// engine is set for the engine's own outcomes (error, timeout,
	// rejected, joined, partial, conflict): uncovered, they are warnings.
	engine bool
	// kinds are the error kinds it may carry; nil means any kind an agent
	// may name; [""] means no failure.
	kinds []string
	// result types the result for an agent's own triggers.
	result *rules.Schema
}

var noFailure = []string{""}

// outcomes lists what state s can produce, in a fixed order: the triggers
// the rules name (or the signals, or the child's terminal states), then the
// engine's outcomes. handoffIn says whether a hand-off may enter s.
func (c *checker) outcomes(s *rules.State, handoffIn bool) []outcome {
	w := c.w
	var out []outcome
	engine := func(t string, kinds ...string) {
		out = append(out, outcome{trigger: t, engine: true, kinds: kinds})
	}
	switch {
	case s.Terminal:
		return nil
	case s.Waits():
		for _, sig := range s.Wait.Signals {
			out = append(out, outcome{trigger: sig, kinds: noFailure})
		}
		if s.Timeout > 0 {
			engine("timeout", "timeout")
		}
	case s.Calls():
		if t := s.Child.Target; t != nil {
			for _, cs := range t.States {
				if cs.Terminal {
					out = append(out, outcome{trigger: cs.Name, kinds: noFailure})
				}
			}
		}
		engine("error", "child_failed")
		if s.Timeout > 0 {
			engine("timeout", "timeout")
		}
	case s.Iterates():
		engine("joined", "")
		if s.Foreach.Tolerate > 0 {
			engine("partial", "")
		}
		engine("error", "foreach_failed", "invalid_items")
	case s.Parallel():
		engine("joined", "")
		if s.Join != nil && s.Join.OnPartial == rules.OnPartialProceed {
			engine("partial", "")
		}
		if s.Merge != "" {
			engine("conflict", "")
		}
	default:
		var schema *rules.Schema
		rejects := true
		if a, ok := w.Agent(s.Agent); ok {
			schema = a.Result
			// An MCP tool and a model call answer or fail: neither refuses
			// a hand-off.
			rejects = a.Kind() != rules.KindMCP && a.Kind() != rules.KindLLM
		}
		for _, t := range c.triggers[s.Agent] {
			out = append(out, outcome{trigger: t, kinds: noFailure, result: schema})
		}
		out = append(out, outcome{trigger: "error", engine: true})
		if s.Timeout > 0 || s.Heartbeat > 0 {
			kinds := []string{"timeout"}
			if s.Heartbeat > 0 {
				kinds = append(kinds, "heartbeat")
			}
			engine("timeout", kinds...)
		}
		if handoffIn && rejects {
			engine("rejected", "rejected")
		}
	}
	for i := range out {
		if out[i].kinds == nil {
			continue
		}
		out[i].kinds = slices.Clone(out[i].kinds)
	}
	return out
}

// reserved are the outcomes only the engine produces.
var reserved = []string{"error", "timeout", "rejected", "joined", "partial", "conflict"}

// agentTriggers lists, by `from`, the triggers its rules name that an
// agent reports itself, in file order.
func agentTriggers(w *rules.Workflow) map[string][]string {
	out := map[string][]string{}
	for _, r := range w.Rules {
		for _, t := range r.Triggers {
			if !slices.Contains(reserved, t) && !slices.Contains(out[r.From], t) {
				out[r.From] = append(out[r.From], t)
			}
		}
	}
	return out
}

// runsPerVisit is how many agent runs one visit of s makes at most
// (foreach states: per item).
func runsPerVisit(s *rules.State) int {
	switch {
	case s.Terminal, s.Waits(), s.Calls():
		return 0
	case s.Parallel():
		return len(s.Agents) * (1 + s.Retry.Max)
	}
	return 1 + s.Retry.Max
}
