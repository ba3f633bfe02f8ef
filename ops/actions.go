package ops

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/handoff"
	"github.com/batonhq/baton/record"
)

// MaxCancelReason bounds the words a cancel keeps on the record, in bytes.
const MaxCancelReason = 1024

// moving reports whether an unfinished instance its engine does not hold
// is moving between the processes sharing the store (a takeover under
// way), as opposed to one that has ended.
func (o *Ops) moving(snap record.Snapshot) bool {
	return o.router != nil && o.router.Moves() && !snap.Status.Finished()
}

func movingError(id string) *Error {
	return retry(Unavailable("instance "+id+" is moving between servers: try again", nil))
}

// Signal sends the signal name with data to instance id: an ErrConflict
// (CodeNotWaiting) when the instance is not waiting for it, and nothing
// changes.
func (o *Ops) Signal(ctx context.Context, id, name string, data map[string]any) (Summary, error) {
	if res, routed := o.route(ctx, Op{Kind: OpSignal, ID: id, Name: name, Data: data}); routed {
		return res.Summary, res.Err
	}
	snap, f, err := o.target(ctx, id)
	if err != nil {
		return Summary{}, err
	}
	err = f.Engine.Signal(ctx, snap.ID, name, data)
	var ie *engine.InputError
	switch {
	case err == nil:
		return Summary{ID: snap.ID, Workflow: snap.Workflow, Version: snap.Version, Status: StatusRunning}, nil
	case errors.As(err, &ie):
		e := Invalid("data"+strings.TrimPrefix(ie.Field, "data"), ie.Reason)
		e.Err = err
		return Summary{}, e
	case errors.Is(err, engine.ErrUnknownInstance) && o.moving(snap):
		return Summary{}, movingError(snap.ID)
	case errors.Is(err, engine.ErrUnexpectedSignal), errors.Is(err, engine.ErrUnknownInstance):
		e := conflict(CodeNotWaiting, fmt.Sprintf("instance %s is not waiting for signal %q (it is %s in state %s)", snap.ID, name, o.instance(snap).Status, snap.State))
		e.Err = err
		return Summary{}, e
	default:
		return Summary{}, Unavailable(err.Error(), err)
	}
}

// Select hands the current step of instance id to agent, a user
// selection: an ErrInvalid naming "agent" when the workflow has no such
// agent, an ErrConflict (CodeRefused, CodeNoActiveRun) when the hand-off
// is refused or no run is under way.
func (o *Ops) Select(ctx context.Context, id, agent, explanation string) (Summary, error) {
	if agent == "" {
		return Summary{}, Invalid("agent", "is required")
	}
	if res, routed := o.route(ctx, Op{Kind: OpSelect, ID: id, Agent: agent, Explanation: explanation}); routed {
		return res.Summary, res.Err
	}
	snap, f, err := o.target(ctx, id)
	if err != nil {
		return Summary{}, err
	}
	if _, declared := f.Workflow.Agent(agent); !declared {
		return Summary{}, Invalid("agent", fmt.Sprintf("names no agent of workflow %s: %q", f.Workflow.Name, agent))
	}
	h, err := f.Engine.Instance(snap.ID)
	if err == nil {
		err = h.Select(ctx, agent, explanation)
	}
	var refusal *handoff.RefusalError
	switch {
	case err == nil:
		return Summary{ID: snap.ID, Workflow: snap.Workflow, Version: snap.Version, Status: StatusOf(h.Result().Status)}, nil
	case errors.As(err, &refusal):
		e := conflict(CodeRefused, err.Error())
		e.Err = err
		return Summary{}, e
	case errors.Is(err, engine.ErrUnknownInstance) && o.moving(snap):
		return Summary{}, movingError(snap.ID)
	case errors.Is(err, engine.ErrNoActiveRun), errors.Is(err, engine.ErrUnknownInstance):
		e := conflict(CodeNoActiveRun, fmt.Sprintf("instance %s has no run under way to hand to %s", snap.ID, agent))
		e.Err = err
		return Summary{}, e
	default:
		return Summary{}, Unavailable(err.Error(), err)
	}
}

// Cancel cancels instance id for reason (may be empty): an ErrConflict
// (CodeFinished) when it has finished.
func (o *Ops) Cancel(ctx context.Context, id, reason string) (Summary, error) {
	if len(reason) > MaxCancelReason {
		return Summary{}, Invalid("reason", fmt.Sprintf("must be at most %d bytes", MaxCancelReason))
	}
	if res, routed := o.route(ctx, Op{Kind: OpCancel, ID: id, Reason: reason}); routed {
		return res.Summary, res.Err
	}
	snap, err := o.snapshot(ctx, id)
	if err != nil {
		return Summary{}, err
	}
	finished := conflict(CodeFinished, fmt.Sprintf("instance %s has already finished (%s)", snap.ID, StatusOf(snap.Status)))
	if snap.Status.Finished() {
		return Summary{}, finished
	}
	f, ok := o.cat.Flow(snap.Hash)
	if !ok {
		return Summary{}, Unavailable("no engine runs the version of instance "+snap.ID, nil)
	}
	h, err := f.Engine.Instance(snap.ID)
	if err == nil {
		err = h.CancelWith(ctx, reason)
	}
	switch {
	case err == nil:
		return Summary{ID: snap.ID, Workflow: snap.Workflow, Version: snap.Version, Status: StatusCancelled}, nil
	case errors.Is(err, engine.ErrUnknownInstance) && o.moving(snap):
		return Summary{}, movingError(snap.ID)
	case errors.Is(err, engine.ErrInstanceFinished), errors.Is(err, engine.ErrUnknownInstance):
		finished.Err = err
		return Summary{}, finished
	default:
		return Summary{}, Unavailable(err.Error(), err)
	}
}
