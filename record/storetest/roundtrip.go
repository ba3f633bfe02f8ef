package storetest

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/record"
	"github.com/stretchr/testify/require"
)

func testEmptyStore(t *testing.T, s record.Store) {
	ctx := context.Background()
	require.Empty(t, instances(t, s))
	_, err := s.Instance(ctx, "missing")
	require.ErrorIs(t, err, record.ErrUnknownInstance)
	_, err = s.History(ctx, "missing")
	require.ErrorIs(t, err, record.ErrUnknownInstance)
}

func testUnknownAmongKnown(t *testing.T, s record.Store) {
	ctx := context.Background()
	seq := 0
	for _, id := range []string{"a", "aaa", "b"} {
		commit(t, s, fullSnapshot(id, 1), stepEntries(&seq, 1, 2)...)
	}
	for _, id := range []string{"aa", "", "A", "ab", "c"} {
		_, err := s.Instance(ctx, id)
		require.ErrorIs(t, err, record.ErrUnknownInstance, "instance %q", id)
		_, err = s.History(ctx, id)
		require.ErrorIs(t, err, record.ErrUnknownInstance, "history %q", id)
	}
}

func testSnapshotRoundTrip(t *testing.T, s record.Store) {
	want := fullSnapshot("i-1", 4)
	requireAllFieldsSet(t, want)
	commit(t, s, want)
	requireSnapshot(t, instance(t, s, "i-1"), want)
	all := instances(t, s)
	require.Len(t, all, 1)
	requireSnapshot(t, all[0], want)
}

func testEntryRoundTrip(t *testing.T, s record.Store) {
	full := fullEntry(1, 1)
	requireAllFieldsSet(t, full)
	minimal := record.Entry{Seq: 2, Time: base, Kind: record.KindStarted}
	want := []record.Entry{full, minimal}
	commit(t, s, fullSnapshot("i-1", 1), want...)
	requireHistory(t, history(t, s, "i-1"), want)
}

func testTimes(t *testing.T, s record.Store) {
	india := time.FixedZone("IST", 5*3600+1800)
	times := []time.Time{
		base,
		time.Date(2025, 1, 1, 0, 0, 0, 1, time.UTC),
		time.Date(1999, 12, 31, 23, 59, 59, 999999999, time.UTC),
		time.Date(2025, 6, 1, 12, 0, 0, 123456789, india),
		time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC),
		{}, // never set
	}
	entries := make([]record.Entry, len(times))
	for i, tm := range times {
		entries[i] = record.Entry{Seq: i + 1, Time: tm, Kind: record.KindTransition}
	}
	snap := fullSnapshot("i-1", 1)
	snap.Created, snap.Updated = times[3], times[2]
	commit(t, s, snap, entries...)

	got := history(t, s, "i-1")
	require.Len(t, got, len(times))
	for i, tm := range times {
		require.True(t, got[i].Time.Equal(tm), "entry %d: got %v, want %v", i, got[i].Time, tm)
		require.Equal(t, tm.Nanosecond(), got[i].Time.Nanosecond(), "entry %d nanoseconds", i)
		if tm.Location() == time.UTC {
			require.Equal(t, time.UTC, got[i].Time.Location(), "entry %d: a UTC time comes back in UTC", i)
		}
	}
	gs := instance(t, s, "i-1")
	require.True(t, gs.Created.Equal(snap.Created), "created: got %v, want %v", gs.Created, snap.Created)
	require.True(t, gs.Updated.Equal(snap.Updated), "updated: got %v, want %v", gs.Updated, snap.Updated)
	require.Equal(t, time.UTC, gs.Updated.Location(), "a UTC time comes back in UTC")
}

func testDurations(t *testing.T, s record.Store) {
	delays := []time.Duration{0, 1, 1500*time.Millisecond + 1, 90 * time.Hour, math.MaxInt64, -time.Second}
	entries := make([]record.Entry, len(delays))
	for i, d := range delays {
		entries[i] = record.Entry{Seq: i + 1, Time: base, Kind: record.KindRetry, Delay: d}
	}
	commit(t, s, fullSnapshot("i-1", 1), entries...)
	got := history(t, s, "i-1")
	require.Len(t, got, len(delays))
	for i, d := range delays {
		require.Equal(t, d, got[i].Delay, "entry %d delay", i)
	}
}

func testResultValues(t *testing.T, s record.Store) {
	result := map[string]any{
		"string":   "ünïcødé ✓ 日本語 \x01",
		"empty":    "",
		"":         "empty key",
		"a.b":      "dotted key",
		"int":      42,
		"neg":      -7,
		"big":      int64(1) << 53,
		"float":    1.5,
		"tiny":     1e-300,
		"true":     true,
		"false":    false,
		"nil":      nil,
		"list":     []any{1, "two", 3.0, false, nil, []any{"nested"}, map[string]any{"k": "v"}},
		"strings":  []string{"x", "y"},
		"map":      map[string]any{"deep": map[string]any{"deeper": map[string]any{"deepest": []any{}}}},
		"emptymap": map[string]any{},
	}
	snap := fullSnapshot("i-1", 1)
	snap.Input = result
	snap.Context = map[string]any{"copy": result}
	en := fullEntry(1, 1)
	en.Result = result
	commit(t, s, snap, en)
	requireHistory(t, history(t, s, "i-1"), []record.Entry{en})
	requireSnapshot(t, instance(t, s, "i-1"), snap)
}

func testCommitWithoutEntries(t *testing.T, s record.Store) {
	commit(t, s, fullSnapshot("nil", 1))
	commit(t, s, fullSnapshot("empty", 1), []record.Entry{}...)
	for _, id := range []string{"nil", "empty"} {
		require.Empty(t, history(t, s, id), "history of %q", id)
		requireSnapshot(t, instance(t, s, id), fullSnapshot(id, 1))
	}
	seq := 0
	commit(t, s, fullSnapshot("nil", 2), stepEntries(&seq, 2, 2)...)
	commit(t, s, fullSnapshot("nil", 3))
	require.Len(t, history(t, s, "nil"), 2)
	requireSnapshot(t, instance(t, s, "nil"), fullSnapshot("nil", 3))
}

func testLastSnapshotWins(t *testing.T, s record.Store) {
	first := fullSnapshot("i-1", 1)
	commit(t, s, first)
	second := fullSnapshot("i-1", 2)
	second.Status, second.State, second.Outcome, second.Error = record.StatusCompleted, "COMPLETED", "COMPLETED", ""
	second.Context = map[string]any{"only": "this"}
	commit(t, s, second)
	requireSnapshot(t, instance(t, s, "i-1"), second)
	all := instances(t, s)
	require.Len(t, all, 1)
	requireSnapshot(t, all[0], second)
	require.NotContains(t, all[0].Context, "order_id", "the previous snapshot's context leaked into the last one")
}

// bigString is a value large enough to span many pages of a paged store.
func bigString(n int) string { return strings.Repeat("0123456789abcdef", n/16) }
