package webview

import (
	"context"
	"errors"
	"net/http"

	"github.com/batonhq/baton/ops"
	"github.com/batonhq/baton/record"
	"github.com/batonhq/baton/rules"
)

// OpsBackend is every method of a Backend but Watch, over an operations
// layer: the view of a server and of a Go program's own engines (Local)
// read and act through it, each adding its own Watch.
type OpsBackend struct {
	Ops *ops.Ops
	// Progress, when not nil, gives an unfinished instance the progress of
	// its runs under way.
	Progress *ProgressLog
}

// viewError is an error of the operations layer as the view takes it: an
// unknown instance or version is ErrNotFound, invalid data and conflicts
// are refusals shown on the page, others are failures.
func viewError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ops.ErrNotFound):
		return ErrNotFound
	case errors.Is(err, ops.ErrInvalid):
		return &RefusedError{Status: http.StatusBadRequest, Reason: err.Error()}
	case errors.Is(err, ops.ErrConflict):
		return &RefusedError{Status: http.StatusConflict, Reason: err.Error()}
	}
	return err
}

// instanceOf is an instance as the view shows it.
func instanceOf(in ops.Instance) Instance {
	out := Instance{
		ID: in.ID, Workflow: in.Workflow, Version: in.Version, Hash: in.Hash, Status: in.Status, State: in.State,
		Step: in.Step, Outcome: in.Outcome, CancelReason: in.CancelReason, Context: in.Context, Created: in.Created, Updated: in.Updated,
		Usage: in.Usage.Ledger(), OnLimit: in.OnLimit, Pending: in.Pending,
	}
	if in.Error != nil {
		out.Error = *in.Error
	}
	return out
}

// Instances implements Backend: newest first, in the order the store took
// their starts, paged by the store, so that a page costs what it shows
// rather than the number of instances kept.
func (b OpsBackend) Instances(ctx context.Context, f Filter) (Page, error) {
	p, err := b.Ops.List(ctx, ops.ListQuery{
		Workflow: f.Workflow, Status: f.Status, State: f.State, Version: f.Version, IDPrefix: f.IDPrefix,
		Since: f.Since, Until: f.Until, Cursor: f.Cursor, Limit: min(max(f.Limit, 1), ops.MaxLimit),
	})
	if err != nil {
		return Page{}, viewError(err)
	}
	page := Page{Instances: make([]Instance, len(p.Instances)), Next: p.Next}
	for k, in := range p.Instances {
		page.Instances[k] = instanceOf(in)
	}
	return page, nil
}

// Instance implements Backend.
func (b OpsBackend) Instance(ctx context.Context, id string) (Instance, error) {
	in, err := b.Ops.Get(ctx, id)
	if err != nil {
		return Instance{}, viewError(err)
	}
	out := instanceOf(in)
	if !out.Finished() && b.Progress != nil {
		out.Progress = b.Progress.Of(id)
	}
	if out.NoConsumer, err = b.Ops.NoConsumer(ctx, in); err != nil {
		return Instance{}, viewError(err)
	}
	return out, nil
}

// History implements Backend.
func (b OpsBackend) History(ctx context.Context, id string) ([]record.Entry, error) {
	entries, err := b.Ops.History(ctx, id)
	return entries, viewError(err)
}

// Outbox implements Backend.
func (b OpsBackend) Outbox(ctx context.Context, id string) ([]record.Outgoing, error) {
	out, err := b.Ops.Outbox(ctx, id)
	return out, viewError(err)
}

// DeadLetters implements Backend: newest first, paged by sequence number.
func (b OpsBackend) DeadLetters(ctx context.Context, f DeadLetterFilter) (DeadLetterPage, error) {
	p, err := b.Ops.DeadLetters(ctx, ops.DeadLetterQuery{Reason: f.Reason, Cursor: f.Cursor, Limit: min(max(f.Limit, 1), ops.MaxLimit)})
	if err != nil {
		return DeadLetterPage{}, viewError(err)
	}
	return DeadLetterPage{DeadLetters: p.DeadLetters, Next: p.Next}, nil
}

// Workflows implements Backend: each workflow's versions with the number
// of instances the store has of each.
func (b OpsBackend) Workflows(ctx context.Context) ([]Workflow, error) {
	counts, err := b.Ops.InstanceCounts(ctx)
	if err != nil {
		return nil, err
	}
	var out []Workflow
	for _, w := range b.Ops.Workflows() {
		wf := Workflow{Name: w.Name, Description: w.Description}
		for _, f := range w.Versions {
			wf.Versions = append(wf.Versions, Version{Def: f.Workflow, Current: f.Current, Instances: counts[f.Workflow.Hash]})
		}
		out = append(out, wf)
	}
	return out, nil
}

// Definition implements Backend.
func (b OpsBackend) Definition(_ context.Context, hash string) (*rules.Workflow, error) {
	def, err := b.Ops.Definition(hash)
	return def, viewError(err)
}

// Signal implements Backend.
func (b OpsBackend) Signal(ctx context.Context, id, name string, data map[string]any) error {
	_, err := b.Ops.Signal(ctx, id, name, data)
	return viewError(err)
}

// Select implements Backend.
func (b OpsBackend) Select(ctx context.Context, id, agent, explanation string) error {
	_, err := b.Ops.Select(ctx, id, agent, explanation)
	return viewError(err)
}

// Cancel implements Backend.
func (b OpsBackend) Cancel(ctx context.Context, id, reason string) error {
	_, err := b.Ops.Cancel(ctx, id, reason)
	return viewError(err)
}
