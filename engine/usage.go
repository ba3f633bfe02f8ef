package engine

import (
	"errors"

	"github.com/batonhq/baton/registry"
)

// checkUsage refuses usage that is negative or not a finite number, naming
// the field (usage.cost, say): a Go handler's run fails with it (kind
// invalid_result), a report is refused with it at the door.
func checkUsage(u registry.Usage) *InputError {
	err := u.Validate()
	if err == nil {
		return nil
	}
	var ue *registry.UsageError
	if errors.As(err, &ue) {
		return &InputError{Field: "usage." + ue.Field, Reason: ue.Reason}
	}
	return &InputError{Field: "usage", Reason: err.Error()}
}

// spend counts one run's usage in the instance's totals: those of the
// instance, of the run's agent and of the current visit. It is called once
// per run, as the run ends and its agent_run entry is noted: the totals
// are committed with that entry, so a run's usage counts exactly once
// whatever reports come again or restarts happen.
func (i *instance) spend(agent string, u registry.Usage) {
	if u.IsZero() {
		return
	}
	m := i.meter()
	m.ledger = m.ledger.AddSpare(agent, u, &m.spare)
}

// instanceUsage is what an instance's runs used: most instances' agents
// report none, so it is kept apart (see meter).
type instanceUsage struct {
	ledger registry.Ledger
	spare  registry.AgentTotals // room for the next copies of ledger.Agents
	child  registry.Usage       // a finished child's totals, for the outcome entry its end makes
}

// meter returns the instance's usage, made on the first use.
func (i *instance) meter() *instanceUsage {
	if i.used == nil {
		i.used = new(instanceUsage)
	}
	return i.used
}

// usage is the instance's ledger; zero while its runs used nothing.
func (i *instance) usage() registry.Ledger {
	if i.used == nil {
		return registry.Ledger{}
	}
	return i.used.ledger
}

// childSpent counts a finished child instance's usage in the parent's
// totals (its runs count against the parent's budgets too), as the child's
// end becomes the workflow state's outcome: the outcome entry carries the
// child's totals, so that a replay of the parent's history sees them.
func (i *instance) childSpent(l registry.Ledger) {
	if l.Totals == (registry.Totals{}) {
		return
	}
	m := i.meter()
	m.ledger = m.ledger.Merge(l)
	m.child = registry.Usage{InputTokens: l.InputTokens, OutputTokens: l.OutputTokens, Cost: l.Cost}
}

// takeChildUsage returns the usage childSpent left for the outcome entry,
// once.
func (i *instance) takeChildUsage() registry.Usage {
	if i.used == nil {
		return registry.Usage{}
	}
	u := i.used.child
	i.used.child = registry.Usage{}
	return u
}
