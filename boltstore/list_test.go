package boltstore_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	bolt "go.etcd.io/bbolt"

	"github.com/batonhq/baton/boltstore"
	"github.com/batonhq/baton/record"
)

func listIDs(t *testing.T, l record.Lister, q record.ListQuery) []string {
	t.Helper()
	page, next, err := l.List(context.Background(), q)
	require.NoError(t, err)
	require.Empty(t, next)
	ids := make([]string, len(page))
	for k, snap := range page {
		ids[k] = snap.ID
	}
	return ids
}

// TestList_FileWithoutListing opens a file written before the listing index
// existed: Open indexes its instances by created time, and a read-only
// open, which may not write the index, lists them from a full read.
func TestList_FileWithoutListing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "old.db")
	s, err := boltstore.Open(path)
	require.NoError(t, err)
	for k, id := range []string{"b", "c", "a"} {
		rec := step(id, 1)
		rec.Snapshot.Created = t0.Add(time.Duration(k%2) * time.Minute) // b and a at t0, c a minute later
		require.NoError(t, s.Commit(context.Background(), rec))
	}
	require.NoError(t, s.Close())
	db, err := bolt.Open(path, 0o600, nil)
	require.NoError(t, err)
	require.NoError(t, db.Update(func(tx *bolt.Tx) error {
		require.NoError(t, tx.DeleteBucket([]byte("listing")))
		return tx.DeleteBucket([]byte("listed"))
	}))
	require.NoError(t, db.Close())

	ro, err := boltstore.OpenReadOnly(path)
	require.NoError(t, err)
	require.Equal(t, []string{"c", "a", "b"}, listIDs(t, ro, record.ListQuery{Limit: 10}), "read-only, from a full read")
	require.NoError(t, ro.Close())

	s, err = boltstore.Open(path)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	require.Equal(t, []string{"c", "b", "a"}, listIDs(t, s, record.ListQuery{Limit: 10}), "indexed by created time, then id")
	require.NoError(t, s.Commit(context.Background(), step("d", 1)))
	require.Equal(t, []string{"d", "c", "b", "a"}, listIDs(t, s, record.ListQuery{Limit: 10}))
}

// BenchmarkList reads the first page of 50 and one of 50 past the middle,
// and the first page of a workflow that has one instance in ten, from
// stores of 2,000 and 20,000 finished instances: the cost of a page does
// not grow with the store.
func BenchmarkList(b *testing.B) {
	for _, total := range []int{2_000, 20_000} {
		s := benchStore(b, []boltstore.Option{boltstore.WithNoSync(true), boltstore.WithBatch(256)})
		ctx := context.Background()
		var middle string
		for k := range total {
			rec := step(fmt.Sprintf("inst-%06d", k), 1)
			rec.Snapshot.Status = record.StatusCompleted
			if k%10 == 0 {
				rec.Snapshot.Workflow = "rare"
			}
			require.NoError(b, s.Commit(ctx, rec))
		}
		q := record.ListQuery{Limit: 50}
		for range total / 100 {
			_, next, err := s.(record.Lister).List(ctx, q)
			require.NoError(b, err)
			q.After = next
		}
		middle = q.After
		for _, c := range []struct {
			name string
			q    record.ListQuery
		}{
			{"first", record.ListQuery{Limit: 50}},
			{"middle", record.ListQuery{Limit: 50, After: middle}},
			{"workflow", record.ListQuery{Limit: 50, Workflow: "rare"}},
		} {
			b.Run(fmt.Sprintf("%s/total=%d", c.name, total), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					page, _, err := s.(record.Lister).List(ctx, c.q)
					if err != nil || len(page) != 50 {
						b.Fatalf("got %d instances, %v; want 50", len(page), err)
					}
				}
			})
		}
	}
}
