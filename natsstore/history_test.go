package natsstore_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/natsserver"
	"github.com/batonhq/baton/natsstore"
	"github.com/batonhq/baton/record"
)

// TestStore_History_ShortAndLong reads histories of a few steps and of
// many, with another instance's steps between them on the same stream, and
// a history whose snapshots understate its steps: each comes whole and in
// order. A short history is read without a consumer; a long one with one.
func TestStore_History_ShortAndLong(t *testing.T) {
	srv := startServer(t, natsserver.Config{SyncInterval: lazySync})
	s := openStore(t, srv, natsstore.Config{Shards: 1})
	ctx := context.Background()
	// Every request to make, change or delete a consumer, as the server
	// hears it.
	watcher := connect(t, srv)
	consumers, err := watcher.SubscribeSync("$JS.API.CONSUMER.>")
	require.NoError(t, err)
	require.NoError(t, watcher.Flush())
	consumerRequests := func() int {
		require.NoError(t, watcher.Flush())
		n, _, err := consumers.Pending()
		require.NoError(t, err)
		for range n {
			_, err := consumers.NextMsg(0)
			require.NoError(t, err)
		}
		return n
	}

	cases := []struct {
		id         string
		steps      int
		understate bool // every snapshot says 1 commit
		consumer   bool // read with a consumer
	}{
		{"one", 1, false, false},
		{"eight", 8, false, false},
		{"nine", 9, false, true},
		{"twenty", 20, false, true},
		{"understated", 12, true, true},
	}
	for k := 1; k <= 20; k++ {
		for _, c := range cases {
			if k > c.steps {
				continue
			}
			st := step(c.id, "a", k)
			if c.understate {
				st.Snapshot.Commits = 1
			}
			require.NoError(t, s.Commit(ctx, st))
		}
	}
	for _, c := range cases {
		t.Run(c.id, func(t *testing.T) {
			consumerRequests()
			history, err := s.History(ctx, c.id)
			require.NoError(t, err)
			got := make([]int, len(history))
			for i, e := range history {
				got[i] = e.Step
			}
			want := make([]int, c.steps)
			for i := range want {
				want[i] = i + 1
			}
			require.Equal(t, want, got)
			require.Equal(t, record.KindAgentRun, history[0].Kind)
			if n := consumerRequests(); (n > 0) != c.consumer {
				t.Errorf("got %d requests about consumers, want a consumer used: %v", n, c.consumer)
			}
		})
	}
}

// TestStore_Reads_GoDirectOnOneServer reads an instance's last step and
// history on a single server: the reads are direct gets, which the stream
// answers itself, not requests to the JetStream API.
func TestStore_Reads_GoDirectOnOneServer(t *testing.T) {
	srv := startServer(t, natsserver.Config{SyncInterval: lazySync})
	s := openStore(t, srv, natsstore.Config{})
	ctx := context.Background()
	for n := 1; n <= 3; n++ {
		require.NoError(t, s.Commit(ctx, step("i", "a", n)))
	}
	watcher := connect(t, srv)
	direct, err := watcher.SubscribeSync("$JS.API.DIRECT.GET.>")
	require.NoError(t, err)
	api, err := watcher.SubscribeSync("$JS.API.STREAM.MSG.GET.>")
	require.NoError(t, err)
	require.NoError(t, watcher.Flush())

	snap, err := s.Instance(ctx, "i")
	require.NoError(t, err)
	require.Equal(t, 3, snap.Step)
	history, err := s.History(ctx, "i")
	require.NoError(t, err)
	require.Len(t, history, 3)

	require.NoError(t, watcher.Flush())
	directs, _, err := direct.Pending()
	require.NoError(t, err)
	apis, _, err := api.Pending()
	require.NoError(t, err)
	if directs == 0 || apis != 0 {
		t.Errorf("got %d direct gets and %d API gets, want only direct ones", directs, apis)
	}
}
