package natsstore_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/natsserver"
	"github.com/batonhq/baton/natsstore"
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

// TestList_PrefixWithoutIndex opens a prefix written before the listing
// index existed: a read-only store lists it from a full read, and the first
// store opened to write indexes its instances by created time, then id.
func TestList_PrefixWithoutIndex(t *testing.T) {
	srv := startServer(t, natsserver.Config{SyncInterval: lazySync})
	ctx := context.Background()
	w := openStore(t, srv, natsstore.Config{Prefix: "old"})
	for k, id := range []string{"b", "c", "a"} {
		rec := step(id, "w", 1)
		rec.Snapshot.Created = t0.Add(time.Duration(k%2) * time.Minute) // b and a at t0, c a minute later
		require.NoError(t, w.Commit(ctx, rec))
	}
	require.NoError(t, raw(t, srv).DeleteStream(ctx, "old_index"))

	r, err := natsstore.OpenReadOnly(ctx, connect(t, srv), natsstore.Config{Prefix: "old", Timeout: testTimeout})
	require.NoError(t, err)
	require.Equal(t, []string{"c", "a", "b"}, listIDs(t, r, record.ListQuery{Limit: 10}), "read-only, from a full read")
	require.NoError(t, r.Close())
	require.NotContains(t, streamNames(t, raw(t, srv)), "old_index", "a read-only store created the index")

	s := openStore(t, srv, natsstore.Config{Prefix: "old"})
	require.Equal(t, []string{"c", "b", "a"}, listIDs(t, s, record.ListQuery{Limit: 10}), "indexed by created time, then id")
	require.NoError(t, s.Commit(ctx, step("d", "w", 1)))
	require.Equal(t, []string{"d", "c", "b", "a"}, listIDs(t, s, record.ListQuery{Limit: 10}))
	require.Equal(t, []string{"d", "c", "b", "a"}, listIDs(t, w, record.ListQuery{Limit: 10}), "another store of the prefix")
}

// TestList_SharedPrefix lists the instances several stores of one prefix
// started at once, each exactly once.
func TestList_SharedPrefix(t *testing.T) {
	srv := startServer(t, natsserver.Config{SyncInterval: lazySync})
	a := openStore(t, srv, natsstore.Config{Prefix: "shared"})
	b := openStore(t, srv, natsstore.Config{Prefix: "shared"})
	ctx := context.Background()
	var wg sync.WaitGroup
	for k, s := range []*natsstore.Store{a, b} {
		wg.Go(func() {
			for n := range 20 {
				require.NoError(t, s.Commit(ctx, step(fmt.Sprintf("%d-%02d", k, n), "w", 1)))
			}
		})
	}
	wg.Wait()
	seen := map[string]int{}
	q := record.ListQuery{Limit: 7}
	for range 10 {
		page, next, err := b.List(ctx, q)
		require.NoError(t, err)
		for _, snap := range page {
			seen[snap.ID]++
		}
		if next == "" {
			break
		}
		q.After = next
	}
	require.Len(t, seen, 40)
	for id, n := range seen {
		require.Equal(t, 1, n, "instance %s listed %d times", id, n)
	}
}

// BenchmarkList reads the first page of 50, one past the middle, and the
// first page of a workflow that has one instance in ten, from stores of
// 2,000 and 20,000 finished instances: the cost of a page does not grow
// with the store.
func BenchmarkList(b *testing.B) {
	srv := startServer(b, natsserver.Config{SyncInterval: time.Minute})
	for _, total := range []int{2_000, 20_000} {
		s := openStore(b, srv, natsstore.Config{})
		ctx := context.Background()
		var next atomic.Int64
		var wg sync.WaitGroup
		for range 32 {
			wg.Go(func() {
				for k := next.Add(1); k <= int64(total); k = next.Add(1) {
					rec := benchStep(fmt.Sprintf("inst-%06d", k), 1, time.Now())
					rec.Snapshot.Status, rec.Outbox = record.StatusCompleted, nil
					if k%10 == 0 {
						rec.Snapshot.Workflow = "rare"
					}
					if err := s.Commit(ctx, rec); err != nil {
						b.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		q := record.ListQuery{Limit: 50}
		for range total / 100 {
			_, after, err := s.List(ctx, q)
			require.NoError(b, err)
			q.After = after
		}
		middle := q.After
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
					page, _, err := s.List(ctx, c.q)
					if err != nil || len(page) != 50 {
						b.Fatalf("got %d instances, %v; want 50", len(page), err)
					}
				}
			})
		}
		// What a page cost before the index: a read of every instance.
		b.Run(fmt.Sprintf("fullread/total=%d", total), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				all, err := s.Instances(ctx)
				require.NoError(b, err)
				page, _, err := record.ListAll(all, record.ListQuery{Limit: 50})
				if err != nil || len(page) != 50 {
					b.Fatalf("got %d instances, %v; want 50", len(page), err)
				}
			}
		})
	}
}
