package replay

import (
	"errors"
	"fmt"
	"maps"

	"github.com/batonhq/baton/record"
	"github.com/batonhq/baton/registry"
	"github.com/batonhq/baton/rules"
)

// ErrNoHistory means the history has no started entry to replay from.
var ErrNoHistory = errors.New("replay: history has no started entry")

// Decision is what the rules chose for one outcome.
type Decision struct {
	Rule  string `json:"rule,omitempty"`  // "" when no rule matched
	Next  string `json:"next,omitempty"`  // the state entered (or that a limit refused)
	To    string `json:"to,omitempty"`    // the agent handed off to, "" for none
	Limit string `json:"limit,omitempty"` // the limit that refused the transition, if any
	Fail  string `json:"fail,omitempty"`  // why the instance failed instead (no rule matched, an expression error)
}

func (d Decision) String() string {
	switch {
	case d.Fail != "":
		return "fail: " + d.Fail
	case d.Limit != "":
		return fmt.Sprintf("rule %s -> %s refused by %s", d.Rule, d.Next, d.Limit)
	case d.To != "":
		return fmt.Sprintf("rule %s -> %s (hand-off to %s)", d.Rule, d.Next, d.To)
	default:
		return fmt.Sprintf("rule %s -> %s", d.Rule, d.Next)
	}
}

// Step is one outcome replayed.
type Step struct {
	Step     int      `json:"step"`
	State    string   `json:"state"`
	Trigger  string   `json:"trigger"`
	Recorded Decision `json:"recorded"`
	Replayed Decision `json:"replayed"`
	// Diff names what differs ("rule", "next state", "hand-off", "limit",
	// "failure", "state"), "" when the decisions agree.
	Diff string `json:"diff,omitempty"`
}

// Report is the result of a replay.
type Report struct {
	Workflow string `json:"workflow"`
	Steps    []Step `json:"steps"` // every outcome compared, the divergent one last
	// Divergence is the first step whose decisions differ, nil when the
	// workflow decides as recorded throughout.
	Divergence *Step `json:"divergence,omitempty"`
}

// Check replays history against w.
func Check(w *rules.Workflow, history []record.Entry) (*Report, error) {
	if w == nil {
		return nil, fmt.Errorf("%w: workflow", ErrNilArgument)
	}
	rep := &Report{Workflow: w.Name}
	var (
		input   map[string]any
		context = map[string]any{}
		visits  = map[string]int{}
		usage   registry.Ledger // what the runs so far used, as their agent_run entries say
		started bool
	)
	for idx, e := range history {
		switch e.Kind {
		case record.KindStarted:
			started = true
			input = e.Result
			if input == nil {
				input = map[string]any{}
			}
			visits[e.State] = 1
			if e.State != w.Initial {
				return rep.diverge(Step{Step: 1, State: e.State, Diff: "state", Recorded: Decision{Next: e.State}, Replayed: Decision{Next: w.Initial}}), nil
			}
		case record.KindTransition:
			visits[e.Next]++
			usage.Visit = registry.Totals{}
		case record.KindAgentRun:
			usage = usage.Add(e.Agent, e.Usage)
		case record.KindLimitHit:
			usage = usage.Add(e.Agent, e.Usage) // a child workflow's usage so far, as its parent stopped it over a budget
		case record.KindOutcome:
			if !started {
				return nil, ErrNoHistory
			}
			usage = usage.Add(e.Agent, e.Usage) // a child workflow's usage, counted as its state's outcome
			st := Step{Step: e.Step, State: e.State, Trigger: e.Trigger, Recorded: recorded(history[idx+1:])}
			env := rules.Env{
				Result: orEmpty(e.Result), Input: input, Context: context,
				Error: rules.ErrorInfo{Message: e.Error, Retryable: e.Retryable, Kind: e.ErrorKind},
				State: e.State, Agent: e.Agent, Trigger: e.Trigger, Step: e.Step,
				Visits: maps.Clone(visits), Attempt: e.Attempt,
				Usage: usage.Totals, VisitUsage: usage.Visit,
			}
			var merged map[string]any
			st.Replayed, merged = decide(w, &env)
			st.Diff = compare(st.Recorded, st.Replayed)
			if owner := w.Owner(e.State); st.Diff == "" && owner != e.Agent {
				st.Diff = "state" // the state is now someone else's
				st.Replayed.Fail = fmt.Sprintf("state %s is owned by %q, was %q", e.State, owner, e.Agent)
			}
			if st.Diff != "" {
				return rep.diverge(st), nil
			}
			rep.Steps = append(rep.Steps, st)
			if merged != nil {
				context = merged
			}
		}
	}
	if !started {
		return nil, ErrNoHistory
	}
	return rep, nil
}

func (r *Report) diverge(st Step) *Report {
	r.Steps = append(r.Steps, st)
	r.Divergence = &r.Steps[len(r.Steps)-1]
	return r
}

// decide is what w chooses for env (rules.Workflow.Decide, as the engine
// applies it), and the context after the chosen rule's merge (nil when
// nothing merges).
func decide(w *rules.Workflow, env *rules.Env) (Decision, map[string]any) {
	if _, ok := w.State(env.State); !ok {
		return Decision{Fail: fmt.Sprintf("state %s is not in workflow %s", env.State, w.Name)}, nil
	}
	d := w.Decide(env)
	if d.Rule == nil {
		return Decision{Fail: "no rule matched"}, nil
	}
	out := Decision{Rule: d.Rule.ID, Next: d.Rule.Next, To: d.Rule.To}
	switch {
	case d.Limit != nil:
		out.Limit, out.To = d.Limit.Limit, ""
		return out, nil
	case d.Err != nil:
		out.To = ""
		out.Fail = d.Err.Error()
		return out, nil
	}
	return out, d.Context
}

// recorded reads the decision that followed an outcome in the history, from
// the entries' structured fields.
func recorded(after []record.Entry) Decision {
	var d Decision
	for _, e := range after {
		switch e.Kind {
		case record.KindRuleFired:
			d = Decision{Rule: e.Rule, Next: e.Next, To: e.To}
		case record.KindLimitHit:
			d.Limit, d.To = e.Limit, ""
			return d
		case record.KindFailed:
			switch {
			case d.Rule == "":
				d.Fail = "no rule matched"
			case e.ErrorKind == "task" || e.ErrorKind == "context":
				d.Fail, d.To = e.Error, ""
			}
			return d
		case record.KindTransition, record.KindOutcome, record.KindHandoff, record.KindDispatch, record.KindCompleted:
			return d
		}
	}
	return d
}

// compare names the first field in which two decisions differ.
func compare(a, b Decision) string {
	switch {
	case (a.Fail == "") != (b.Fail == ""):
		return "failure"
	case a.Rule != b.Rule:
		return "rule"
	case a.Next != b.Next:
		return "next state"
	case a.Limit != b.Limit:
		return "limit"
	case a.To != b.To:
		return "hand-off"
	}
	return ""
}

func orEmpty(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}
