package registry

import (
	"maps"
	"math"
)

// Usage is what one run used, as its agent reports it: the tokens a model
// read and wrote, what the run cost and the model that answered. Every
// field is optional; the zero Usage means nothing was reported.
type Usage struct {
	// InputTokens and OutputTokens are the tokens the run's model calls
	// read and wrote; never negative.
	InputTokens  int64 `json:"input_tokens,omitempty"`
	OutputTokens int64 `json:"output_tokens,omitempty"`
	// Cost is what the run cost, in whatever unit the team budgets in
	// (dollars, say); a finite number, never negative.
	Cost float64 `json:"cost,omitempty"`
	// Model names the model that answered.
	Model string `json:"model,omitempty"`
}

// IsZero reports whether nothing was reported.
func (u Usage) IsZero() bool { return u == Usage{} }

// Validate returns a *UsageError naming the first field that is negative
// or, for Cost, not a finite number.
func (u Usage) Validate() error {
	switch {
	case u.InputTokens < 0:
		return &UsageError{Field: "input_tokens", Reason: "must not be negative"}
	case u.OutputTokens < 0:
		return &UsageError{Field: "output_tokens", Reason: "must not be negative"}
	case math.IsNaN(u.Cost) || math.IsInf(u.Cost, 0):
		return &UsageError{Field: "cost", Reason: "must be a finite number"}
	case u.Cost < 0:
		return &UsageError{Field: "cost", Reason: "must not be negative"}
	}
	return nil
}

// Totals sum the usage of several runs. Expressions of a workflow read an
// instance's totals as `usage` (usage.tokens, usage.cost, ...).
type Totals struct {
	InputTokens  int64 `json:"input_tokens" expr:"input_tokens"`
	OutputTokens int64 `json:"output_tokens" expr:"output_tokens"`
	// Tokens is InputTokens + OutputTokens.
	Tokens int64   `json:"tokens" expr:"tokens"`
	Cost   float64 `json:"cost" expr:"cost"`
}

// Add returns t with one run's usage added. Token counts saturate at the
// largest int64 instead of wrapping round to negative totals.
func (t Totals) Add(u Usage) Totals {
	t.InputTokens = addTokens(t.InputTokens, u.InputTokens)
	t.OutputTokens = addTokens(t.OutputTokens, u.OutputTokens)
	t.Tokens = addTokens(t.InputTokens, t.OutputTokens)
	t.Cost += u.Cost
	return t
}

// Plus returns the sum of t and o.
func (t Totals) Plus(o Totals) Totals {
	return t.Add(Usage{InputTokens: o.InputTokens, OutputTokens: o.OutputTokens, Cost: o.Cost})
}

func addTokens(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// Ledger is an instance's usage: the totals of all its runs (its child
// instances' included), the totals of each agent, and those of the runs of
// the current visit of its current state (what a state's own budgets are
// checked against).
type Ledger struct {
	Totals
	// Agents holds each agent's totals, by agent id.
	Agents map[string]Totals `json:"agents,omitempty"`
	// Visit holds the totals of the current state's current visit.
	Visit Totals `json:"visit,omitzero"`
}

// Add returns l with the usage of one run of agent added. The Agents map
// of the result is a new map: ledgers handed out earlier do not change.
func (l Ledger) Add(agent string, u Usage) Ledger {
	if u.IsZero() {
		return l
	}
	l.Totals = l.Totals.Add(u)
	l.Visit = l.Visit.Add(u)
	agents := make(map[string]Totals, len(l.Agents)+1)
	maps.Copy(agents, l.Agents)
	agents[agent] = agents[agent].Add(u)
	l.Agents = agents
	return l
}

// Merge returns l with another ledger's totals added (a child instance's,
// say), agent by agent; like Add, it does not change l's Agents map.
func (l Ledger) Merge(o Ledger) Ledger {
	if o.Totals == (Totals{}) {
		return l
	}
	l.Totals = l.Totals.Plus(o.Totals)
	l.Visit = l.Visit.Plus(o.Totals)
	agents := make(map[string]Totals, len(l.Agents)+len(o.Agents))
	maps.Copy(agents, l.Agents)
	for a, t := range o.Agents {
		agents[a] = agents[a].Plus(t)
	}
	l.Agents = agents
	return l
}

// Progress is what a run says while it works, before its report: a line
// for the person watching, the next piece of a streamed answer, data of
// the agent's own. Every field is optional. The engine passes progress on
// to its observers and keeps the latest on the pending run; the history
// never records it.
type Progress struct {
	// Message says what the agent is doing ("searching flights").
	Message string `json:"message,omitempty"`
	// Delta is the next piece of text of a streamed answer.
	Delta string `json:"delta,omitempty"`
	// Data is anything else the agent wants shown.
	Data map[string]any `json:"data,omitempty"`
}
