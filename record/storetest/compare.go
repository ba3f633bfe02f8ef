package storetest

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/batonhq/baton/record"
	"github.com/stretchr/testify/require"
)

// asJSON returns v as a store keeping JSON data returns it: numbers become
// float64, nested maps map[string]any. Times are put in UTC; the suite checks
// their location separately.
func asJSON[T any](t *testing.T, v T) T {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	var out T
	require.NoError(t, json.Unmarshal(b, &out))
	return out
}

func normalSnapshot(t *testing.T, s record.Snapshot) record.Snapshot {
	t.Helper()
	s = asJSON(t, s)
	s.Created, s.Updated = s.Created.UTC(), s.Updated.UTC()
	return s
}

func normalEntry(t *testing.T, e record.Entry) record.Entry {
	t.Helper()
	e = asJSON(t, e)
	e.Time = e.Time.UTC()
	return e
}

func requireSnapshot(t *testing.T, got, want record.Snapshot) {
	t.Helper()
	require.True(t, got.Created.Equal(want.Created), "created: got %v, want %v", got.Created, want.Created)
	require.True(t, got.Updated.Equal(want.Updated), "updated: got %v, want %v", got.Updated, want.Updated)
	require.Equal(t, normalSnapshot(t, want), normalSnapshot(t, got), "snapshot %q", want.ID)
}

// requireHistory compares entry by entry so that a failure names the first
// entry that differs instead of printing two whole histories.
func requireHistory(t *testing.T, got, want []record.Entry) {
	t.Helper()
	for i := range min(len(got), len(want)) {
		require.True(t, got[i].Time.Equal(want[i].Time), "entry %d time: got %v, want %v", i, got[i].Time, want[i].Time)
		require.Equal(t, normalEntry(t, want[i]), normalEntry(t, got[i]), "entry %d", i)
	}
	require.Len(t, got, len(want), "history length")
}

func normalOutgoing(t *testing.T, o record.Outgoing) record.Outgoing {
	t.Helper()
	o = asJSON(t, o)
	o.Created = o.Created.UTC()
	return o
}

// requireOutbox compares item by item, like requireHistory.
func requireOutbox(t *testing.T, got, want []record.Outgoing) {
	t.Helper()
	for i := range min(len(got), len(want)) {
		require.True(t, got[i].Created.Equal(want[i].Created), "outbox item %d created: got %v, want %v", i, got[i].Created, want[i].Created)
		require.Equal(t, normalOutgoing(t, want[i]), normalOutgoing(t, got[i]), "outbox item %d", i)
	}
	require.Len(t, got, len(want), "outbox length (got keys %v, want %v)", outboxKeys(got), outboxKeys(want))
}

func outboxKeys(items []record.Outgoing) []string {
	keys := make([]string, len(items))
	for i, o := range items {
		keys[i] = o.Key
	}
	return keys
}

func normalDeadLetter(t *testing.T, d record.DeadLetter) record.DeadLetter {
	t.Helper()
	d = asJSON(t, d)
	d.At = d.At.UTC()
	return d
}

func requireDeadLetter(t *testing.T, got, want record.DeadLetter) {
	t.Helper()
	require.True(t, got.At.Equal(want.At), "dead letter %d at: got %v, want %v", want.Seq, got.At, want.At)
	require.Equal(t, normalDeadLetter(t, want), normalDeadLetter(t, got), "dead letter %d", want.Seq)
}

func requireWorkflow(t *testing.T, got, want record.WorkflowSource) {
	t.Helper()
	require.True(t, got.Saved.Equal(want.Saved), "workflow %s saved: got %v, want %v", want.Hash, got.Saved, want.Saved)
	got, want = asJSON(t, got), asJSON(t, want)
	got.Saved, want.Saved = got.Saved.UTC(), want.Saved.UTC()
	require.Equal(t, want, got, "workflow %s", want.Hash)
}

func errorsIsUnknown(err error) bool { return errors.Is(err, record.ErrUnknownInstance) }
