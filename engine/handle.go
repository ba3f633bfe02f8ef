package engine

import (
	"context"
	"errors"
	"maps"
	"time"

	"github.com/batonhq/baton/record"
	"github.com/batonhq/baton/registry"
)

// Instance is the handle of one workflow instance.
type Instance struct{ inst *instance }

// Result is how an instance ended (or where it is, while it runs).
type Result struct {
	ID      string
	Status  record.Status
	State   string          // the current state; the terminal state once completed
	Outcome string          // the terminal state reached, when completed
	Waiting string          // the wait state the instance waits in for a signal; "" when it does not wait
	Since   time.Time       // when the wait under way began (zero when not waiting)
	Child   string          // the child instance a workflow state waits for; "" when none
	Steps   int             // agent runs so far
	Context map[string]any  // the instance context
	Usage   registry.Ledger // what its runs used: the totals, each agent's, the current visit's
	Err     error           // why it failed or was cancelled
}

// ID returns the instance id.
func (h *Instance) ID() string { return h.inst.id }

// Done is closed when the instance completes, fails or is cancelled.
func (h *Instance) Done() <-chan struct{} { return h.inst.doneChan() }

// Wait blocks until the instance finishes or ctx ends, and returns its result.
func (h *Instance) Wait(ctx context.Context) (Result, error) {
	if ctx == nil {
		return h.Result(), errors.New("engine: nil context")
	}
	select {
	case <-h.inst.doneChan():
		return h.Result(), nil
	case <-ctx.Done():
		return h.Result(), ctx.Err()
	}
}

// Result returns the instance's current result.
func (h *Instance) Result() Result {
	i := h.inst
	i.mu.Lock()
	defer i.mu.Unlock()
	res := Result{
		ID: i.id, Status: i.status, State: i.state.Name, Outcome: i.outcome,
		Steps: i.step, Context: maps.Clone(i.context), Usage: i.usage(), Err: i.err,
	}
	if !i.status.Finished() {
		switch v := i.work.(type) {
		case *waiting:
			res.Waiting, res.Since = v.state.Name, v.since
		case *childRun:
			res.Child = v.id
		}
	}
	return res
}

// History returns the instance's committed history.
func (h *Instance) History(ctx context.Context) ([]record.Entry, error) {
	if ctx == nil {
		return nil, errors.New("engine: nil context")
	}
	return h.inst.e.store.History(ctx, h.inst.id)
}

// Cancel stops the instance where it is. A handler still running is
// cancelled through its context; its reply will be recorded as late.
func (h *Instance) Cancel(ctx context.Context) error {
	return h.CancelWith(ctx, "")
}

// CancelWith is Cancel with the reason, in words, that the instance's
// record (Snapshot.CancelReason) and history keep.
func (h *Instance) CancelWith(ctx context.Context, reason string) error {
	if ctx == nil {
		return errors.New("engine: nil context")
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return h.inst.cancel(context.WithoutCancel(ctx), reason)
}
