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
	i.usage = i.usage.AddSpare(agent, u, &i.spareUsage)
}

// childSpent counts a finished child instance's usage in the parent's
// totals (its runs count against the parent's budgets too), as the child's
// end becomes the workflow state's outcome: the outcome entry carries the
// child's totals, so that a replay of the parent's history sees them.
func (i *instance) childSpent(l registry.Ledger) {
	if l.Totals == (registry.Totals{}) {
		return
	}
	i.usage = i.usage.Merge(l)
	i.childUsage = registry.Usage{InputTokens: l.InputTokens, OutputTokens: l.OutputTokens, Cost: l.Cost}
}

// takeChildUsage returns the usage childSpent left for the outcome entry,
// once.
func (i *instance) takeChildUsage() registry.Usage {
	u := i.childUsage
	i.childUsage = registry.Usage{}
	return u
}
