package engine

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/batonhq/baton/rules"
)

// Budgets (limits.max_tokens, max_cost, max_duration and a state's own
// max_tokens and max_cost) are limits like max_steps: a report that takes
// the totals over one is applied — its usage counts, its result is
// recorded — and then, instead of the rule chosen, the instance enters
// on_limit or fails. rules.Workflow.Decide checks the token and cost
// budgets as it chooses a rule (so that replay decides the same); a retry
// checks them before it spends more; a branch or item run checks them as
// it ends, without waiting for its state's outcome; max_duration is a
// timer on the engine's clock, armed from the instance's creation time.

// budgetText is the message of a budget's LimitError, and whether e is one.
func (e *LimitError) budgetText() (string, bool) {
	whose := "the instance's runs"
	if e.Visit {
		whose = "the runs of this visit of state " + e.State
	}
	switch e.Limit {
	case "max_tokens":
		return fmt.Sprintf("engine: limit max_tokens exceeded: %s used %s tokens (max %s)", whose, number(e.Total), number(e.Budget)), true
	case "max_cost":
		return fmt.Sprintf("engine: limit max_cost exceeded: %s cost %s (max %s)", whose, number(e.Total), number(e.Budget)), true
	case "max_duration":
		return fmt.Sprintf("engine: limit max_duration exceeded: the instance has run for %s (max %s), in state %s",
			seconds(e.Total), seconds(e.Budget), e.State), true
	}
	return "", false
}

func number(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// overBudget reports the token or cost budget the instance's usage is
// over, if any: the instance's, then the current state's own for this
// visit.
func (i *instance) overBudget() *LimitError {
	env := rules.Env{Usage: i.usage.Totals, VisitUsage: i.usage.Visit}
	return limitError(i.e.wf.BudgetOf(i.state, i.state, &env))
}

// armDeadline arms the max_duration timer of a running instance, to fire
// max_duration after the instance was created: at its start, and again
// when it is resumed after a restart (the creation time is in the
// snapshot, so the restart does not push the deadline back; one already
// past fires at once).
func (i *instance) armDeadline() {
	limit := i.e.wf.Limits.MaxDuration
	if limit <= 0 || i.status.Finished() {
		return
	}
	i.stopDeadline()
	left := i.created.Add(limit).Sub(i.e.clock.Now())
	i.deadline = i.e.clock.AfterFunc(max(left, 0), func() {
		i.e.exec.Submit(func() { i.deadlinePassed(i.e.ctx) })
	})
}

// stopDeadline stops the max_duration timer, if one is armed.
func (i *instance) stopDeadline() {
	if i.deadline != nil {
		i.deadline.Stop()
		i.deadline = nil
	}
}

// deadlinePassed is the max_duration hit of an instance still running:
// whatever it is doing (a run, a retry's backoff, a wait, branches, items,
// a child) is abandoned — a report that comes for it is stale — and the
// instance enters on_limit or fails.
func (i *instance) deadlinePassed(ctx context.Context) {
	if i.e.closed.Load() {
		return
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.status.Finished() || i.commitErr != nil {
		return
	}
	i.deadline = nil
	limit := i.e.wf.Limits.MaxDuration
	ran := i.e.clock.Now().Sub(i.created)
	i.abandonWork(ctx)
	i.limitHit(ctx, &LimitError{Limit: "max_duration", State: i.state.Name, Total: ran.Seconds(), Budget: limit.Seconds()})
	i.commit(ctx)
}

// abandonWork stops what the current state is doing, leaving the state's
// runs ended without an outcome.
func (i *instance) abandonWork(ctx context.Context) {
	if r := i.run; r != nil && !r.ended {
		r.ended = true
		r.stopTimers()
		r.stop()
		r.endSpan("", "", nil)
	}
	if i.retry != nil {
		i.retry.Stop()
		i.retry = nil
	}
	if i.join != nil {
		i.stopBranches()
		i.join = nil
	}
	i.stopItems()
	i.stopWait()
	i.stopChild(ctx)
}

// fanOutOverBudget stops a parallel or foreach state whose run r, just
// ended, took the usage over a budget: the state's other runs are
// abandoned (their reports will be stale) and the instance enters on_limit
// or fails, without waiting for the state's outcome. It reports whether it
// did.
func (i *instance) fanOutOverBudget(ctx context.Context, r *run) bool {
	if r.kind != runBranch && r.kind != runItem {
		return false
	}
	hit := i.overBudget()
	if hit == nil {
		return false
	}
	i.abandonWork(ctx)
	i.limitHit(ctx, hit)
	return true
}
