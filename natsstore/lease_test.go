package natsstore_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/natsserver"
	"github.com/batonhq/baton/natsstore"
	"github.com/batonhq/baton/record"
)

// leasedStores opens two stores with partition leases on one prefix of one
// server, as two engines of a cluster do.
func leasedStores(t *testing.T) (*natsstore.Store, *natsstore.Store) {
	t.Helper()
	srv := startServer(t, natsserver.Config{SyncInterval: lazySync})
	cfg := natsstore.Config{Prefix: "leased", Timeout: testTimeout, Partitions: 4, Shards: 2}
	return openStore(t, srv, cfg), openStore(t, srv, cfg)
}

func requireNotOwner(t *testing.T, err error, partition int) {
	t.Helper()
	require.ErrorIs(t, err, record.ErrNotOwner)
	require.ErrorIs(t, err, natsstore.ErrFenced)
	var ne *natsstore.NotOwnerError
	require.True(t, errors.As(err, &ne), "got %T, want a *NotOwnerError", err)
	require.Equal(t, partition, ne.Partition)
}

func TestStore_Fence_CommitNeedsTheLease(t *testing.T) {
	a, _ := leasedStores(t)
	ctx := context.Background()
	p := a.Partition("i")
	requireNotOwner(t, a.Commit(ctx, step("i", "a", 1)), p)
	_, err := a.Instance(ctx, "i")
	require.ErrorIs(t, err, record.ErrUnknownInstance, "a refused commit wrote nothing")

	require.NoError(t, a.Fence(ctx, p, 1))
	require.True(t, a.Owns(p))
	require.NoError(t, a.Fence(ctx, p, 1), "fencing again under the same token")
	require.NoError(t, a.Commit(ctx, step("i", "a", 1)))
	require.NoError(t, a.Commit(ctx, step("i", "a", 2)))

	a.Unfence(p)
	require.False(t, a.Owns(p))
	requireNotOwner(t, a.Commit(ctx, step("i", "a", 3)), p)
	require.Equal(t, 2, look(t, a, "i").snap.Step)
}

func TestStore_Fence_TakeoverRefusesTheOldOwner(t *testing.T) {
	a, b := leasedStores(t)
	ctx := context.Background()
	p := a.Partition("i")
	require.NoError(t, a.Fence(ctx, p, 10))
	require.NoError(t, a.Commit(ctx, step("i", "a", 1)))
	require.NoError(t, a.Commit(ctx, step("i", "a", 2)))

	// b takes the partition over without reading the instance: a, which
	// still believes it holds the lease and has read nothing since, is
	// refused by the server.
	require.NoError(t, b.Fence(ctx, p, 11))
	require.True(t, a.Owns(p), "a has not learned it yet")
	requireNotOwner(t, a.Commit(ctx, step("i", "a", 3)), p)
	require.False(t, a.Owns(p), "a refused commit ends the lease")
	got := look(t, b, "i")
	require.Equal(t, 2, got.snap.Step)
	require.Equal(t, "a", got.snap.Context["writer"])

	// b continues the instance where a left it, outbox included.
	require.NoError(t, b.Commit(ctx, step("i", "b", 3)))
	got = look(t, b, "i")
	require.Equal(t, 3, got.snap.Step)
	require.Len(t, got.outbox, 1)
	require.Equal(t, "i:3", got.outbox[0].Key)
	require.Len(t, got.history, 3)

	// An older token cannot take the partition back.
	requireNotOwner(t, a.Fence(ctx, p, 10), p)
	require.False(t, a.Owns(p))
	requireNotOwner(t, a.Commit(ctx, step("i", "a", 4)), p)
}

func TestStore_Fence_StaleStepAfterTakingBackIsRefused(t *testing.T) {
	a, b := leasedStores(t)
	ctx := context.Background()
	p := a.Partition("i")
	require.NoError(t, a.Fence(ctx, p, 1))
	require.NoError(t, a.Commit(ctx, step("i", "a", 1)))
	require.NoError(t, b.Fence(ctx, p, 2))
	require.NoError(t, b.Commit(ctx, step("i", "b", 2)))
	require.NoError(t, a.Fence(ctx, p, 3))

	// a takes the partition back, but a step built on what it knew before
	// (commit 2, after its commit 1) does not follow the stored one.
	err := a.Commit(ctx, step("i", "a", 2))
	require.ErrorIs(t, err, natsstore.ErrFenced)
	var ce *natsstore.ConflictError
	require.True(t, errors.As(err, &ce), "got %T, want a *ConflictError", err)
	require.True(t, a.Owns(p), "a conflict on one instance keeps the lease")
	require.Equal(t, "b", look(t, a, "i").snap.Context["writer"])
	require.NoError(t, a.Commit(ctx, step("i", "a", 3)))
	requireNotOwner(t, b.Commit(ctx, step("i", "b", 3)), p) // the step b would write next
}

