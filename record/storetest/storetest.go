package storetest

import (
	"context"
	"testing"

	"github.com/batonhq/baton/record"
	"github.com/stretchr/testify/require"
)

// Run runs the conformance suite against the stores open returns. open is
// called once per subtest and must return a new, empty store; closing it is
// open's business (t.Cleanup). Subtests run in parallel, so open must not
// share a store or a file between calls.
func Run(t *testing.T, open func(t *testing.T) record.Store) {
	t.Helper()
	tests := []struct {
		name string
		fn   func(*testing.T, record.Store)
	}{
		{"EmptyStore", testEmptyStore},
		{"UnknownInstanceAmongKnown", testUnknownAmongKnown},
		{"SnapshotRoundTrip", testSnapshotRoundTrip},
		{"EntryRoundTrip", testEntryRoundTrip},
		{"TimesKeepNanoseconds", testTimes},
		{"DurationsExact", testDurations},
		{"ResultNestedValues", testResultValues},
		{"CommitWithoutEntries", testCommitWithoutEntries},
		{"LastSnapshotWins", testLastSnapshotWins},
		{"HistoryOrderAcrossCommits", testHistoryOrder},
		{"EntriesReusedAfterCommit", testEntriesReused},
		{"InstancesSortedByID", testInstancesSorted},
		{"InstancesIsolated", testInstancesIsolated},
		{"ReturnedValuesAreCopies", testReturnedCopies},
		{"ConcurrentCommits", testConcurrentCommits},
		{"ReadersSeeWholeSteps", testReadersSeeWholeSteps},
		{"LargeHistory", testLargeHistory},
		{"LargeValues", testLargeValues},
		{"OutboxRoundTrip", testOutboxRoundTrip},
		{"OutboxSettle", testOutboxSettle},
		{"OutboxPerInstance", testOutboxPerInstance},
		{"OutboxAtomicWithStep", testOutboxAtomicWithStep},
		{"OutboxSlicesReused", testOutboxSlicesReused},
		{"DeadLettersInOrder", testDeadLettersInOrder},
		{"ConcurrentDeadLetters", testConcurrentDeadLetters},
		{"WorkflowSaveLoad", testWorkflowSaveLoad},
		{"Prune", testPrune},
		{"ListEmpty", testListEmpty},
		{"ListNewestFirst", testListNewestFirst},
		{"ListPages", testListPages},
		{"ListFilters", testListFilters},
		{"ListChanges", testListChanges},
		{"NilContext", testNilContext},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := open(t)
			require.NotNil(t, s, "open returned a nil store")
			tt.fn(t, s)
		})
	}
}

func commit(t *testing.T, s record.Store, snap record.Snapshot, entries ...record.Entry) {
	t.Helper()
	require.NoError(t, s.Commit(context.Background(), record.Step{Snapshot: snap, Entries: entries}))
}

func history(t *testing.T, s record.Store, id string) []record.Entry {
	t.Helper()
	got, err := s.History(context.Background(), id)
	require.NoError(t, err, "history of %q", id)
	return got
}

func instance(t *testing.T, s record.Store, id string) record.Snapshot {
	t.Helper()
	got, err := s.Instance(context.Background(), id)
	require.NoError(t, err, "instance %q", id)
	return got
}

func instances(t *testing.T, s record.Store) []record.Snapshot {
	t.Helper()
	got, err := s.Instances(context.Background())
	require.NoError(t, err, "instances")
	return got
}
