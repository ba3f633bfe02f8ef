package boltstore_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/boltstore"
	"github.com/batonhq/baton/record"
	"github.com/batonhq/baton/record/storetest"
)

func TestConformance(t *testing.T) {
	tests := []struct {
		name string
		opts []boltstore.Option
	}{
		{"fsync", nil},
		{"nosync", []boltstore.Option{boltstore.WithNoSync(true)}},
		{"batch", []boltstore.Option{boltstore.WithBatch(64)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			storetest.Run(t, func(t *testing.T) record.Store {
				s, _ := open(t, tt.opts...)
				return s
			})
		})
	}
}

var t0 = time.Date(2025, 5, 1, 8, 0, 0, 123456789, time.UTC)

// step is the n-th step of instance id: a snapshot and three entries.
func step(id string, n int) record.Step {
	entries := make([]record.Entry, 3)
	for i := range entries {
		seq := 3*(n-1) + i + 1
		entries[i] = record.Entry{
			Seq: seq, Time: t0.Add(time.Duration(seq)), Kind: record.KindOutcome, Step: n,
			Agent: "seller", Trigger: "reviewed", Result: map[string]any{"approval": "APPROVED", "n": float64(n)},
		}
	}
	return record.Step{
		Snapshot: record.Snapshot{
			ID: id, Workflow: "refund", Version: 1, Status: record.StatusRunning, State: "REVIEWING",
			Step: n, Visits: map[string]int{"REVIEWING": n}, Input: map[string]any{"order_id": "1"},
			Context: map[string]any{"amount": 50.0}, Created: t0, Updated: t0.Add(time.Duration(n) * time.Second), Commits: n,
		},
		Entries: entries,
	}
}

// withOutbox is step(id, n) sending one item and settling the previous
// step's.
func withOutbox(id string, n int) record.Step {
	rec := step(id, n)
	rec.Outbox = []record.Outgoing{outgoing(id, n)}
	rec.Settled = []string{fmt.Sprintf("%s:%d", id, n-1)}
	return rec
}

// outgoing is the outbox item step n of instance id sends.
func outgoing(id string, n int) record.Outgoing {
	return record.Outgoing{
		Key: fmt.Sprintf("%s:%d", id, n), Kind: record.OutgoingDispatch, Run: "state", Step: n, State: "REVIEWING",
		To: "seller", Payload: map[string]any{"order_id": "1", "n": float64(n)}, Created: t0.Add(time.Duration(n)),
	}
}

// deadLetter is the n-th dead letter of the tests.
func deadLetter(n int) record.DeadLetter {
	return record.DeadLetter{
		MessageID: fmt.Sprintf("msg-%d", n), Type: "handoff", From: "seller", To: "payment", Reason: "rejected",
		Instance: "inst-0", Step: n, At: t0.Add(time.Duration(n) * time.Second), Attempts: 3,
		Content: map[string]any{"n": float64(n)},
	}
}

var workflowSource = record.WorkflowSource{
	Hash: "sha256:0123", Name: "refund", Version: 2, File: "refund.yaml", Source: []byte("workflow: refund\n"), Saved: t0,
}

// requireSameContent checks that got holds exactly what want holds.
func requireSameContent(t *testing.T, got, want record.Store) {
	t.Helper()
	ctx := context.Background()
	wantAll, err := want.Instances(ctx)
	require.NoError(t, err)
	gotAll, err := got.Instances(ctx)
	require.NoError(t, err)
	require.Equal(t, asJSON(t, wantAll), asJSON(t, gotAll))
	for _, snap := range wantAll {
		wh, err := want.History(ctx, snap.ID)
		require.NoError(t, err)
		gh, err := got.History(ctx, snap.ID)
		require.NoError(t, err)
		require.Equal(t, asJSON(t, wh), asJSON(t, gh), "history of %s", snap.ID)
		wo, err := want.Outbox(ctx, snap.ID)
		require.NoError(t, err)
		gotOut, err := got.Outbox(ctx, snap.ID)
		require.NoError(t, err)
		require.Equal(t, asJSON(t, wo), asJSON(t, gotOut), "outbox of %s", snap.ID)
	}
	wd, err := want.DeadLetters(ctx)
	require.NoError(t, err)
	gd, err := got.DeadLetters(ctx)
	require.NoError(t, err)
	require.Equal(t, asJSON(t, wd), asJSON(t, gd), "dead letters")
}

func asJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

func TestReopenSeesEveryCommit(t *testing.T) {
	for _, opts := range [][]boltstore.Option{nil, {boltstore.WithNoSync(true)}, {boltstore.WithBatch(64)}} {
		s, path := open(t, opts...)
		ref := record.NewMemStore()
		ctx := context.Background()
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Go(func() {
				id := fmt.Sprintf("inst-%d", i)
				for n := 1; n <= 10+i; n++ {
					rec := step(id, n)
					require.NoError(t, s.Commit(ctx, rec))
					require.NoError(t, ref.Commit(ctx, rec))
				}
			})
		}
		wg.Wait()
		require.NoError(t, s.Close())

		again, err := boltstore.Open(path, opts...)
		require.NoError(t, err)
		requireSameContent(t, again, ref)
		// The reopened file takes new commits after the old ones.
		require.NoError(t, again.Commit(ctx, step("inst-0", 11)))
		require.NoError(t, ref.Commit(ctx, step("inst-0", 11)))
		requireSameContent(t, again, ref)
		require.NoError(t, again.Close())
	}
}

// TestReopenKeepsOutboxDeadLettersWorkflows writes outbox items, dead
// letters and a workflow source, and finds them all in the reopened file.
func TestReopenKeepsOutboxDeadLettersWorkflows(t *testing.T) {
	ctx := context.Background()
	for _, opts := range [][]boltstore.Option{nil, {boltstore.WithBatch(64)}} {
		s, path := open(t, opts...)
		ref := record.NewMemStore()
		var cur record.Store = s
		both := func(write func(record.Store) error) {
			t.Helper()
			require.NoError(t, write(cur))
			require.NoError(t, write(ref))
		}
		for _, id := range []string{"a", "ab"} {
			for n := 1; n <= 3; n++ {
				rec := withOutbox(id, n)
				if n == 2 { // a fan-out: a second item, left unsettled
					rec.Outbox = append(rec.Outbox, outgoing(id+"/branch", n))
				}
				both(func(st record.Store) error { return st.Commit(ctx, rec) })
			}
		}
		for n := 1; n <= 3; n++ {
			both(func(st record.Store) error { return st.AddDeadLetter(ctx, deadLetter(n)) })
		}
		both(func(st record.Store) error { return st.SaveWorkflow(ctx, workflowSource) })
		require.NoError(t, s.Close())

		again, err := boltstore.Open(path, opts...)
		require.NoError(t, err)
		requireSameContent(t, again, ref)
		out, err := again.Outbox(ctx, "a")
		require.NoError(t, err)
		require.Len(t, out, 2, "the fan-out's second item and step 3's")
		w, err := again.Workflow(ctx, workflowSource.Hash)
		require.NoError(t, err)
		require.Equal(t, asJSON(t, workflowSource), asJSON(t, w))
		// The numbering of dead letters goes on where it stopped.
		cur = again
		both(func(st record.Store) error { return st.AddDeadLetter(ctx, deadLetter(4)) })
		requireSameContent(t, again, ref)
		dead, err := again.DeadLetters(ctx)
		require.NoError(t, err)
		require.Equal(t, 4, dead[3].Seq)
		require.NoError(t, again.Close())
	}
}

func TestCloseTwice(t *testing.T) {
	s, _ := open(t)
	require.NoError(t, s.Close())
	require.NoError(t, s.Close())
}