func TestStore_Fence_NewInstanceNeedsTheLease(t *testing.T) {
	a, b := leasedStores(t)
	ctx := context.Background()
	p := a.Partition("new")
	require.NoError(t, a.Fence(ctx, p, 1))
	require.NoError(t, b.Fence(ctx, p, 2))
	requireNotOwner(t, a.Commit(ctx, step("new", "a", 1)), p)
	require.NoError(t, b.Commit(ctx, step("new", "b", 1)))
	// An instance that exists is not created again.
	require.ErrorIs(t, b.Commit(ctx, step("new", "b", 1)), natsstore.ErrFenced)
}

func TestStore_Fence_Errors(t *testing.T) {
	a, _ := leasedStores(t)
	ctx := context.Background()
	var ne *natsstore.NotOwnerError
	require.ErrorAs(t, a.Fence(ctx, 4, 1), &ne)
	require.ErrorAs(t, a.Fence(ctx, -1, 1), &ne)
	require.False(t, a.Owns(99))
	a.Unfence(99) // nothing to give up

	srv := startServer(t, natsserver.Config{})
	plain := openStore(t, srv, natsstore.Config{})
	require.Zero(t, plain.Partitions())
	var ce *natsstore.ConfigError
	require.ErrorAs(t, plain.Fence(ctx, 0, 1), &ce)
	require.Equal(t, "Partitions", ce.Field)

	_, err := natsstore.Open(ctx, connect(t, srv), natsstore.Config{Partitions: -1})
	require.ErrorAs(t, err, &ce)
	require.Equal(t, "Partitions", ce.Field)
}

func TestStore_Fence_PartitionsSpreadIDs(t *testing.T) {
	a, _ := leasedStores(t)
	seen := map[int]int{}
	for k := range 400 {
		p := a.Partition(string(rune('a'+k%26)) + string(rune('0'+k/26)))
		require.GreaterOrEqual(t, p, 0)
		require.Less(t, p, a.Partitions())
		seen[p]++
	}
	require.Len(t, seen, a.Partitions())
}

func TestStore_AddDeadLetter_SameLetterFromTwoEnginesKeptOnce(t *testing.T) {
	a, b := leasedStores(t)
	ctx := context.Background()
	d := record.DeadLetter{MessageID: "m1", Type: "HANDOFF", From: "engine", To: "seller", Reason: "max_retries",
		Instance: "i", Step: 2, At: t0, Attempts: 3}
	require.NoError(t, a.AddDeadLetter(ctx, d))
	require.NoError(t, b.AddDeadLetter(ctx, d))
	other := d
	other.Reason = "rejected"
	require.NoError(t, b.AddDeadLetter(ctx, other))
	got, err := a.DeadLetters(ctx)
	require.NoError(t, err)
	require.Len(t, got, 2)
	require.Equal(t, "max_retries", got[0].Reason)
	require.Equal(t, "rejected", got[1].Reason)
}

func TestStore_Partition_ChildInItsParents(t *testing.T) {
	srv := startServer(t, natsserver.Config{SyncInterval: lazySync})
	st := openStore(t, srv, natsstore.Config{Prefix: "parts", Timeout: testTimeout, Partitions: 64})
	seen := map[int]bool{}
	for k := range 20 {
		parent := "order-" + string(rune('a'+k))
		p := st.Partition(parent)
		seen[p] = true
		for _, child := range []string{parent + "/KYC/1", parent + "/KYC/1/CHECK/2"} {
			require.Equal(t, p, st.Partition(child), "child %s", child)
		}
	}
	require.Greater(t, len(seen), 5, "20 parents fell in %d partitions: the hash does not spread them", len(seen))
	// Ids of the user's with '/' in them are their own root: tenants'
	// orders spread over the partitions.
	tenant := map[int]bool{}
	for k := range 20 {
		tenant[st.Partition("acme/order-"+string(rune('a'+k)))] = true
	}
	require.Greater(t, len(tenant), 5, "20 ids under one tenant fell in %d partitions", len(tenant))
}

func TestOpen_RefusesAStoreWithoutTheLeasesOfItsPrefix(t *testing.T) {
	srv := startServer(t, natsserver.Config{SyncInterval: lazySync})
	ctx := context.Background()
	// A prefix first used without partitions takes them later.
	openStore(t, srv, natsstore.Config{Prefix: "p", Timeout: testTimeout})
	openStore(t, srv, natsstore.Config{Prefix: "p", Timeout: testTimeout, Partitions: 8})
	// From then on a store without them, or with another number, would
	// commit beside the engines holding the leases: refused.
	for _, parts := range []int{0, 16} {
		_, err := natsstore.Open(ctx, connect(t, srv), natsstore.Config{Prefix: "p", Timeout: testTimeout, Partitions: parts})
		var ce *natsstore.ConfigError
		require.ErrorAs(t, err, &ce, "opened with %d partitions", parts)
		require.Equal(t, "Partitions", ce.Field)
		require.Contains(t, err.Error(), "lease 8 partitions")
	}
	openStore(t, srv, natsstore.Config{Prefix: "p", Timeout: testTimeout, Partitions: 8})
}
