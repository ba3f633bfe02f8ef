package registry

import (
	"cmp"
	"encoding/json"
	"math"
	"slices"
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

// Price is what a model's tokens cost, in the workflow's currency per
// million tokens: an LLM agent's price works out the cost of each call.
type Price struct {
	Input, Output float64
}

// Cost returns what a call that read in and wrote out tokens cost; a nil
// price costs nothing.
func (p *Price) Cost(in, out int64) float64 {
	if p == nil {
		return 0
	}
	return (float64(in)*p.Input + float64(out)*p.Output) / 1e6
}

// Ledger is an instance's usage: the totals of all its runs (its child
// instances' included), the totals of each agent, and those of the runs of
// the current visit of its current state (what a state's own budgets are
// checked against).
type Ledger struct {
	Totals
	// Agents holds each agent's totals.
	Agents AgentTotals `json:"agents,omitempty"`
	// Visit holds the totals of the current state's current visit.
	Visit Totals `json:"visit,omitzero"`
}

// AgentTotals holds the totals of each agent, sorted by agent id. In JSON
// it is an object keyed by agent id. A slice rather than a map: a ledger is
// copied at every run that reports usage (committed snapshots share it),
// and a few agents' totals copy in one small allocation.
type AgentTotals []AgentTotal

// AgentTotal is one agent's totals.
type AgentTotal struct {
	Agent string
	Totals
}

// Of returns agent's totals (zero when it reported nothing).
func (a AgentTotals) Of(agent string) Totals {
	if k, ok := a.find(agent); ok {
		return a[k].Totals
	}
	return Totals{}
}

func (a AgentTotals) find(agent string) (int, bool) {
	return slices.BinarySearchFunc(a, agent, func(t AgentTotal, id string) int { return cmp.Compare(t.Agent, id) })
}

// with returns a copy of a with o added to agent's totals, built in the
// front of spare when it has room, else in a new array with room for a few
// more copies; rest is what is left of the room. A caller adding often
// allocates once every few runs instead of at each. The copies never
// overlap, so every ledger handed out keeps its totals.
func (a AgentTotals) with(agent string, o Totals, spare AgentTotals) (out, rest AgentTotals) {
	k, ok := a.find(agent)
	n := len(a)
	if !ok {
		n++
	}
	if cap(spare) < n {
		spare = make(AgentTotals, 0, spareCopies*n)
	}
	out, rest = spare[:n:n], spare[n:n:cap(spare)]
	copy(out, a[:k])
	if ok {
		copy(out[k+1:], a[k+1:])
		out[k] = AgentTotal{Agent: agent, Totals: a[k].Totals.Plus(o)}
	} else {
		copy(out[k+1:], a[k:])
		out[k] = AgentTotal{Agent: agent, Totals: o}
	}
	return out, rest
}

// spareCopies is how many copies of the agents' totals one allocation
// makes room for.
const spareCopies = 4

// MarshalJSON writes the totals as an object keyed by agent id.
func (a AgentTotals) MarshalJSON() ([]byte, error) {
	m := make(map[string]Totals, len(a))
	for _, t := range a {
		m[t.Agent] = t.Totals
	}
	return json.Marshal(m)
}

// UnmarshalJSON reads an object keyed by agent id.
func (a *AgentTotals) UnmarshalJSON(data []byte) error {
	var m map[string]Totals
	if err := json.Unmarshal(data, &m); err != nil {
		return err
	}
	if m == nil {
		*a = nil
		return nil
	}
	out := make(AgentTotals, 0, len(m))
	for id, t := range m {
		out = append(out, AgentTotal{Agent: id, Totals: t})
	}
	slices.SortFunc(out, func(x, y AgentTotal) int { return cmp.Compare(x.Agent, y.Agent) })
	*a = out
	return nil
}

// Add returns l with the usage of one run of agent added. The Agents of
// the result are a new slice: ledgers handed out earlier do not change.
func (l Ledger) Add(agent string, u Usage) Ledger {
	var spare AgentTotals
	return l.AddSpare(agent, u, &spare)
}

// AddSpare is Add building the result's Agents in *spare, when it is not
// nil: an engine that adds at every run keeps one spare per instance and
// allocates once every few runs (see AgentTotals).
func (l Ledger) AddSpare(agent string, u Usage, spare *AgentTotals) Ledger {
	if u.IsZero() {
		return l
	}
	t := Totals{}.Add(u)
	l.Totals = l.Totals.Plus(t)
	l.Visit = l.Visit.Plus(t)
	l.Agents, *spare = l.Agents.with(agent, t, *spare)
	return l
}

// Merge returns l with another ledger's totals added (a child instance's,
// say), agent by agent; like Add, it does not change l's Agents.
func (l Ledger) Merge(o Ledger) Ledger {
	if o.Totals == (Totals{}) {
		return l
	}
	l.Totals = l.Totals.Plus(o.Totals)
	l.Visit = l.Visit.Plus(o.Totals)
	for _, t := range o.Agents {
		l.Agents, _ = l.Agents.with(t.Agent, t.Totals, nil)
	}
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
