package feature_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/batonhq/baton/bus/feature"
	"github.com/batonhq/baton/clock"
	"github.com/batonhq/baton/transport"
)

// Dead-letter processing runs on both transports with a manual clock that
// starts at the wall clock's second: the tests stamp their messages with
// it, so that ages and backoffs are exact while the transports (which
// check TTLs on the wall clock) see the messages as fresh.

// newDLQ returns tr with dead-letter processing under p, closed when the
// test ends, and its clock.
func newDLQ(t *testing.T, tr transport.Transport, p feature.DeadLetterPolicy) (*feature.DeadLetters, *clock.Manual) {
	t.Helper()
	clk := clock.NewManual(time.Now().UTC().Truncate(time.Second))
	d := feature.NewDeadLetters(tr, p, clk)
	t.Cleanup(func() { _ = d.Close() })
	return d, clk
}

// stamped sets m's timestamp to the clock's now.
func stamped(m *transport.Message, clk *clock.Manual) *transport.Message {
	m.Timestamp = clk.Now()
	return m
}

// process runs one pass, failing the test on error.
func process(t *testing.T, d *feature.DeadLetters) feature.DeadLetterReport {
	t.Helper()
	rep, err := d.ProcessDeadLetters(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// flowCounts are the accounting terms of a snapshot.
type flowCounts struct {
	Accepted, Delivered, DeadLettered uint64
	Queued, InFlight                  int
}

// checkCounts checks the invariant and the exact accounting terms, asking
// again for a while: natsbus counts a message taken as delivered once the
// server has processed its ack, a moment after TakeWork returns.
func checkCounts(t *testing.T, tr transport.Transport, want flowCounts) {
	t.Helper()
	var got flowCounts
	for range 2000 {
		s := checkBalanced(t, tr)
		if got = (flowCounts{s.Accepted, s.Delivered, s.DeadLettered, s.Queued, s.InFlight}); got == want {
			return
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatalf("got %+v, want %+v", got, want)
}

func TestCommFlow_DeadLetter_RetriesWithBackoffUpToThree(t *testing.T) {
	onEach(t, func(t *testing.T, tr transport.Transport) {
		d, clk := newDLQ(t, tr, feature.DeadLetterPolicy{Backoff: 10 * time.Second})
		openBox(t, tr, "B", 1)
		fillBox(t, tr, "B", 1)
		m := stamped(recWork("A", "B", "payload"), clk)
		if err := tr.SendWork(t.Context(), m); !errors.Is(err, transport.ErrQueueFull) {
			t.Fatalf("got %v, want ErrQueueFull", err)
		}
		steps := []struct {
			wait    time.Duration
			drain   bool // empty B before processing
			retried int
			retries int // of the dead letter afterwards; -1 when it was delivered
		}{
			{0, false, 0, 0},                // backoff 10s not over
			{10 * time.Second, false, 1, 1}, // retry 1 fails: B still full
			{10 * time.Second, false, 0, 1}, // backoff now 20s
			{10 * time.Second, false, 1, 2}, // retry 2 fails
			{40 * time.Second, true, 1, -1}, // retry 3 delivered
		}
		for i, st := range steps {
			clk.Advance(st.wait)
			if st.drain {
				drain(t, tr, "B", 1)
			}
			if rep := process(t, d); rep.Retried != st.retried {
				t.Fatalf("step %d: got %d retried, want %d", i, rep.Retried, st.retried)
			}
			dls := d.Held()
			switch {
			case st.retries < 0 && len(dls) != 0:
				t.Fatalf("step %d: got %d dead letters, want none", i, len(dls))
			case st.retries >= 0 && (len(dls) != 1 || dls[0].Retries != st.retries || dls[0].Message.MessageID != m.MessageID):
				t.Fatalf("step %d: got %+v, want one dead letter of %s with %d retries", i, dls, m.MessageID, st.retries)
			}
		}
		got := takeN(t, tr, "B", 1)[0]
		if got.MessageID != m.MessageID || fmt.Sprint(got.Metadata[transport.MetadataDeadLetterRetries]) != "3" {
			t.Errorf("got %s metadata %v, want %s after 3 retries", got.MessageID, got.Metadata, m.MessageID)
		}
		// Each retry's key is the first key's, with its number (not the
		// suffixes of the retries before it).
		if want := m.MessageID + "/dead-letter-retry-3"; got.IdempotencyKey != want {
			t.Errorf("got key %q, want %q", got.IdempotencyKey, want)
		}
		// 1 filler + the message + 3 retries accepted; the filler and the
		// last retry delivered; the message and 2 failed retries dead.
		checkCounts(t, tr, flowCounts{Accepted: 5, Delivered: 2, DeadLettered: 3})
		if s := d.Stats(); s.Retried != 3 || s.Passes != 5 {
			t.Errorf("got retried %d passes %d, want 3 and 5", s.Retried, s.Passes)
		}
		var actions []string
		for _, a := range d.Audit() {
			actions = append(actions, a.Action)
		}
		if len(actions) != 3 || actions[0] != feature.AuditRetried || actions[2] != feature.AuditRetried {
			t.Errorf("got audit %v, want 3 retried records", actions)
		}
	})
}

func TestCommFlow_DeadLetter_ExhaustedStayUntilStale(t *testing.T) {
	onEach(t, func(t *testing.T, tr transport.Transport) {
		d, clk := newDLQ(t, tr, feature.DeadLetterPolicy{Backoff: time.Second})
		m := stamped(recWork("A", "Ghost", "lost"), clk)
		m.TTL = 10 * time.Minute
		_ = tr.SendWork(t.Context(), m)
		for range 6 {
			clk.Advance(10 * time.Second)
			process(t, d)
		}
		if dls := d.Held(); len(dls) != 1 || dls[0].Retries != 3 {
			t.Fatalf("got %+v, want one dead letter retried 3 times and no more", dls)
		}
		clk.Advance(20 * time.Minute)
		if rep := process(t, d); rep.Discarded != 1 || rep.Held != 0 {
			t.Fatalf("got %+v, want it discarded past twice its TTL", rep)
		}
	})
}

func TestCommFlow_DeadLetter_DiscardsStaleWithAudit(t *testing.T) {
	onEach(t, func(t *testing.T, tr transport.Transport) {
		d, clk := newDLQ(t, tr, feature.DeadLetterPolicy{})
		openBox(t, tr, "B", 0)
		rejected := stamped(recWork("A", "B", "refused"), clk)
		rejected.TTL, rejected.RequiresAck = time.Minute, true
		if err := tr.SendWork(t.Context(), rejected); err != nil {
			t.Fatal(err)
		}
		if err := tr.Reject(t.Context(), takeN(t, tr, "B", 1)[0], "no"); err != nil {
			t.Fatal(err)
		}
		// Expired on the wall clock when sent; on the test's clock it is a
		// minute older than the rejected one.
		expired := recWork("A", "B", "too late")
		expired.TTL, expired.Timestamp = time.Minute, clk.Now().Add(-time.Minute)
		if err := tr.SendWork(t.Context(), expired); err != nil {
			t.Fatal(err)
		}
		for i := 0; len(d.Held()) < 2 && i < 200; i++ {
			if ms, err := tr.TakeWork(t.Context(), "B", 1); err != nil || len(ms) != 0 {
				t.Fatalf("got %d messages (%v), want none: the message expired", len(ms), err)
			}
		}
		clk.Advance(time.Minute)
		if rep := process(t, d); rep.Retried != 0 || rep.Discarded != 0 || rep.Held != 2 {
			t.Fatalf("got %+v, want rejected and expired letters neither retried nor yet stale", rep)
		}
		clk.Advance(time.Minute + time.Second)
		rep := process(t, d)
		if rep.Discarded != 2 || rep.Held != 0 {
			t.Fatalf("got %+v, want both discarded once older than twice their TTL", rep)
		}
		audit := d.Audit()
		if len(audit) != 2 || audit[0].Action != feature.AuditDiscardedStale || audit[0].MessageID != rejected.MessageID ||
			audit[0].Reason != transport.ReasonRejected || audit[0].Age != 2*time.Minute+time.Second || audit[1].Reason != transport.ReasonTTLExpired {
			t.Errorf("got audit %+v, want two discarded_stale records", audit)
		}
		s := checkBalanced(t, tr)
		if st := d.Stats(); st.Stale != 2 || st.Held != 0 || s.DeadLettered != 2 {
			t.Errorf("got stale %d held %d dead %d, want 2 0 2 (discarded letters stay counted)", st.Stale, st.Held, s.DeadLettered)
		}
	})
}

func TestCommFlow_DeadLetter_AlertOnBurst(t *testing.T) {
	onEach(t, func(t *testing.T, tr transport.Transport) {
		d, clk := newDLQ(t, tr, feature.DeadLetterPolicy{})
		var alerts []feature.DeadLetterAlert
		d.OnDeadLetterAlert(func(a feature.DeadLetterAlert) { alerts = append(alerts, a) })
		lose := func(n int, every time.Duration) {
			for range n {
				_ = tr.SendWork(t.Context(), recWork("A", "Ghost", "lost"))
				clk.Advance(every)
			}
		}
		lose(10, 20*time.Second) // 10 in 5 minutes: not more than 10
		if len(alerts) != 0 {
			t.Fatalf("got %d alerts, want none for 10 dead letters", len(alerts))
		}
		lose(1, 0) // the 11th within 5 minutes
		if len(alerts) != 1 || alerts[0].Count != 11 || alerts[0].Threshold != 10 || alerts[0].Window != 5*time.Minute {
			t.Fatalf("got %+v, want one alert of 11 dead letters", alerts)
		}
		lose(20, time.Second) // still the same burst: no second alert
		if len(alerts) != 1 {
			t.Fatalf("got %d alerts, want 1 per window", len(alerts))
		}
		clk.Advance(5 * time.Minute)
		lose(11, time.Second)
		if s := d.Stats(); len(alerts) != 2 || s.Alerts != 2 {
			t.Errorf("got %d alerts (%d counted), want a second one for a new burst", len(alerts), s.Alerts)
		}
	})
}

func TestCommFlow_DeadLetter_PeriodicProcessing(t *testing.T) {
	onEach(t, func(t *testing.T, tr transport.Transport) {
		d, clk := newDLQ(t, tr, feature.DeadLetterPolicy{Periodic: true, Interval: time.Minute, Backoff: time.Second})
		m := stamped(recWork("A", "Late", "work"), clk)
		if err := tr.SendWork(t.Context(), m); !errors.Is(err, transport.ErrUnknownAgent) {
			t.Fatalf("got %v, want ErrUnknownAgent", err)
		}
		openBox(t, tr, "Late", 0) // the agent comes back
		clk.Advance(time.Minute)  // the pass runs in the clock's timer
		got := takeN(t, tr, "Late", 1)[0]
		if got.MessageID != m.MessageID || clk.Now().Sub(got.Timestamp) != time.Minute {
			t.Fatalf("got %s sent %v ago, want %s after one interval", got.MessageID, clk.Now().Sub(got.Timestamp), m.MessageID)
		}
		checkCounts(t, tr, flowCounts{Accepted: 2, Delivered: 1, DeadLettered: 1})
		if s := d.Stats(); s.Passes != 1 {
			t.Errorf("got %d passes, want 1", s.Passes)
		}
		clk.Advance(time.Minute)
		if s := d.Stats(); s.Passes != 2 {
			t.Errorf("got %d passes, want the timer set again", s.Passes)
		}
	})
}

func TestCommFlow_DeadLetter_ManualActionsAudited(t *testing.T) {
	onEach(t, func(t *testing.T, tr transport.Transport) {
		d, _ := newDLQ(t, tr, feature.DeadLetterPolicy{})
		_ = tr.SendWork(t.Context(), recWork("A", "Ghost", "one"))
		_ = tr.SendWork(t.Context(), recWork("A", "Ghost", "two"))
		dls := d.Held()
		if len(dls) != 2 {
			t.Fatalf("got %d dead letters held, want 2", len(dls))
		}
		if err := d.Discard(dls[0].Message.MessageID); err != nil {
			t.Fatal(err)
		}
		if err := d.Requeue(t.Context(), dls[1].Message.MessageID); !errors.Is(err, transport.ErrUnknownAgent) {
			t.Errorf("got %v requeueing to Ghost, want ErrUnknownAgent", err)
		}
		audit := d.Audit()
		if len(audit) != 2 || audit[0].Action != feature.AuditDiscarded || audit[1].Action != feature.AuditRequeued {
			t.Errorf("got %+v, want discarded then requeued", audit)
		}
		if held := d.Held(); len(held) != 1 || held[0].Message.MessageID != dls[1].Message.MessageID {
			t.Errorf("got %+v held, want the requeued one back after failing again", held)
		}
		if err := d.Discard("nope"); !errors.Is(err, feature.ErrDeadLetterNotFound) {
			t.Errorf("got %v, want ErrDeadLetterNotFound", err)
		}
		if err := d.Requeue(t.Context(), "nope"); !errors.Is(err, feature.ErrDeadLetterNotFound) {
			t.Errorf("got %v, want ErrDeadLetterNotFound", err)
		}
		if _, err := d.ProcessDeadLetters(t.Context()); err != nil {
			t.Fatal(err)
		}
		_ = d.Close()
		if _, err := d.ProcessDeadLetters(t.Context()); !errors.Is(err, transport.ErrClosed) {
			t.Errorf("got %v after Close, want ErrClosed", err)
		}
		var nilCtx context.Context
		if _, err := d.ProcessDeadLetters(nilCtx); !errors.Is(err, transport.ErrValidation) {
			t.Errorf("got %v for a nil ctx, want ErrValidation", err)
		}
	})
}
