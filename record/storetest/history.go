package storetest

import (
	"context"
	"slices"
	"testing"

	"github.com/batonhq/baton/record"
	"github.com/stretchr/testify/require"
)

func testHistoryOrder(t *testing.T, s record.Store) {
	sizes := []int{1, 0, 2, 5, 1, 3}
	var want []record.Entry
	seq := 0
	var last record.Snapshot
	for step := 1; step <= 300; step++ {
		entries := stepEntries(&seq, step, sizes[step%len(sizes)])
		last = fullSnapshot("i-1", step)
		commit(t, s, last, entries...)
		want = append(want, entries...)
	}
	requireHistory(t, history(t, s, "i-1"), want)
	requireSnapshot(t, instance(t, s, "i-1"), last)
}

// testEntriesReused does what the engine does: it clears the slice it
// committed and builds the next step's entries in the same backing array.
func testEntriesReused(t *testing.T, s record.Store) {
	ctx := context.Background()
	buf := make([]record.Entry, 0, 8)
	seq := 0
	var want []record.Entry
	for step := 1; step <= 3; step++ {
		again := seq
		buf = append(buf[:0], stepEntries(&seq, step, 3)...)
		want = append(want, stepEntries(&again, step, 3)...)
		require.NoError(t, s.Commit(ctx, record.Step{Snapshot: fullSnapshot("i-1", step), Entries: buf}))
		clear(buf)
		full := buf[:cap(buf)]
		for i := range full {
			full[i] = record.Entry{Seq: -1, Kind: "garbage", Agent: "overwritten"}
		}
	}
	requireHistory(t, history(t, s, "i-1"), want)
}

func testInstancesSorted(t *testing.T, s record.Store) {
	ids := []string{"b", "a", "B", "a-1", "10", "9", "ab", "Z", "é", "a b", "a/b", "0"}
	latest := map[string]record.Snapshot{}
	seq := 0
	for round := 1; round <= 3; round++ {
		for i, id := range ids {
			if (i+round)%3 == 0 && round > 1 {
				continue // some instances stop early: their earlier snapshot must stay
			}
			snap := fullSnapshot(id, round)
			commit(t, s, snap, stepEntries(&seq, round, 1)...)
			latest[id] = snap
		}
	}
	want := slices.Sorted(slices.Values(ids))
	got := instances(t, s)
	gotIDs := make([]string, len(got))
	for i, g := range got {
		gotIDs[i] = g.ID
	}
	require.Equal(t, want, gotIDs, "ids")
	for _, g := range got {
		requireSnapshot(t, g, latest[g.ID])
	}
}

// testInstancesIsolated uses ids that are prefixes of one another, so that a
// store keying history by id and sequence must not mix them.
func testInstancesIsolated(t *testing.T, s record.Store) {
	ids := []string{"a", "ab", "a\x00", "a\x00b", "abc", "b"}
	want := map[string][]record.Entry{}
	seq := 0
	for step := 1; step <= 4; step++ {
		for _, id := range ids {
			entries := stepEntries(&seq, step, 2)
			entries[0].Agent = id
			commit(t, s, fullSnapshot(id, step), entries...)
			want[id] = append(want[id], entries...)
		}
	}
	for _, id := range ids {
		requireHistory(t, history(t, s, id), want[id])
		require.Equal(t, id, instance(t, s, id).ID)
	}
	require.Len(t, instances(t, s), len(ids))
}

// testReturnedValuesAreCopies checks that a caller changing what a read
// returned does not change what the store holds.
func testReturnedCopies(t *testing.T, s record.Store) {
	seq := 0
	entries := stepEntries(&seq, 1, 3)
	snap := fullSnapshot("i-1", 1)
	commit(t, s, snap, entries...)

	got := history(t, s, "i-1")
	for i := range got {
		got[i] = record.Entry{Kind: "changed"}
	}
	all := instances(t, s)
	all[0].State = "changed"
	one := instance(t, s, "i-1")
	one.State = "changed"

	requireHistory(t, history(t, s, "i-1"), entries)
	requireSnapshot(t, instance(t, s, "i-1"), snap)
	requireSnapshot(t, instances(t, s)[0], snap)
}
