package ops

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/record"
	"github.com/batonhq/baton/wire"
)

// StartRequest is a start of an instance.
type StartRequest struct {
	// Workflow is the workflow's name.
	Workflow string
	// Version is the version to start on; 0 for the current one.
	Version int
	// ID is the instance's id; "" lets the engine (or the Router) choose
	// one. A start with an id the store has is idempotent: it answers the
	// existing instance when the input is the same, an ErrConflict when
	// it is not.
	ID    string
	Input map[string]any
	// Traceparent, a W3C trace context, makes the instance's trace a part
	// of the caller's.
	Traceparent string
}

// Start starts an instance; created is false when a start with the same
// id made it before.
func (o *Ops) Start(ctx context.Context, req StartRequest) (sum Summary, created bool, err error) {
	if req.Version < 0 {
		return Summary{}, false, Invalid("version", "must be 1 or more")
	}
	f, err := o.Pick(req.Workflow, req.Version)
	if err != nil {
		return Summary{}, false, err
	}
	if req.ID == "" && o.router != nil {
		// Among several processes the id decides the engine: one this
		// process runs.
		req.ID = o.router.NewID()
	}
	if req.ID != "" {
		if res, routed := o.route(ctx, Op{Kind: OpStart, ID: req.ID, Start: req}); routed {
			return res.Summary, res.Created, res.Err
		}
		if sum, found, err := o.existing(ctx, req.ID, req.Workflow, req.Input); err != nil || found {
			return sum, false, err
		}
	}
	if o.draining() {
		return Summary{}, false, retry(Unavailable("the server is shutting down: start the instance again on the next server", nil))
	}
	ctx, cancel := context.WithTimeout(wire.ContextWithTraceparent(ctx, req.Traceparent), o.startWait)
	defer cancel()
	var h *engine.Instance
	if req.ID != "" {
		h, err = f.Engine.StartID(ctx, req.ID, req.Input)
	} else {
		h, err = f.Engine.Start(ctx, req.Input)
	}
	var (
		inputErr *engine.InputError
		idErr    *engine.IDError
	)
	switch {
	case err == nil:
	case errors.As(err, &inputErr):
		return Summary{}, false, Invalid(inputErr.Field, inputErr.Reason)
	case errors.As(err, &idErr):
		return Summary{}, false, Invalid("id", idErr.Reason)
	case errors.Is(err, engine.ErrDuplicateInstance):
		// Another start with the same id won the race: answer as a retry.
		if sum, found, err := o.existing(ctx, req.ID, req.Workflow, req.Input); found || err != nil {
			return sum, false, err
		}
		if h, herr := f.Engine.Instance(req.ID); herr == nil {
			return Summary{ID: h.ID(), Workflow: req.Workflow, Version: f.Workflow.Version, Status: StatusOf(h.Result().Status)}, false, nil
		}
		return Summary{}, false, conflict(CodeIDTaken, "instance id "+req.ID+" is taken")
	case errors.Is(err, engine.ErrOverloaded):
		return Summary{}, false, retry(Unavailable(err.Error(), err))
	default:
		return Summary{}, false, Unavailable("the instance could not be started: "+err.Error(), err)
	}
	return Summary{ID: h.ID(), Workflow: req.Workflow, Version: f.Workflow.Version, Status: StatusOf(h.Result().Status)}, true, nil
}

// existing is the instance a start with a chosen id already made: found
// when the store has it; an ErrConflict when it belongs to another
// workflow, or was started with other input (a retry sends the same input:
// another input under the same id is a mistake the client must hear of).
func (o *Ops) existing(ctx context.Context, id, workflow string, input map[string]any) (Summary, bool, error) {
	snap, err := o.store.Instance(ctx, id)
	switch {
	case errors.Is(err, record.ErrUnknownInstance):
		return Summary{}, false, nil
	case err != nil:
		return Summary{}, false, storeError(err)
	case snap.Workflow != workflow:
		return Summary{}, false, conflict(CodeIDTaken, fmt.Sprintf("instance id %s is taken by an instance of workflow %s", id, snap.Workflow))
	case !sameInput(snap.Input, input):
		e := conflict(CodeConflict, fmt.Sprintf("instance %s was started with other input: a start with the same id must send the same input", id))
		e.Field = "input"
		return Summary{}, false, e
	}
	return summaryOf(snap), true, nil
}

// route passes op to the Router, if any.
func (o *Ops) route(ctx context.Context, op Op) (Result, bool) {
	if o.router == nil {
		return Result{}, false
	}
	return o.router.Route(ctx, op)
}

// sameInput reports whether two start inputs are the same JSON: numbers
// compare by value whatever their Go type, and no input is an empty one.
func sameInput(a, b map[string]any) bool {
	return reflect.DeepEqual(asJSON(a), asJSON(b))
}

func asJSON(m map[string]any) any {
	if len(m) == 0 {
		return map[string]any{}
	}
	data, err := json.Marshal(m)
	if err != nil {
		return m
	}
	var v any
	if json.Unmarshal(data, &v) != nil {
		return m
	}
	return v
}
