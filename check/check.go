package check

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/batonhq/baton/rules"
)

// Severity tells an error (the workflow can fail or get stuck) from a
// warning (it may, through the engine's own outcomes or a missing timeout).
type Severity string

// Severities of a finding.
const (
	SeverityError   Severity = "error"
	SeverityWarning Severity = "warning"
)

// Kind names what a finding is about.
type Kind string

// Kinds of finding.
const (
	// KindUncovered is a reachable state and outcome for which no rule may
	// fire: an instance that gets there fails with no rule matched.
	KindUncovered Kind = "uncovered"
	// KindTrap is a reachable state from which no terminal state can be
	// reached.
	KindTrap Kind = "trap"
	// KindHang is a reachable state that can wait for ever: a wait with no
	// timeout, or an agent run with no timeout and no heartbeat.
	KindHang Kind = "hang"
	// KindUnreachedOutcome is a terminal state no path reaches.
	KindUnreachedOutcome Kind = "unreached_outcome"
)

// Finding is one problem check proves, at the position of its state or rule.
type Finding struct {
	Kind     Kind     `json:"kind"`
	Severity Severity `json:"severity"`
	File     string   `json:"file"`
	Line     int      `json:"line"`
	Col      int      `json:"col"`
	// Workflow is the name of the workflow the finding is in (a child's
	// name for a finding in a child).
	Workflow string `json:"workflow"`
	State    string `json:"state"`
	// Trigger is the uncovered outcome, for KindUncovered.
	Trigger string `json:"trigger,omitempty"`
	Message string `json:"message"`
	// Witness holds the values that match no rule, for KindUncovered.
	Witness *Witness `json:"witness,omitempty"`
	// Path is a shortest path of states from the initial state to State,
	// and Steps its transitions (each with the rule that fires).
	Path  []string `json:"path"`
	Steps []Step   `json:"steps"`
}

// String renders the finding as `file:line:col: severity: message`.
func (f Finding) String() string {
	return fmt.Sprintf("%s:%d:%d: %s: %s", f.File, f.Line, f.Col, f.Severity, f.Message)
}

// Witness is an outcome that no rule accepts: the values each condition
// tried reads, and the whole environment Match was given to confirm it.
type Witness struct {
	Trigger string `json:"trigger"`
	// Values lists the fields the conditions compare, with the value the
	// witness gives each (Missing: the field is absent).
	Values []Value `json:"values"`
	// Result, Input and Context are the data the conditions were evaluated
	// with; Error is the outcome's error.
	Result  map[string]any `json:"result"`
	Input   map[string]any `json:"input"`
	Context map[string]any `json:"context"`
	Error   ErrorValue     `json:"error"`
	Attempt int            `json:"attempt"`
	Step    int            `json:"step"`
	Visits  map[string]int `json:"visits"`
}

// ErrorValue is the `error` of a witness's environment.
type ErrorValue struct {
	Message   string `json:"message"`
	Retryable bool   `json:"retryable"`
	Kind      string `json:"kind"`
}

// Value is one field of a witness.
type Value struct {
	Field   string `json:"field"`
	Value   any    `json:"value,omitempty"`
	Missing bool   `json:"missing,omitempty"`
}

// Step is one transition of a path: in State, the outcome Trigger fired
// Rule ("" for a limit hit, which enters the on_limit state).
type Step struct {
	State   string `json:"state"`
	Trigger string `json:"trigger"`
	Rule    string `json:"rule"`
	Next    string `json:"next"`
}

// Coverage says what check decided for one outcome of a state.
type Coverage string

// Coverages of an outcome.
const (
	// Covered: some rule fires for every value (proved).
	Covered Coverage = "covered"
	// Uncovered: a witness matches no rule (verified by the rules' own Match).
	Uncovered Coverage = "uncovered"
	// Undecided: the conditions have parts the analysis cannot read, or the
	// search ran out of budget; no witness was found.
	Undecided Coverage = "undecided"
)

// StateOutcomes lists the outcomes a reachable state can produce.
type StateOutcomes struct {
	State    string           `json:"state"`
	Outcomes []OutcomeSummary `json:"outcomes"`
}

// OutcomeSummary is one outcome of a state and its coverage.
type OutcomeSummary struct {
	Trigger  string   `json:"trigger"`
	Coverage Coverage `json:"coverage"`
}

// Terminal is a terminal state of the workflow with a shortest path to it;
// Path is nil when no path reaches it.
type Terminal struct {
	State     string   `json:"state"`
	Reachable bool     `json:"reachable"`
	Path      []string `json:"path"`
}

// WorstCase bounds the agent runs of one instance.
type WorstCase struct {
	// Runs is the largest number of agent runs over all paths, counting
	// one item per visit of a foreach state.
	Runs int `json:"runs"`
	// PerItem is how many more runs each further item of the foreach
	// states adds (0 without foreach states).
	PerItem int `json:"per_item"`
	// Capped is set when max_steps, not the visits, bounds Runs; Cycle then
	// names a cycle that reaches it.
	Capped bool     `json:"capped"`
	Cycle  []string `json:"cycle,omitempty"`
}

// Report is what check finds in one workflow, and in the children its
// workflow states run.
type Report struct {
	Workflow    string          `json:"workflow"`
	File        string          `json:"file"`
	States      int             `json:"states"`
	Reachable   []string        `json:"reachable"`
	Unreachable []string        `json:"unreachable"`
	Produces    []StateOutcomes `json:"produces"`
	Terminals   []Terminal      `json:"terminals"`
	WorstCase   WorstCase       `json:"worst_case"`
	Findings    []Finding       `json:"findings"`
	Summary     string          `json:"summary"`
	Children    []*Report       `json:"children"`

	c *checker // for WriteScenarios
}

// Errors counts the findings of severity error, children's included.
func (r *Report) Errors() int {
	n := 0
	for _, f := range r.Findings {
		if f.Severity == SeverityError {
			n++
		}
	}
	for _, c := range r.Children {
		n += c.Errors()
	}
	return n
}

// All returns the findings of the report and of its children, sorted by
// file and position.
func (r *Report) All() []Finding {
	out := slices.Clone(r.Findings)
	for _, c := range r.Children {
		out = append(out, c.All()...)
	}
	slices.SortStableFunc(out, func(a, b Finding) int {
		return cmp.Or(cmp.Compare(a.File, b.File), cmp.Compare(a.Line, b.Line), cmp.Compare(a.Col, b.Col))
	})
	return out
}

// Check analyses w, and the children its workflow states run (linked by
// rules.LoadSet or rules.LoadBeside): every outcome each reachable state can
// produce, the ones no rule covers, traps, hangs, the worst case and the
// terminal states reached. It never runs the workflow; each witness it
// reports has been confirmed by the workflow's own Match.
func Check(w *rules.Workflow) *Report {
	if w == nil {
		// Nothing loaded, nothing to prove: an empty report, not a panic.
		return &Report{Reachable: []string{}, Unreachable: []string{}, Produces: []StateOutcomes{}, Terminals: []Terminal{},
			Findings: []Finding{}, Children: []*Report{}}
	}
	return check(w, map[string]bool{})
}

func check(w *rules.Workflow, done map[string]bool) *Report {
	done[w.Name] = true
	c := newChecker(w)
	r := c.run()
	r.c = c
	for _, s := range w.States {
		if s.Child == nil || s.Child.Target == nil || done[s.Child.Target.Name] {
			continue
		}
		r.Children = append(r.Children, check(s.Child.Target, done))
	}
	if r.Children == nil {
		r.Children = []*Report{}
	}
	return r
}
