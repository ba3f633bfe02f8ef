package engine

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/batonhq/baton/record"
	"github.com/batonhq/baton/registry"
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
	env := rules.Env{Usage: i.usage().Totals, VisitUsage: i.usage().Visit}
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
	i.more().deadline = i.e.clock.AfterFunc(max(left, 0), func() {
		i.e.exec.Submit(func() { i.deadlinePassed(i.e.ctx) })
	})
}

// stopDeadline stops the max_duration timer, if one is armed.
func (i *instance) stopDeadline() {
	if x := i.rare; x != nil && x.deadline != nil {
		x.deadline.Stop()
		x.deadline = nil
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
	if i.rare != nil {
		i.rare.deadline = nil
	}
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
	i.stopRetry()
	i.endWork(ctx)
}

// fanOutOverBudget stops a parallel or foreach state whose run, just
// ended, took the usage over a budget: the state's other runs are
// abandoned (their reports will be stale) and the instance enters on_limit
// or fails, without waiting for the state's outcome. It reports whether it
// did.
func (i *instance) fanOutOverBudget(ctx context.Context) bool {
	hit := i.overBudget()
	if hit == nil {
		if left, ok := i.room(); ok && left.over(i.usage().Totals) {
			// Over what its parent left it: stopped as a run of one
			// state would be (outOfRoom), the state's others abandoned.
			i.abandonWork(ctx)
			return i.outOfRoom()
		}
		return false
	}
	i.abandonWork(ctx)
	i.limitHit(ctx, hit)
	return true
}

// A child workflow's runs count against its parent's token and cost
// budgets, and its ancestors', as they end, not only when the child ends:
// a runaway loop in a child is stopped by the parent's budget on the run
// that crosses it. A parent is idle while its workflow state waits for the
// child, so what it has left of each budget is fixed: as it starts (or
// resumes) the child, it leaves the child that room (the least of its own
// budgets' rest, its workflow state's for this visit, and the room its own
// parent left it). A child whose totals go over its room stops before it
// enters another state: it is cancelled, and its parent, counting the
// child's usage as the child's end, is over its budget and enters on_limit
// or fails, the limit_hit entry carrying the child's usage (a replay of the
// parent's history counts it there). A middle instance over its room
// because of its own child stops the same way, up to the ancestor whose
// budget it is.

// room is what a child instance may use before one of its ancestors'
// budgets is over: tokens and cost, each negative for no limit.
type room struct {
	tokens int64
	cost   float64
}

// noRoomLimit is a room with no limit.
var noRoomLimit = room{tokens: -1, cost: -1}

// less returns r with each limit lowered to o's where o's is lower.
func (r room) less(o room) room {
	if o.tokens >= 0 && (r.tokens < 0 || o.tokens < r.tokens) {
		r.tokens = o.tokens
	}
	if o.cost >= 0 && (r.cost < 0 || o.cost < r.cost) {
		r.cost = o.cost
	}
	return r
}

// over reports whether totals go over the room.
func (r room) over(t registry.Totals) bool {
	return (r.tokens >= 0 && t.Tokens > r.tokens) || (r.cost >= 0 && t.Cost > r.cost)
}

// rest is room whose limits are what is left of maxTokens and maxCost (0:
// none) once tokens and cost are used.
func rest(maxTokens int64, maxCost float64, t registry.Totals) room {
	r := noRoomLimit
	if maxTokens > 0 {
		r.tokens = max(maxTokens-t.Tokens, 0)
	}
	if maxCost > 0 {
		r.cost = max(maxCost-t.Cost, 0)
	}
	return r
}

// childRoom is the room the instance leaves the child its current state
// (a workflow state) starts.
func (i *instance) childRoom() room {
	lim := i.e.wf.Limits
	r := rest(lim.MaxTokens, lim.MaxCost, i.usage().Totals).less(rest(i.state.MaxTokens, i.state.MaxCost, i.usage().Visit))
	if own, ok := i.room(); ok {
		left := own
		if own.tokens >= 0 {
			left.tokens = max(own.tokens-i.usage().Tokens, 0)
		}
		if own.cost >= 0 {
			left.cost = max(own.cost-i.usage().Cost, 0)
		}
		r = r.less(left)
	}
	return r
}

// outOfRoom cancels a child instance whose usage went over the room its
// parent left it, and reports whether it did; the caller holds the lock
// and commits. The parent takes the child's end and hits its budget.
func (i *instance) outOfRoom() bool {
	r, ok := i.room()
	if !ok || !r.over(i.usage().Totals) {
		return false
	}
	i.canceled("its runs went over a budget of a parent instance")
	return true
}

// room returns the room the instance's parent left it, if it is a child
// and one was.
func (i *instance) room() (room, bool) {
	if !i.child {
		return room{}, false
	}
	return i.e.fam.room(i.id)
}

// room returns the room left to child instance id, if one was.
func (f *family) room(id string) (room, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, ok := f.rooms[id]
	return r, ok
}

// leaveRoom sets the room of child instance id; a room with no limit is
// not kept.
func (f *family) leaveRoom(id string, r room) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if r == noRoomLimit {
		delete(f.rooms, id)
		return
	}
	if f.rooms == nil {
		f.rooms = map[string]room{}
	}
	f.rooms[id] = r
}

// dropRoom forgets the room of child instance id, which its parent no
// longer waits for.
func (f *family) dropRoom(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.rooms, id)
}

// childOverBudget is the end of a child that went over its room: the
// parent, over a budget with the child's usage counted (hit), enters
// on_limit or fails, its limit_hit entry carrying the child's usage; or,
// within its own budgets but over the room its own parent left it, it is
// cancelled in turn. It reports whether it did either.
func (i *instance) childOverBudget(ctx context.Context, c *childRun) bool {
	hit := i.overBudget()
	if hit == nil {
		return i.outOfRoom()
	}
	used := i.takeChildUsage()
	n := 0
	if i.pending != nil {
		n = len(*i.pending)
	}
	i.limitHit(ctx, hit)
	if i.pending != nil && len(*i.pending) > n && (*i.pending)[n].Kind == record.KindLimitHit {
		(*i.pending)[n].Agent, (*i.pending)[n].Usage = c.state.Name, used
	}
	return true
}
