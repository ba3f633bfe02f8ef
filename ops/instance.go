package ops

import (
	"time"

	"github.com/batonhq/baton/record"
	"github.com/batonhq/baton/registry"
)

// Instance is an instance as the front doors show it (its JSON is the HTTP
// API's).
type Instance struct {
	ID       string `json:"id"`
	Workflow string `json:"workflow"`
	Version  int    `json:"version"`
	// Hash is the workflow version's hash (not in the JSON).
	Hash   string `json:"-"`
	Status string `json:"status"`
	State  string `json:"state"`
	Step   int    `json:"step"`
	// Outcome is the outcome of the last run.
	Outcome string `json:"outcome"`
	// Error says why a failed instance failed; null for any other.
	Error *string `json:"error"`
	// CancelReason is the reason given with the cancel of a cancelled
	// instance.
	CancelReason string `json:"cancel_reason,omitempty"`
	// OnLimit names the limit (max_steps, max_visits, max_tokens,
	// max_cost, max_duration) that sent a completed instance to the
	// workflow's on_limit state; "" when it completed otherwise.
	OnLimit string `json:"on_limit,omitempty"`
	// Pending is what an unfinished instance waits on (empty when
	// finished).
	Pending []Pending `json:"pending"`
	// Usage is what the instance's runs used: the totals, and each
	// agent's (all zero when no run reported usage).
	Usage   Usage          `json:"usage"`
	Context map[string]any `json:"context"`
	Created time.Time      `json:"created"`
	Updated time.Time      `json:"updated"`
}

// Finished reports whether the instance has ended.
func (in Instance) Finished() bool {
	return in.Status == StatusCompleted || in.Status == StatusFailed || in.Status == StatusCancelled
}

// Summary is what a start and the other actions answer.
type Summary struct {
	ID       string `json:"id"`
	Workflow string `json:"workflow"`
	Version  int    `json:"version"`
	Status   string `json:"status"`
}

// Usage is an instance's usage: the totals (input_tokens, output_tokens,
// tokens, cost) and each agent's.
type Usage struct {
	registry.Totals
	Agents map[string]registry.Totals `json:"agents"`
}

// Ledger is u as the engine keeps it, its agents sorted by name.
func (u Usage) Ledger() registry.Ledger {
	l := registry.Ledger{Totals: u.Totals}
	for _, agent := range sortedKeys(u.Agents) {
		l.Agents = append(l.Agents, registry.AgentTotal{Agent: agent, Totals: u.Agents[agent]})
	}
	return l
}

func usageOf(l registry.Ledger) Usage {
	u := Usage{Totals: l.Totals, Agents: make(map[string]registry.Totals, len(l.Agents))}
	for _, a := range l.Agents {
		u.Agents[a.Agent] = a.Totals
	}
	return u
}

// Status values. The engine spells a cancelled instance "canceled"; the
// front doors say "cancelled". A running instance whose state is a wait
// state is "waiting".
const (
	StatusRunning   = "running"
	StatusWaiting   = "waiting"
	StatusCompleted = "completed"
	StatusFailed    = "failed"
	StatusCancelled = "cancelled"
)

// Statuses are the status values, in the order the docs list them.
var Statuses = []string{StatusRunning, StatusWaiting, StatusCompleted, StatusFailed, StatusCancelled}

// StatusOf is the status of a stored one, waiting aside.
func StatusOf(s record.Status) string {
	if s == record.StatusCanceled {
		return StatusCancelled
	}
	return string(s)
}

// storeStatus is the store's status of a status: waiting instances are
// running ones.
func storeStatus(status string) record.Status {
	switch status {
	case "":
		return ""
	case StatusWaiting:
		return record.StatusRunning
	case StatusCancelled:
		return record.StatusCanceled
	}
	return record.Status(status)
}

// instance is the snapshot as the front doors show it: a running instance
// whose state is a wait state is waiting.
func (o *Ops) instance(snap record.Snapshot) Instance {
	in := instanceOf(snap)
	if in.Status == StatusRunning {
		if f, ok := o.cat.Flow(snap.Hash); ok {
			if st, ok := f.Workflow.State(snap.State); ok && st.Waits() {
				in.Status = StatusWaiting
			}
		}
	}
	return in
}

func instanceOf(s record.Snapshot) Instance {
	ctx := s.Context
	if ctx == nil {
		ctx = map[string]any{}
	}
	in := Instance{
		ID: s.ID, Workflow: s.Workflow, Version: s.Version, Hash: s.Hash, Status: StatusOf(s.Status), State: s.State,
		Step: s.Step, Outcome: s.Outcome, CancelReason: s.CancelReason, Pending: []Pending{}, Usage: usageOf(s.Usage), Context: ctx,
		Created: s.Created.UTC(), Updated: s.Updated.UTC(),
	}
	// A store written before cancels kept no error of their own may hold
	// the cancel's text as the error: a cancel is no failure either way.
	if s.Error != "" && s.Status != record.StatusCanceled {
		e := s.Error
		in.Error = &e
	}
	return in
}

func summaryOf(snap record.Snapshot) Summary {
	return Summary{ID: snap.ID, Workflow: snap.Workflow, Version: snap.Version, Status: StatusOf(snap.Status)}
}
