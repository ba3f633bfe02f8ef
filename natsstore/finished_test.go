package natsstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/natsstore"
	"github.com/batonhq/baton/record"
)

// finishing is step n of instance id, the one that completes it.
func finishing(id, writer string, n int) record.Step {
	st := step(id, writer, n)
	st.Snapshot.Status, st.Snapshot.State, st.Outbox = record.StatusCompleted, "DONE", nil
	return st
}

// TestStore_Finished: an instance this store finished is answered from
// what it wrote, equal to what a read finds; not while it runs, nor once
// the store has seen or tried another revision, nor after a prune or a
// close.
func TestStore_Finished(t *testing.T) {
	ctx := context.Background()
	s, other := twoStores(t)

	require.NoError(t, s.Commit(ctx, step("i", "s", 1)))
	_, ok := s.Finished("i")
	require.False(t, ok, "a running instance")

	require.NoError(t, s.Commit(ctx, finishing("i", "s", 2)))
	got, ok := s.Finished("i")
	require.True(t, ok, "an instance this store finished")
	read, err := other.Instance(ctx, "i")
	require.NoError(t, err)
	require.Equal(t, read, got)
	_, ok = s.Finished("unknown")
	require.False(t, ok, "an instance this store never wrote")

	// Another store writes the instance again: once s has read that
	// revision, or had a commit refused, it no longer answers its own.
	require.NoError(t, other.Commit(ctx, finishing("i", "other", 3)))
	_, err = s.Instance(ctx, "i")
	require.NoError(t, err)
	_, ok = s.Finished("i")
	require.False(t, ok, "after reading another store's revision")

	require.NoError(t, s.Commit(ctx, finishing("j", "s", 1)))
	_, err = other.Instance(ctx, "j")
	require.NoError(t, err)
	require.NoError(t, other.Commit(ctx, finishing("j", "other", 2)))
	err = s.Commit(ctx, finishing("j", "s", 3))
	require.True(t, errors.Is(err, natsstore.ErrFenced), "got %v, want ErrFenced", err)
	_, ok = s.Finished("j")
	require.False(t, ok, "after a refused commit")

	require.NoError(t, s.Commit(ctx, finishing("k", "s", 1)))
	n, err := s.Prune(ctx, time.Now().Add(time.Hour))
	require.NoError(t, err)
	require.Equal(t, 3, n)
	_, ok = s.Finished("k")
	require.False(t, ok, "after a prune")

	require.NoError(t, s.Commit(ctx, finishing("l", "s", 1)))
	require.NoError(t, s.Close())
	_, ok = s.Finished("l")
	require.False(t, ok, "after Close")
}
