package natsstore_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/natsserver"
	"github.com/batonhq/baton/natsstore"
	"github.com/batonhq/baton/record"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)

// step is step n of instance id: a snapshot, one entry naming who wrote it,
// and an outbox item settling the previous step's.
func step(id, writer string, n int) record.Step {
	return record.Step{
		Snapshot: record.Snapshot{
			ID: id, Workflow: "w", Version: 1, Status: record.StatusRunning, State: "S", Step: n, Commits: n,
			Context: map[string]any{"writer": writer}, Created: t0, Updated: t0.Add(time.Duration(n) * time.Second),
		},
		Entries: []record.Entry{{Seq: n, Time: t0, Kind: record.KindAgentRun, Step: n, Agent: writer}},
		Outbox:  []record.Outgoing{{Key: fmt.Sprintf("%s:%d", id, n), Kind: record.OutgoingDispatch, Step: n, State: "S", To: writer, Created: t0}},
		Settled: []string{fmt.Sprintf("%s:%d", id, n-1)},
	}
}

// twoStores opens two stores on one prefix of one server, as two engines
// sharing a cluster do.
func twoStores(t *testing.T) (*natsstore.Store, *natsstore.Store) {
	t.Helper()
	srv := startServer(t, natsserver.Config{SyncInterval: lazySync})
	cfg := natsstore.Config{Prefix: "shared", Timeout: testTimeout}
	return openStore(t, srv, cfg), openStore(t, srv, cfg)
}

type view struct {
	snap    record.Snapshot
	history []record.Entry
	outbox  []record.Outgoing
}

func look(t *testing.T, s *natsstore.Store, id string) view {
	t.Helper()
	ctx := context.Background()
	snap, err := s.Instance(ctx, id)
	require.NoError(t, err)
	history, err := s.History(ctx, id)
	require.NoError(t, err)
	outbox, err := s.Outbox(ctx, id)
	require.NoError(t, err)
	return view{snap, history, outbox}
}

func requireFenced(t *testing.T, err error, id string) *natsstore.ConflictError {
	t.Helper()
	require.ErrorIs(t, err, natsstore.ErrFenced)
	var ce *natsstore.ConflictError
	require.True(t, errors.As(err, &ce), "got %T, want a *ConflictError", err)
	require.Equal(t, id, ce.Instance)
	return ce
}

func TestStore_Commit_FencedAfterAnotherWriter(t *testing.T) {
	a, b := twoStores(t)
	ctx := context.Background()
	require.NoError(t, a.Commit(ctx, step("i", "a", 1)))
	require.NoError(t, a.Commit(ctx, step("i", "a", 2)))

	// b takes the instance over: it reads it, then commits.
	require.Equal(t, 2, look(t, b, "i").snap.Step)
	require.NoError(t, b.Commit(ctx, step("i", "b", 3)))
	before := look(t, b, "i")
	require.Equal(t, "b", before.snap.Context["writer"])

	// a still believes the instance is at step 2: its commit is refused...
	ce := requireFenced(t, a.Commit(ctx, step("i", "a", 3)), "i")
	require.NotZero(t, ce.Expected, "a expected the revision of its own step 2")
	// ...and changes nothing.
	require.Equal(t, before, look(t, b, "i"))
	require.Len(t, before.history, 3)
	require.Equal(t, "b", before.history[2].Agent)
	require.Equal(t, []string{"i:3"}, keys(before.outbox))

	// Refused once, refused until a reads the instance again.
	requireFenced(t, a.Commit(ctx, step("i", "a", 4)), "i")
	require.Equal(t, before, look(t, b, "i"))

	// Having read it, a owns it again, and now b is the one fenced off.
	require.Equal(t, 3, look(t, a, "i").snap.Step)
	require.NoError(t, a.Commit(ctx, step("i", "a", 4)))
	requireFenced(t, b.Commit(ctx, step("i", "b", 4)), "i")
	after := look(t, a, "i")
	require.Equal(t, 4, after.snap.Step)
	require.Equal(t, "a", after.snap.Context["writer"])
	require.Len(t, after.history, 4)
	require.Equal(t, []string{"i:4"}, keys(after.outbox), "the outbox follows a's step 4 on b's step 3")
}

// TestStore_Commit_UnreadInstanceFenced: a store that never read an
// instance expects it not to exist; an engine cannot write an instance it
// has not resumed.
func TestStore_Commit_UnreadInstanceFenced(t *testing.T) {
	a, b := twoStores(t)
	ctx := context.Background()
	require.NoError(t, a.Commit(ctx, step("i", "a", 1)))
	before := look(t, a, "i")
	ce := requireFenced(t, b.Commit(ctx, step("i", "b", 1)), "i")
	require.Zero(t, ce.Expected)
	require.Equal(t, before, look(t, a, "i"))

	// Listing the instances is a read too: it lets b resume them all.
	all, err := b.Instances(ctx)
	require.NoError(t, err)
	require.Len(t, all, 1)
	require.NoError(t, b.Commit(ctx, step("i", "b", 2)))
	requireFenced(t, a.Commit(ctx, step("i", "a", 2)), "i")
}

// TestStore_Commit_RacingWritersOneWins has two stores read an instance and
// commit at the same time, round after round: exactly one commit of each
// round is applied.
func TestStore_Commit_RacingWritersOneWins(t *testing.T) {
	a, b := twoStores(t)
	ctx := context.Background()
	require.NoError(t, a.Commit(ctx, step("i", "a", 1)))
	const rounds = 30
	wins := map[string]int{}
	for n := 2; n <= rounds+1; n++ {
		look(t, a, "i")
		look(t, b, "i")
		var wg sync.WaitGroup
		errs := map[string]error{}
		var mu sync.Mutex
		for name, s := range map[string]*natsstore.Store{"a": a, "b": b} {
			wg.Go(func() {
				err := s.Commit(ctx, step("i", name, n))
				mu.Lock()
				errs[name] = err
				mu.Unlock()
			})
		}
		wg.Wait()
		won := 0
		for name, err := range errs {
			if err == nil {
				won++
				wins[name]++
			} else {
				requireFenced(t, err, "i")
			}
		}
		require.Equal(t, 1, won, "round %d: got %d commits applied, want exactly 1 (%v)", n, won, errs)
	}
	v := look(t, a, "i")
	require.Len(t, v.history, rounds+1, "one entry per applied step")
	for k, e := range v.history {
		require.Equal(t, k+1, e.Step, "history entry %d", k)
	}
	require.Equal(t, rounds+1, v.snap.Step)
	require.Len(t, v.outbox, 1, "each applied step settled the one before")
	t.Logf("wins: %v", wins)
}

func keys(items []record.Outgoing) []string {
	out := make([]string, len(items))
	for i, o := range items {
		out[i] = o.Key
	}
	return out
}
