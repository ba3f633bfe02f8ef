package natsstore

import (
	"context"
	"errors"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/batonhq/baton/natsserver"
	"github.com/batonhq/baton/record"
)

// laggingStream answers the first left asks for a subject's last message
// with old, as a server cut off from the others answers while it still
// thinks it leads the stream; everything else goes to the real stream.
type laggingStream struct {
	jetstream.Stream
	old  *jetstream.RawStreamMsg
	left int
	asks int
}

func (l *laggingStream) GetLastMsgForSubject(ctx context.Context, subject string) (*jetstream.RawStreamMsg, error) {
	l.asks++
	if l.left > 0 {
		l.left--
		return l.old, nil
	}
	return l.Stream.GetLastMsgForSubject(ctx, subject)
}

// twoSteps writes two steps of instance "i" with s: one running with three
// hand-offs in its outbox, then one completed with its outbox settled. It
// returns the first step's message, the one a lagging server answers.
func twoSteps(t *testing.T, s *Store) *jetstream.RawStreamMsg {
	t.Helper()
	ctx := context.Background()
	first, err := encodeStep(record.Snapshot{ID: "i", Step: 1, Status: record.StatusRunning},
		[]record.Entry{{Seq: 1, Kind: record.KindRuleFired, Rule: "ab", Step: 1}},
		[]record.Outgoing{{Key: "i:2", Step: 2}, {Key: "i:3", Step: 3}, {Key: "i:4", Step: 4}})
	if err != nil {
		t.Fatal(err)
	}
	seq1, err := s.publish(ctx, "m-1", "i", first, 0)
	if err != nil {
		t.Fatal(err)
	}
	second, err := encodeStep(record.Snapshot{ID: "i", Step: 5, Status: record.StatusCompleted, Outcome: "DONE"},
		[]record.Entry{{Seq: 2, Kind: record.KindRuleFired, Rule: "done", Step: 5}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.publish(ctx, "m-2", "i", second, seq1); err != nil {
		t.Fatal(err)
	}
	old, err := s.stream("i").GetMsg(ctx, seq1)
	if err != nil {
		t.Fatal(err)
	}
	return old
}

// lag makes the stream of instance "i" answer its first n asks for a last
// message with old.
func lag(s *Store, old *jetstream.RawStreamMsg, n int) *laggingStream {
	k := s.shardOf("i")
	l := &laggingStream{Stream: s.steps[k], old: old, left: n}
	s.steps[k] = l
	return l
}

// TestLast_NeverGoesBackInTime: once a store has seen an instance's step,
// a lagging server's answer with an earlier step (a former leader just
// back from a cut) is asked again, and a server that keeps lagging is an
// errStale error, never the instance's past as its present.
func TestLast_NeverGoesBackInTime(t *testing.T) {
	ctx := context.Background()
	s := openInternal(t)
	old := twoSteps(t, s)
	if snap, err := s.Instance(ctx, "i"); err != nil || snap.Step != 5 {
		t.Fatalf("got step %d, %v; want 5, nil", snap.Step, err)
	}

	l := lag(s, old, 2)
	snap, err := s.Instance(ctx, "i")
	if err != nil || snap.Step != 5 || snap.Status != record.StatusCompleted {
		t.Fatalf("a read meeting a lagging server twice: got step %d %s, %v; want step 5 completed", snap.Step, snap.Status, err)
	}
	if l.asks != 3 {
		t.Fatalf("got %d asks, want 3: two stale answers, then the leader's", l.asks)
	}

	l.left = 1000
	if _, err := s.Instance(ctx, "i"); !errors.Is(err, errStale) {
		t.Fatalf("a server lagging for good: got %v, want errStale", err)
	}
	if _, err := s.History(ctx, "i"); !errors.Is(err, errStale) {
		t.Fatalf("history from a server lagging for good: got %v, want errStale", err)
	}
	if _, err := s.Outbox(ctx, "i"); !errors.Is(err, errStale) {
		t.Fatalf("outbox from a server lagging for good: got %v, want errStale", err)
	}
}

// TestHistory_AfterInstancesSawItDone: a reader that listed an instance
// done (through a consumer, on an up-to-date server) and then reads its
// history and outbox from a lagging server gets the done instance's
// history and an empty outbox, not the first rule and three hand-offs.
func TestHistory_AfterInstancesSawItDone(t *testing.T) {
	ctx := context.Background()
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
	open := func() *Store {
		s, err := Open(ctx, nc, Config{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	old := twoSteps(t, open())

	reader := open()
	snaps, err := reader.Instances(ctx)
	if err != nil || len(snaps) != 1 || snaps[0].Status != record.StatusCompleted {
		t.Fatalf("got %+v, %v; want instance i completed", snaps, err)
	}
	lag(reader, old, 3)
	history, err := reader.History(ctx, "i")
	if err != nil {
		t.Fatal(err)
	}
	if len(history) != 2 || history[1].Rule != "done" {
		t.Fatalf("got history %+v, want the rules ab and done", history)
	}
	out, err := reader.Outbox(ctx, "i")
	if err != nil || len(out) != 0 {
		t.Fatalf("got outbox %+v, %v; want it empty", out, err)
	}
}
