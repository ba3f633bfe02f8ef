package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/batonhq/baton/handoff"
	"github.com/batonhq/baton/record"
	"github.com/batonhq/baton/registry"
	"github.com/batonhq/baton/rules"
)

// delegate carries out the dynamic hand-off an agent asked for in its
// outcome: the current step is delegated to another agent without changing
// state. The hand-off validator has the last word: a refusal is the outcome
// `rejected` of the current state, with the refusal as its error.
func (i *instance) delegate(ctx context.Context, r *run, out registry.Outcome) {
	d := out.Handoff
	if s := i.step + 1; s > i.e.wf.Limits.MaxSteps {
		i.limitHit(ctx, &LimitError{Limit: "max_steps", State: i.state.Name, Count: s, Max: i.e.wf.Limits.MaxSteps})
		return
	}
	reason := handoff.Reason(d.Reason)
	switch reason {
	case "":
		// An agent that does not say why delegates as its plan's next
		// step; the hand-off must not pass as a rule's, which the
		// validator checked at load time and spares the run-time checks.
		reason = handoff.ReasonPlanStep
	case handoff.ReasonRule:
		msg := fmt.Sprintf("engine: %s cannot delegate to %s with reason %q: only the workflow's rules hand off for that reason", r.agent, d.To, d.Reason)
		i.decide(ctx, "rejected", nil, rules.ErrorInfo{Message: msg, Kind: "rejected"})
		return
	}
	task := d.Task
	if task == "" {
		task = d.Explanation
	}
	if task == "" {
		task = "delegated by " + r.agent
	}
	nr := &run{
		step: i.step + 1, attempt: 1, state: i.state, agent: d.To, from: r.agent,
		description: task, reason: d.Explanation, priority: r.priority, previous: out.Result,
		constraints: r.constraints, kind: runDelegate, handoffReason: reason,
		payload: d.Payload, returnControl: d.ReturnControl, rare: &runRare{delegator: r.agent},
	}
	if nr.priority == 0 {
		nr.priority = 5
	}
	if err := i.launch(ctx, nr, nil); err != nil {
		i.decide(ctx, "rejected", nil, rules.ErrorInfo{Message: err.Error(), Kind: "rejected"})
		return
	}
	i.step = nr.step
	i.run = nr
}

// delegateDone ends a delegate's run: its result goes back to the delegator
// (return_control), or its outcome is matched as the delegating agent's.
// Delegates are not retried: their failures are the state's outcomes.
func (i *instance) delegateDone(ctx context.Context, r *run, out registry.Outcome, runErr error, isReject, timedOut bool) {
	var reject *registry.RejectError
	switch {
	case isReject && errors.As(runErr, &reject):
		i.decide(ctx, "rejected", nil, rules.ErrorInfo{Message: reject.Reason, Kind: "rejected"})
	case timedOut || errors.Is(runErr, ErrTimeout):
		kind := registry.KindOf(runErr) // heartbeat, for a delegate that went quiet
		if kind == "error" {
			kind = "timeout"
		}
		i.decide(ctx, "timeout", nil, rules.ErrorInfo{Message: runErr.Error(), Retryable: true, Kind: kind})
	case runErr != nil:
		i.decide(ctx, "error", nil, rules.ErrorInfo{Message: runErr.Error(), Retryable: registry.IsRetryable(runErr), Kind: registry.KindOf(runErr)})
	case r.returnControl:
		i.returnControl(ctx, r, out)
	case reserved(out.Trigger) || out.Trigger == "":
		err := fmt.Errorf("%w: agent %s reported %q", ErrReservedTrigger, r.agent, out.Trigger)
		i.decide(ctx, "error", nil, rules.ErrorInfo{Message: err.Error(), Kind: "error"})
	default:
		i.decide(ctx, out.Trigger, out.Result, rules.ErrorInfo{})
	}
}

// returnControl runs the delegator again with the delegate's result as its
// previous result. It is the delegate's answer, not a new hand-off: the
// engine dispatches it, and the delegator's next outcome is matched as usual.
func (i *instance) returnControl(ctx context.Context, r *run, out registry.Outcome) {
	if s := i.step + 1; s > i.e.wf.Limits.MaxSteps {
		i.limitHit(ctx, &LimitError{Limit: "max_steps", State: i.state.Name, Count: s, Max: i.e.wf.Limits.MaxSteps})
		return
	}
	i.note(record.Entry{Kind: record.KindReturned, State: i.state.Name, From: r.agent, To: r.delegator(), Result: out.Result})
	i.step++
	nr := &run{
		returned: true,
		step:     i.step, attempt: 1, state: i.state, agent: r.delegator(),
		description: "result of " + r.agent + ": " + r.description, reason: "return_control",
		priority: r.priority, previous: out.Result, constraints: r.constraints,
	}
	if r.delegator() != i.state.Agent {
		nr.kind = runDelegate // a delegate that delegated in turn: its outcome stands for the state's agent
	}
	i.run = nr
	if err := i.launch(ctx, nr, nil); err != nil {
		nr.ended = true
		i.decide(ctx, "error", nil, rules.ErrorInfo{Message: err.Error(), Retryable: true, Kind: "error"})
	}
}

// selectAgent hands the current step to an agent the user selected: only selectable agents may be
// chosen; the current run ends (a later reply from it is recorded as late)
// and the selected agent's outcome is matched as the state's.
func (i *instance) selectAgent(ctx context.Context, agentID, explanation string) error {
	i.mu.Lock()
	defer i.mu.Unlock()
	r := i.run
	if i.status.Finished() || r == nil || r.ended || i.work != nil {
		return ErrNoActiveRun
	}
	// The validator has its say before anything changes, so that a refused
	// selection (an unknown or unselectable agent, the agent at work, a
	// system agent, the loop window) leaves the instance as it was.
	task := r.description
	if task == "" {
		task = "user selected agent " + agentID
	}
	cmd := handoff.Command{From: r.agent, To: agentID, Reason: handoff.ReasonUserRequest, Task: task}
	if err := i.e.val.Validate(cmd, i.recent); err != nil {
		return err
	}
	r.ended = true
	r.stopTimers()
	r.stop()
	r.endSpan("", "", nil)
	i.note(record.Entry{Kind: record.KindSelected, Step: r.step, State: i.state.Name, From: r.agent, To: agentID, Detail: explanation})
	i.delegate(ctx, r, registry.Outcome{Handoff: &registry.Delegation{
		To: agentID, Reason: string(handoff.ReasonUserRequest), Explanation: explanation,
		Task: r.description,
	}})
	i.commit(ctx)
	return nil
}

// Select hands the instance's current step to agentID, a selectable agent
// the user chose, with reason user_request. The hand-off validator may
// refuse the choice (an unknown or non-selectable agent, the agent already
// at work, a system agent, the loop window): Select then returns its
// *handoff.RefusalError and the instance is left as it was. Without a run
// under way (a parallel state, a retry's backoff, a finished instance) it
// returns ErrNoActiveRun.
func (h *Instance) Select(ctx context.Context, agentID, explanation string) error {
	if ctx == nil {
		return errors.New("engine: nil context")
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return h.inst.selectAgent(context.WithoutCancel(ctx), agentID, explanation)
}