func TestCallsAfterClose(t *testing.T) {
	s, _ := open(t)
	ctx := context.Background()
	require.NoError(t, s.Commit(ctx, step("i", 1)))
	require.NoError(t, s.Close())
	require.ErrorIs(t, s.Commit(ctx, step("i", 2)), boltstore.ErrClosed)
	_, err := s.Instance(ctx, "i")
	require.ErrorIs(t, err, boltstore.ErrClosed)
	_, err = s.History(ctx, "i")
	require.ErrorIs(t, err, boltstore.ErrClosed)
	_, err = s.Instances(ctx)
	require.ErrorIs(t, err, boltstore.ErrClosed)
	_, err = s.Outbox(ctx, "i")
	require.ErrorIs(t, err, boltstore.ErrClosed)
	require.ErrorIs(t, s.AddDeadLetter(ctx, deadLetter(1)), boltstore.ErrClosed)
	_, err = s.DeadLetters(ctx)
	require.ErrorIs(t, err, boltstore.ErrClosed)
	require.ErrorIs(t, s.SaveWorkflow(ctx, workflowSource), boltstore.ErrClosed)
	_, err = s.Workflow(ctx, workflowSource.Hash)
	require.ErrorIs(t, err, boltstore.ErrClosed)
}

// TestCloseDuringCommits closes the store while instances commit: each
// Commit either lands (and is in the file after reopening) or fails with
// ErrClosed.
func TestCloseDuringCommits(t *testing.T) {
	for _, opts := range [][]boltstore.Option{{boltstore.WithNoSync(true)}, {boltstore.WithNoSync(true), boltstore.WithBatch(64)}} {
		s, path := open(t, opts...)
		ctx := context.Background()
		landed := make([]atomic.Int64, 8)
		var wg sync.WaitGroup
		for i := range landed {
			wg.Go(func() {
				for n := 1; ; n++ {
					err := s.Commit(ctx, step(fmt.Sprintf("inst-%d", i), n))
					if errors.Is(err, boltstore.ErrClosed) {
						return
					}
					if err != nil {
						t.Errorf("commit %d of inst-%d: %v", n, i, err)
						return
					}
					landed[i].Store(int64(n))
				}
			})
		}
		for landed[0].Load() == 0 {
			time.Sleep(100 * time.Microsecond)
		}
		require.NoError(t, s.Close())
		wg.Wait()

		again, err := boltstore.Open(path)
		require.NoError(t, err)
		for i := range landed {
			id, n := fmt.Sprintf("inst-%d", i), int(landed[i].Load())
			if n == 0 {
				_, err := again.Instance(ctx, id)
				require.ErrorIs(t, err, record.ErrUnknownInstance)
				continue
			}
			snap, err := again.Instance(ctx, id)
			require.NoError(t, err)
			require.Equal(t, n, snap.Step, "last step of %s", id)
			h, err := again.History(ctx, id)
			require.NoError(t, err)
			require.Len(t, h, 3*n, "history of %s", id)
		}
		require.NoError(t, again.Close())
	}
}

func TestCommitInvalidID(t *testing.T) {
	s, _ := open(t)
	tests := []struct {
		name, id, text string
	}{
		{"empty", "", "snapshot.id \"\": empty"},
		{"too long", strings.Repeat("x", boltstore.MaxIDLen+1), "longer than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := s.Commit(context.Background(), step(tt.id, 1))
			require.ErrorIs(t, err, boltstore.ErrInvalidID)
			var ie *boltstore.IDError
			require.ErrorAs(t, err, &ie)
			require.Contains(t, err.Error(), tt.text)
			require.True(t, strings.HasPrefix(err.Error(), "boltstore: "), "got %q, want the package prefix", err)
		})
	}
	all, err := s.Instances(context.Background())
	require.NoError(t, err)
	require.Empty(t, all)
}

