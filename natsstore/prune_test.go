package natsstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/natsserver"
	"github.com/batonhq/baton/natsstore"
	"github.com/batonhq/baton/record"
)

func TestStore_Prune(t *testing.T) {
	srv := startServer(t, natsserver.Config{SyncInterval: lazySync})
	s := openStore(t, srv, natsstore.Config{Timeout: testTimeout})
	ctx := context.Background()

	n, err := s.Prune(ctx, t0.Add(time.Hour))
	require.NoError(t, err)
	require.Zero(t, n, "an empty store has nothing to prune")

	cutoff := t0.Add(time.Hour)
	instances := []struct {
		id     string
		status record.Status
		age    time.Duration // Updated = cutoff - age
		pruned bool
	}{
		{"old-completed", record.StatusCompleted, time.Minute, true},
		{"old-failed", record.StatusFailed, time.Minute, true},
		{"old-canceled", record.StatusCanceled, time.Nanosecond, true},
		{"old-running", record.StatusRunning, time.Hour, false},
		{"new-completed", record.StatusCompleted, -time.Minute, false},
		{"at-cutoff", record.StatusCompleted, 0, false}, // before, not at
	}
	for _, in := range instances {
		for k := 1; k <= 3; k++ {
			st := step(in.id, "a", k)
			if k == 3 {
				st.Snapshot.Status = in.status
				st.Snapshot.Updated = cutoff.Add(-in.age)
			}
			require.NoError(t, s.Commit(ctx, st))
		}
	}
	// A dead letter of a pruned instance stays: dead letters are not
	// instance records.
	require.NoError(t, s.AddDeadLetter(ctx, record.DeadLetter{MessageID: "m", Instance: "old-failed", At: t0}))

	n, err = s.Prune(ctx, cutoff)
	require.NoError(t, err)
	require.Equal(t, 3, n)

	all, err := s.Instances(ctx)
	require.NoError(t, err)
	var ids []string
	for _, snap := range all {
		ids = append(ids, snap.ID)
	}
	require.Equal(t, []string{"at-cutoff", "new-completed", "old-running"}, ids)
	for _, in := range instances {
		_, ierr := s.Instance(ctx, in.id)
		_, herr := s.History(ctx, in.id)
		_, oerr := s.Outbox(ctx, in.id)
		if in.pruned {
			for _, err := range []error{ierr, herr, oerr} {
				require.ErrorIs(t, err, record.ErrUnknownInstance, "pruned instance %s", in.id)
			}
			continue
		}
		require.NoError(t, ierr)
		h, err := s.History(ctx, in.id)
		require.NoError(t, err)
		require.Len(t, h, 3, "kept instance %s keeps its history", in.id)
	}
	dead, err := s.DeadLetters(ctx)
	require.NoError(t, err)
	require.Len(t, dead, 1)

	// Pruning again finds nothing; an id pruned can start afresh.
	n, err = s.Prune(ctx, cutoff)
	require.NoError(t, err)
	require.Zero(t, n)
	require.NoError(t, s.Commit(ctx, step("old-failed", "a", 1)))
	h, err := s.History(ctx, "old-failed")
	require.NoError(t, err)
	require.Len(t, h, 1)
}
