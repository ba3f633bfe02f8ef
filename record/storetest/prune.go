package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/batonhq/baton/record"
	"github.com/stretchr/testify/require"
)

// testPrune deletes the finished instances updated before a cutoff, with
// their history and outbox, and nothing else: not a running instance however
// old, not one updated at the cutoff or after.
func testPrune(t *testing.T, s record.Store) {
	p, ok := s.(record.Pruner)
	require.True(t, ok, "the store does not implement record.Pruner")
	ctx := context.Background()
	cutoff := base.Add(4 * time.Hour)
	cases := []struct {
		id      string
		status  record.Status
		updated time.Time
		pruned  bool
	}{
		{"completed-old", record.StatusCompleted, base.Add(time.Hour), true},
		{"failed-old", record.StatusFailed, base.Add(2 * time.Hour), true},
		{"canceled-old", record.StatusCanceled, cutoff.Add(-time.Nanosecond), true},
		{"running-old", record.StatusRunning, base, false},
		{"completed-at-cutoff", record.StatusCompleted, cutoff, false},
		{"completed-new", record.StatusCompleted, cutoff.Add(time.Hour), false},
	}
	seq := 0
	for _, c := range cases {
		snap := fullSnapshot(c.id, 1)
		snap.Status, snap.Updated = c.status, c.updated
		commitRecord(t, s, record.Step{Snapshot: snap, Entries: stepEntries(&seq, 1, 2), Outbox: []record.Outgoing{item(c.id, 1, c.id+":1")}})
	}

	n, err := p.Prune(ctx, cutoff)
	require.NoError(t, err)
	require.Equal(t, 3, n, "got %d pruned, want 3", n)
	var kept []string
	for _, snap := range instances(t, s) {
		kept = append(kept, snap.ID)
	}
	require.Equal(t, []string{"completed-at-cutoff", "completed-new", "running-old"}, kept)
	for _, c := range cases {
		if !c.pruned {
			require.Len(t, history(t, s, c.id), 2, "history of kept %s", c.id)
			require.Len(t, outbox(t, s, c.id), 1, "outbox of kept %s", c.id)
			continue
		}
		_, err := s.Instance(ctx, c.id)
		require.True(t, errorsIsUnknown(err), "instance of pruned %s: got %v, want ErrUnknownInstance", c.id, err)
		_, err = s.History(ctx, c.id)
		require.True(t, errorsIsUnknown(err), "history of pruned %s: got %v, want ErrUnknownInstance", c.id, err)
		_, err = s.Outbox(ctx, c.id)
		require.True(t, errorsIsUnknown(err), "outbox of pruned %s: got %v, want ErrUnknownInstance", c.id, err)
	}

	// A new instance under a pruned id starts from nothing: no history or
	// outbox item of the pruned one is left behind.
	snap := fullSnapshot("completed-old", 1)
	snap.Status = record.StatusRunning
	commitRecord(t, s, record.Step{Snapshot: snap})
	require.Empty(t, history(t, s, "completed-old"), "history under a pruned id")
	require.Empty(t, outbox(t, s, "completed-old"), "outbox under a pruned id")

	n, err = p.Prune(ctx, cutoff)
	require.NoError(t, err)
	require.Equal(t, 0, n, "got %d pruned by a second prune, want 0", n)
}