// TestCommitUnencodable checks that a step holding a value JSON cannot
// carry fails whole, naming the field, and leaves the earlier steps alone.
func TestCommitUnencodable(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name  string
		edit  func(*record.Step)
		field string
	}{
		{"NaN in a result", func(r *record.Step) { r.Entries[1].Result = map[string]any{"x": math.NaN()} }, "entries[1]"},
		{"channel in the context", func(r *record.Step) { r.Snapshot.Context = map[string]any{"c": make(chan int)} }, "snapshot"},
		{"NaN in an outbox payload", func(r *record.Step) {
			r.Outbox = []record.Outgoing{outgoing("i", 2), outgoing("i", 2)}
			r.Outbox[1].Key, r.Outbox[1].Payload = "i:2/b", map[string]any{"x": math.NaN()}
		}, "outbox[1]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _ := open(t)
			require.NoError(t, s.Commit(ctx, withOutbox("i", 1)))
			rec := withOutbox("i", 2)
			tt.edit(&rec)
			err := s.Commit(ctx, rec)
			var ee *boltstore.EncodeError
			require.ErrorAs(t, err, &ee)
			require.Equal(t, tt.field, ee.Field)
			require.Equal(t, "i", ee.Instance)
			snap, err := s.Instance(ctx, "i")
			require.NoError(t, err)
			require.Equal(t, 1, snap.Step, "the failed step must not be half written")
			h, err := s.History(ctx, "i")
			require.NoError(t, err)
			require.Len(t, h, 3)
			out, err := s.Outbox(ctx, "i")
			require.NoError(t, err)
			require.Equal(t, []string{"i:1"}, keys(out), "the failed step must not settle or send anything")
		})
	}
}

func keys(items []record.Outgoing) []string {
	out := make([]string, len(items))
	for i, o := range items {
		out[i] = o.Key
	}
	return out
}

// TestAddDeadLetterUnencodable checks that a dead letter JSON cannot carry
// is refused whole and takes no number.
func TestAddDeadLetterUnencodable(t *testing.T) {
	ctx := context.Background()
	for _, opts := range [][]boltstore.Option{nil, {boltstore.WithBatch(8)}} {
		s, _ := open(t, opts...)
		bad := deadLetter(1)
		bad.Content = map[string]any{"x": math.Inf(1)}
		err := s.AddDeadLetter(ctx, bad)
		var ee *boltstore.EncodeError
		require.ErrorAs(t, err, &ee)
		require.Equal(t, "dead_letter", ee.Field)
		require.NoError(t, s.AddDeadLetter(ctx, deadLetter(2)))
		dead, err := s.DeadLetters(ctx)
		require.NoError(t, err)
		require.Len(t, dead, 1)
		require.Equal(t, 1, dead[0].Seq)
		require.Equal(t, "msg-2", dead[0].MessageID)
	}
}

func TestSaveWorkflowEmptyHash(t *testing.T) {
	s, _ := open(t)
	w := workflowSource
	w.Hash = ""
	err := s.SaveWorkflow(context.Background(), w)
	require.ErrorContains(t, err, "boltstore: save workflow: hash is empty")
}

func TestReadsHonourContext(t *testing.T) {
	s, _ := open(t)
	require.NoError(t, s.Commit(context.Background(), step("i", 1)))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := s.Instance(ctx, "i")
	require.ErrorIs(t, err, context.Canceled)
	_, err = s.History(ctx, "i")
	require.ErrorIs(t, err, context.Canceled)
	_, err = s.Instances(ctx)
	require.ErrorIs(t, err, context.Canceled)
	_, err = s.Outbox(ctx, "i")
	require.ErrorIs(t, err, context.Canceled)
	_, err = s.DeadLetters(ctx)
	require.ErrorIs(t, err, context.Canceled)
	_, err = s.Workflow(ctx, workflowSource.Hash)
	require.ErrorIs(t, err, context.Canceled)
	// Writes are never dropped because their caller stopped waiting.
	require.NoError(t, s.AddDeadLetter(ctx, deadLetter(1)))
	require.NoError(t, s.SaveWorkflow(ctx, workflowSource))
	// A commit is never dropped because its caller stopped waiting.
	require.NoError(t, s.Commit(ctx, step("i", 2)))
}
