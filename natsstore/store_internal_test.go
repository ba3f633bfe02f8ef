package natsstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/batonhq/baton/natsserver"
	"github.com/batonhq/baton/record"
)

// TestPublish_ResendOfAWriteMade: a commit sent again under the same
// message id after its first send was written (its answer lost) succeeds
// with the first write's revision and writes nothing more; a real conflict
// stays one.
func TestPublish_ResendOfAWriteMade(t *testing.T) {
	ctx := context.Background()
	s := openInternal(t)
	data, err := encodeStep(record.Snapshot{ID: "i", Step: 1}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}

	first, err := s.publish(ctx, "m-1", "i", data, 0)
	if err != nil {
		t.Fatal(err)
	}
	again, err := s.publish(ctx, "m-1", "i", data, 0)
	if err != nil || again != first {
		t.Fatalf("resend: got revision %d, %v; want %d, nil", again, err, first)
	}
	info, err := s.stream("i").Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != 1 {
		t.Fatalf("got %d messages, want 1: the resend wrote again", info.State.Msgs)
	}
	_, err = s.publish(ctx, "m-2", "i", data, 0)
	if !errors.Is(err, ErrFenced) {
		t.Fatalf("another write expecting no instance: got %v, want ErrFenced", err)
	}
}

// TestCommit_AfterAnUnansweredCommit: when a commit's answer never came,
// the next commit finds out whether it was written and follows it if so.
func TestCommit_AfterAnUnansweredCommit(t *testing.T) {
	ctx := context.Background()
	s := openInternal(t)
	step := func(id string, n int) record.Step {
		return record.Step{
			Snapshot: record.Snapshot{ID: id, Step: n},
			Entries:  []record.Entry{{Seq: n, Kind: record.KindAgentRun, Step: n}},
			Outbox:   []record.Outgoing{{Key: fmt.Sprint(n), Step: n}},
			Settled:  []string{fmt.Sprint(n - 1)},
		}
	}
	for _, tt := range []struct {
		name    string
		written bool
		again   bool // the engine sends the unanswered step again
	}{{"written", true, false}, {"lost", false, false}, {"written, sent again", true, true}} {
		t.Run(tt.name, func(t *testing.T) {
			id := strings.ReplaceAll(tt.name, " ", "")
			if err := s.Commit(ctx, step(id, 1)); err != nil {
				t.Fatal(err)
			}
			// Step 2 is sent, and its answer lost: the fence stays at step 1.
			f := s.fenceOf(id)
			st2 := step(id, 2)
			outbox := nextOutbox(f.outbox, st2.Settled, st2.Outbox)
			data, err := encodeStep(st2.Snapshot, st2.Entries, outbox)
			if err != nil {
				t.Fatal(err)
			}
			if tt.written {
				if _, err := s.publish(ctx, "unanswered", id, data, f.seq); err != nil {
					t.Fatal(err)
				}
			}
			f.unsure, f.unsureOutbox, f.unsureData = "unanswered", outbox, data

			next := step(id, 3)
			if !tt.written || tt.again {
				next = step(id, 2) // the engine goes on from step 1, or sends step 2 again
			}
			if err := s.Commit(ctx, next); err != nil {
				t.Fatalf("the commit after an unanswered one: %v", err)
			}
			if !tt.written {
				// The same step is sent under the unanswered id, in case
				// the unanswered send lands later: the server keeps one.
				m, err := s.stream(id).GetLastMsgForSubject(ctx, s.subject(id))
				if err != nil {
					t.Fatal(err)
				}
				if got := m.Header.Get("Nats-Msg-Id"); got != "unanswered" {
					t.Fatalf("got message id %q, want the unanswered send's", got)
				}
			}
			h, err := s.History(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if want := next.Snapshot.Step; len(h) != want {
				t.Fatalf("got %d history entries, want %d", len(h), want)
			}
			out, err := s.Outbox(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if len(out) != 1 || out[0].Step != next.Snapshot.Step {
				t.Fatalf("got outbox %v, want the item of step %d only", out, next.Snapshot.Step)
			}
		})
	}
}

// openInternal opens a store on an in-process server of its own, both
// closed when the test ends.
func openInternal(t *testing.T) *Store {
	t.Helper()
	srv, err := natsserver.Start(natsserver.Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	nc, err := srv.Connect()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	s, err := Open(context.Background(), nc, Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// TestScan_AReadThatEndsShortIsReadAgain: a scan whose consumer's view
// ends before the bound it must reach (a lagging server's) reads again,
// undoing what it gathered, and fails with errStale when it never gets
// there; a scan that gets there reads once.
func TestScan_AReadThatEndsShortIsReadAgain(t *testing.T) {
	ctx := context.Background()
	s := openInternal(t)
	data, err := encodeStep(record.Snapshot{ID: "i", Step: 1}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	last, err := s.publish(ctx, "m-1", "i", data, 0)
	if err != nil {
		t.Fatal(err)
	}
	read := func(until uint64) (resets, seen int, err error) {
		err = s.scan(ctx, s.stream("i"), s.subject("i"), jetstream.DeliverAllPolicy, until, func() { resets++; seen = 0 }, func(_ jetstream.Msg, _ uint64) error {
			seen++
			return nil
		})
		return resets, seen, err
	}
	resets, seen, err := read(last)
	if err != nil || resets != 0 || seen != 1 {
		t.Fatalf("a read to the last message: %d resets, %d seen, %v; want 0, 1, nil", resets, seen, err)
	}
	// A bound past what the stream holds stands for a leader ahead of
	// the server read from.
	resets, _, err = read(last + 3)
	if !errors.Is(err, errStale) || resets != staleTries-1 {
		t.Fatalf("a read that ends short: %d resets, %v; want %d and errStale", resets, err, staleTries-1)
	}
}

func TestRootOf(t *testing.T) {
	for id, want := range map[string]string{
		"a": "a", "a/KYC/1": "a", "a/KYC/1/CHECK/12": "a", "order/REVIEW/3": "order",
		"acme/order-1": "acme/order-1", "a/B/x": "a/B/x", "a/1": "a/1", "/B/1": "/B/1",
		"a//1": "a//1", "a/B/": "a/B/", "": "",
	} {
		if got := rootOf(id); got != want {
			t.Errorf("rootOf(%q) = %q, want %q", id, got, want)
		}
	}
}
