package storetest

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/batonhq/baton/record"
	"github.com/stretchr/testify/require"
)

func testOutboxRoundTrip(t *testing.T, s record.Store) {
	full := fullOutgoing("i-1", 1, "i-1:1")
	requireAllFieldsSet(t, full)
	minimal := record.Outgoing{Key: "i-1:2", Kind: record.OutgoingNotice, Step: 2, State: "COMPLETED", To: "customer"}
	seq := 0
	entries := stepEntries(&seq, 2, 2)
	snap := fullSnapshot("i-1", 2)
	commitRecord(t, s, record.Step{Snapshot: snap, Entries: entries, Outbox: []record.Outgoing{minimal, full}})

	got := outbox(t, s, "i-1")
	requireOutbox(t, got, []record.Outgoing{full, minimal})
	require.Equal(t, full.Created.Nanosecond(), got[0].Created.Nanosecond(), "created nanoseconds")
	requireSnapshot(t, instance(t, s, "i-1"), snap)
	requireHistory(t, history(t, s, "i-1"), entries)
}

// testOutboxSettle sends items over several steps, two of them by one step
// (a parallel fan-out), settles some and sends keys again.
func testOutboxSettle(t *testing.T, s record.Store) {
	const id = "i-1"
	send := func(step int, settled []string, items ...record.Outgoing) {
		t.Helper()
		commitRecord(t, s, record.Step{Snapshot: fullSnapshot(id, step), Outbox: items, Settled: settled})
	}
	i1 := item(id, 1, "i-1:1")
	i2a, i2b := item(id, 2, "i-1:2/a"), item(id, 2, "i-1:2/b")
	send(1, nil, i1)
	send(2, nil, i2b, i2a)
	requireOutbox(t, outbox(t, s, id), []record.Outgoing{i1, i2a, i2b})

	// "i-1:10" sorts before "i-1:2/a" as a string: the order is by step first.
	// Settling a key never sent, or already settled, is harmless.
	i10 := item(id, 10, "i-1:10")
	send(10, []string{"i-1:1", "i-1:2/b", "i-1:9", "no such key"}, i10)
	requireOutbox(t, outbox(t, s, id), []record.Outgoing{i2a, i10})
	send(11, []string{"i-1:1"})
	requireOutbox(t, outbox(t, s, id), []record.Outgoing{i2a, i10})

	// Sending a key again replaces its item: a retry of the same step...
	retry := i2a
	retry.Attempt, retry.Task, retry.Created = 2, "second attempt", i2a.Created.Add(1)
	send(12, nil, retry)
	requireOutbox(t, outbox(t, s, id), []record.Outgoing{retry, i10})
	// ...or an item under a key an earlier step used, which then sorts anew.
	moved := item(id, 13, "i-1:2/a")
	send(13, nil, moved)
	requireOutbox(t, outbox(t, s, id), []record.Outgoing{i10, moved})

	send(14, []string{"i-1:10", "i-1:2/a"})
	require.Empty(t, outbox(t, s, id))
	require.Equal(t, 14, instance(t, s, id).Step)
}

// testOutboxPerInstance gives instances whose ids are prefixes of one
// another items under the same keys: each instance keeps its own.
func testOutboxPerInstance(t *testing.T, s record.Store) {
	ctx := context.Background()
	ids := []string{"a", "ab", "a\x00", "b"}
	want := map[string][]record.Outgoing{}
	for _, id := range ids {
		shared, own := item(id, 1, "k"), item(id, 1, id+":1")
		commitRecord(t, s, record.Step{Snapshot: fullSnapshot(id, 1), Outbox: []record.Outgoing{shared, own}})
		want[id] = []record.Outgoing{own, shared} // "k" sorts after every id here
	}
	commitRecord(t, s, record.Step{Snapshot: fullSnapshot("a", 2), Settled: []string{"k"}})
	want["a"] = want["a"][:1]
	for _, id := range ids {
		requireOutbox(t, outbox(t, s, id), want[id])
	}

	commit(t, s, fullSnapshot("none", 1))
	require.Empty(t, outbox(t, s, "none"), "an instance that sent nothing has an empty outbox")
	for _, id := range []string{"missing", "", "A", "abc", "a\x00b", "k"} {
		_, err := s.Outbox(ctx, id)
		require.ErrorIs(t, err, record.ErrUnknownInstance, "outbox of %q", id)
	}
}

