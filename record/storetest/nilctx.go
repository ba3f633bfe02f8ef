package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/batonhq/baton/record"
	"github.com/stretchr/testify/require"
)

// testNilContext gives every method a nil context: each returns
// record.ErrNilContext, none panics, and the store is left as it was.
func testNilContext(t *testing.T, s record.Store) {
	var nilCtx context.Context
	snap := record.Snapshot{ID: "kept", Workflow: "w", State: "A", Status: record.StatusRunning, Created: base, Updated: base}
	commit(t, s, snap)
	calls := map[string]func() error{
		"Commit": func() error {
			return s.Commit(nilCtx, record.Step{Snapshot: record.Snapshot{ID: "new", Workflow: "w", State: "A", Created: base, Updated: base}})
		},
		"Instance":  func() error { _, err := s.Instance(nilCtx, "kept"); return err },
		"History":   func() error { _, err := s.History(nilCtx, "kept"); return err },
		"Instances": func() error { _, err := s.Instances(nilCtx); return err },
		"Outbox":    func() error { _, err := s.Outbox(nilCtx, "kept"); return err },
		"AddDeadLetter": func() error {
			return s.AddDeadLetter(nilCtx, record.DeadLetter{MessageID: "m", Reason: "rejected", At: base})
		},
		"DeadLetters": func() error { _, err := s.DeadLetters(nilCtx); return err },
		"SaveWorkflow": func() error {
			return s.SaveWorkflow(nilCtx, record.WorkflowSource{Hash: "h", Name: "w", Source: []byte("x")})
		},
		"Workflow": func() error { _, err := s.Workflow(nilCtx, "h"); return err },
	}
	if p, ok := s.(record.Pruner); ok {
		calls["Prune"] = func() error { _, err := p.Prune(nilCtx, base.Add(time.Hour)); return err }
	}
	if l, ok := s.(record.Lister); ok {
		calls["List"] = func() error { _, _, err := l.List(nilCtx, record.ListQuery{}); return err }
	}
	for name, call := range calls {
		var err error
		require.NotPanics(t, func() { err = call() }, name)
		require.ErrorIs(t, err, record.ErrNilContext, name)
	}
	ctx := context.Background()
	got, err := s.Instances(ctx)
	require.NoError(t, err)
	require.Len(t, got, 1, "a call with a nil context changed the instances")
	dead, err := s.DeadLetters(ctx)
	require.NoError(t, err)
	require.Empty(t, dead, "a call with a nil context added a dead letter")
	_, err = s.Workflow(ctx, "h")
	require.ErrorIs(t, err, record.ErrUnknownWorkflow, "a call with a nil context saved a workflow")
}
