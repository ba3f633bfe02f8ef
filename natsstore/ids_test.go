package natsstore_test

import (
	"context"
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/natsserver"
	"github.com/batonhq/baton/natsstore"
	"github.com/batonhq/baton/record"
)

// No id, however long, makes a subject the NATS protocol cannot carry: an
// id longer than record.MaxIDLen is stored under a hash, read back whole,
// listed, pruned and read again by another store of the prefix, beside
// ids that keep the subjects earlier releases wrote them on.
func TestStore_LongIDs(t *testing.T) {
	srv := startServer(t, natsserver.Config{SyncInterval: lazySync})
	cfg := natsstore.Config{Prefix: "long", Timeout: testTimeout}
	s := openStore(t, srv, cfg)
	ctx := context.Background()
	longest := strings.Repeat("é", record.MaxIDLen/2)
	all := []string{
		"order-7",
		longest,
		longest + "/CHILD/1", // a child workflow's instance under the longest id
		strings.Repeat("x", 3000),
		strings.Repeat("y", 100<<10),
	}
	for _, id := range all {
		require.NoError(t, s.Commit(ctx, step(id, "a", 1)), "id of %d bytes", len(id))
		require.NoError(t, s.Commit(ctx, step(id, "a", 2)), "id of %d bytes", len(id))
		require.LessOrEqual(t, len(s.Subject(id)), len(s.Prefix())+1500, "the subject of an id of %d bytes", len(id))
		v := look(t, s, id)
		require.Equal(t, id, v.snap.ID)
		require.Equal(t, 2, v.snap.Step)
		require.Len(t, v.history, 2)
		require.Len(t, v.outbox, 1)
	}
	// Ids of at most record.MaxIDLen bytes keep their subjects.
	for _, id := range all[:2] {
		require.True(t, strings.HasSuffix(s.Subject(id), "."+base64.RawURLEncoding.EncodeToString([]byte(id))), "the subject of an id of %d bytes", len(id))
	}
	// Another store of the prefix (a restart) lists and reads them all.
	other := openStore(t, srv, cfg)
	snaps, err := other.Instances(ctx)
	require.NoError(t, err)
	require.ElementsMatch(t, all, ids(snaps))
	for _, id := range all {
		require.Equal(t, 2, look(t, other, id).snap.Step)
		require.NoError(t, other.Commit(ctx, step(id, "b", 3)), "id of %d bytes", len(id))
	}
	// A read by an id is of that id only: an id its hashed token does not
	// belong to finds nothing.
	_, err = other.Instance(ctx, strings.Repeat("x", 3001))
	require.ErrorIs(t, err, record.ErrUnknownInstance)

	// Prune finds the finished ones by their records.
	for _, id := range all[2:4] {
		done := step(id, "b", 4)
		done.Snapshot.Status = record.StatusCompleted
		require.NoError(t, other.Commit(ctx, done))
	}
	n, err := other.Prune(ctx, time.Now())
	require.NoError(t, err)
	require.Equal(t, 2, n)
	snaps, err = s.Instances(ctx)
	require.NoError(t, err)
	require.ElementsMatch(t, []string{all[0], all[1], all[4]}, ids(snaps))
}

// ids are the ids of snaps.
func ids(snaps []record.Snapshot) []string {
	out := make([]string, len(snaps))
	for k, snap := range snaps {
		out[k] = snap.ID
	}
	return out
}

// An earlier release wrote an id of 3,000 characters in full in its
// subject, where no read by id looks now: the list leaves it out (with an
// error logged) and keeps the others.
func TestStore_LongIDOfAnEarlierReleaseIsLeftOut(t *testing.T) {
	srv := startServer(t, natsserver.Config{SyncInterval: lazySync})
	s := openStore(t, srv, natsstore.Config{Prefix: "baton", Timeout: testTimeout, Shards: 1})
	ctx := context.Background()
	require.NoError(t, s.Commit(ctx, step("good", "a", 1)))
	id := strings.Repeat("x", 3000)
	_, err := raw(t, srv).Publish(ctx, "baton.step.0."+base64.RawURLEncoding.EncodeToString([]byte(id)), []byte(`{"format":1,"snapshot":{"id":"`+id+`"}}`))
	require.NoError(t, err)
	snaps, err := s.Instances(ctx)
	require.NoError(t, err)
	require.Equal(t, []string{"good"}, ids(snaps))
}

// A child workflow's instance under the longest parent id has a hashed
// token, and is in its parent's partition: committed under the parent's
// lease, fenced off with it when another engine takes the partition over.
func TestStore_Fence_ChildOfTheLongestIDFollowsItsParent(t *testing.T) {
	a, b := leasedStores(t)
	ctx := context.Background()
	parent := strings.Repeat("p", record.MaxIDLen)
	child := parent + "/KYC/1"
	p := a.Partition(parent)
	require.Equal(t, p, a.Partition(child))
	require.NoError(t, a.Fence(ctx, p, 1))
	require.NoError(t, a.Commit(ctx, step(parent, "a", 1)))
	require.NoError(t, a.Commit(ctx, step(child, "a", 1)))

	require.NoError(t, b.Fence(ctx, p, 2))
	requireNotOwner(t, a.Commit(ctx, step(child, "a", 2)), p)
	require.Equal(t, 1, look(t, b, child).snap.Step)
	require.NoError(t, b.Commit(ctx, step(child, "b", 2)))
	require.Equal(t, 2, look(t, b, child).snap.Step)
}