// testOutboxAtomicWithStep commits steps that each send one item and settle
// the previous step's while readers look: an instance's outbox always holds
// exactly one item, of a step between the snapshots read before and after.
func testOutboxAtomicWithStep(t *testing.T, s record.Store) {
	const (
		writers = 4
		steps   = 50
	)
	ctx := context.Background()
	key := func(id string, step int) string { return fmt.Sprintf("%s:%d", id, step) }
	var done atomic.Bool
	var wg sync.WaitGroup
	errs := make(chan error, 2*writers+2)
	for w := range writers {
		wg.Go(func() {
			id := fmt.Sprintf("w-%d", w)
			for step := 1; step <= steps; step++ {
				rec := record.Step{
					Snapshot: fullSnapshot(id, step),
					Outbox:   []record.Outgoing{item(id, step, key(id, step))},
					Settled:  []string{key(id, step-1)},
				}
				if err := s.Commit(ctx, rec); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	var readers sync.WaitGroup
	for r := range writers + 2 {
		readers.Go(func() {
			id := fmt.Sprintf("w-%d", r%writers)
			for !done.Load() {
				if err := readOutboxOnce(ctx, s, id); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	done.Store(true)
	readers.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	for w := range writers {
		id := fmt.Sprintf("w-%d", w)
		requireOutbox(t, outbox(t, s, id), []record.Outgoing{item(id, steps, key(id, steps))})
	}
}

func readOutboxOnce(ctx context.Context, s record.Store, id string) error {
	before, err := s.Instance(ctx, id)
	if errorsIsUnknown(err) {
		return nil // not committed yet
	}
	if err != nil {
		return err
	}
	items, err := s.Outbox(ctx, id)
	if err != nil {
		return err
	}
	after, err := s.Instance(ctx, id)
	if err != nil {
		return err
	}
	if len(items) != 1 {
		return fmt.Errorf("outbox of %s: got %d items %v, want 1 (a step's outbox change seen in part)", id, len(items), outboxKeys(items))
	}
	if got := items[0].Step; got < before.Step || got > after.Step {
		return fmt.Errorf("outbox of %s: got the item of step %d between snapshots of steps %d and %d", id, got, before.Step, after.Step)
	}
	return nil
}

// testOutboxSlicesReused does what the engine does with the Outbox and
// Settled slices: it clears them once Commit returns and builds the next
// step's in the same backing arrays.
func testOutboxSlicesReused(t *testing.T, s record.Store) {
	const id = "i-1"
	out := make([]record.Outgoing, 0, 4)
	settled := make([]string, 0, 4)
	steps := []struct {
		send    []record.Outgoing
		settled []string
	}{
		{[]record.Outgoing{item(id, 1, "i-1:1/a"), item(id, 1, "i-1:1/b")}, nil},
		{[]record.Outgoing{item(id, 2, "i-1:2")}, []string{"i-1:1/a"}},
		{[]record.Outgoing{item(id, 3, "i-1:3/a"), item(id, 3, "i-1:3/b")}, []string{"i-1:2"}},
	}
	for n, st := range steps {
		out = append(out[:0], st.send...)
		settled = append(settled[:0], st.settled...)
		require.NoError(t, s.Commit(context.Background(), record.Step{Snapshot: fullSnapshot(id, n+1), Outbox: out, Settled: settled}))
		full, keys := out[:cap(out)], settled[:cap(settled)]
		for i := range full {
			full[i] = record.Outgoing{Key: "garbage", Step: -1, Payload: map[string]any{"overwritten": true}}
		}
		for i := range keys {
			keys[i] = "i-1:1/b" // were it read late, it would settle an item still due
		}
	}
	requireOutbox(t, outbox(t, s, id), []record.Outgoing{item(id, 1, "i-1:1/b"), item(id, 3, "i-1:3/a"), item(id, 3, "i-1:3/b")})
}

func testDeadLettersInOrder(t *testing.T, s record.Store) {
	ctx := context.Background()
	require.Empty(t, deadLetters(t, s), "dead letters of an empty store")
	var want []record.DeadLetter
	for n := 1; n <= 3; n++ {
		d := fullDeadLetter(n)
		requireAllFieldsSet(t, d)
		require.NoError(t, s.AddDeadLetter(ctx, d))
		d.Seq = n
		want = append(want, d)
	}
	got := deadLetters(t, s)
	require.Len(t, got, len(want))
	for i := range got {
		requireAllFieldsSet(t, got[i])
		requireDeadLetter(t, got[i], want[i])
	}

	got[0] = record.DeadLetter{MessageID: "changed"}
	again := deadLetters(t, s)
	require.Len(t, again, len(want))
	requireDeadLetter(t, again[0], want[0])
}

// testConcurrentDeadLetters adds dead letters from several goroutines: all
// are kept, numbered 1..n, each goroutine's in the order it added them.
func testConcurrentDeadLetters(t *testing.T, s record.Store) {
	const (
		goroutines = 8
		each       = 25
	)
	ctx := context.Background()
	errs := make(chan error, goroutines)
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range each {
				d := record.DeadLetter{
					MessageID: fmt.Sprintf("g%d-%d", g, i), Type: "dispatch", From: "engine", To: "seller",
					Reason: "rejected", Instance: fmt.Sprintf("g%d", g), Step: i + 1, At: base, Attempts: 1,
				}
				if err := s.AddDeadLetter(ctx, d); err != nil {
					errs <- fmt.Errorf("goroutine %d letter %d: %w", g, i, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	got := deadLetters(t, s)
	require.Len(t, got, goroutines*each)
	next := map[string]int{}
	for i, d := range got {
		require.Equal(t, i+1, d.Seq, "seq of dead letter %d (%s)", i, d.MessageID)
		require.Equal(t, fmt.Sprintf("%s-%d", d.Instance, next[d.Instance]), d.MessageID, "dead letter %d", i)
		next[d.Instance]++
	}
	require.Len(t, next, goroutines)
}

func testWorkflowSaveLoad(t *testing.T, s record.Store) {
	ctx := context.Background()
	want := fullWorkflow("sha256:aaa")
	requireAllFieldsSet(t, want)
	saved := want
	saved.Source = slices.Clone(want.Source)
	require.NoError(t, s.SaveWorkflow(ctx, saved))
	clear(saved.Source) // the caller's bytes are its own once saved
	got := workflow(t, s, "sha256:aaa")
	requireWorkflow(t, got, want)

	// The first save of a hash wins.
	other := fullWorkflow("sha256:aaa")
	other.Name, other.Version, other.Source = "other", 4, []byte("workflow: other\n")
	require.NoError(t, s.SaveWorkflow(ctx, other))
	requireWorkflow(t, workflow(t, s, "sha256:aaa"), want)

	second := fullWorkflow("sha256:bbb")
	second.Version, second.Source = 4, []byte("workflow: refund\nversion: 4\n")
	require.NoError(t, s.SaveWorkflow(ctx, second))
	requireWorkflow(t, workflow(t, s, "sha256:bbb"), second)

	// What a read returns is the caller's to change.
	got.Source[0] ^= 0xff
	requireWorkflow(t, workflow(t, s, "sha256:aaa"), want)

	for _, hash := range []string{"sha256:missing", "sha256:aa", "sha256:aaaa", ""} {
		_, err := s.Workflow(ctx, hash)
		require.ErrorIs(t, err, record.ErrUnknownWorkflow, "workflow %q", hash)
	}
}

func commitRecord(t *testing.T, s record.Store, rec record.Step) {
	t.Helper()
	require.NoError(t, s.Commit(context.Background(), rec))
}

func outbox(t *testing.T, s record.Store, id string) []record.Outgoing {
	t.Helper()
	got, err := s.Outbox(context.Background(), id)
	require.NoError(t, err, "outbox of %q", id)
	return got
}

func deadLetters(t *testing.T, s record.Store) []record.DeadLetter {
	t.Helper()
	got, err := s.DeadLetters(context.Background())
	require.NoError(t, err, "dead letters")
	return got
}

func workflow(t *testing.T, s record.Store, hash string) record.WorkflowSource {
	t.Helper()
	got, err := s.Workflow(context.Background(), hash)
	require.NoError(t, err, "workflow %q", hash)
	return got
}
