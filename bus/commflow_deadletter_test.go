package bus_test

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/batonhq/baton/bus"
	"github.com/batonhq/baton/transport"
)

func process(t *testing.T, b *bus.Bus) bus.DeadLetterReport {
	t.Helper()
	rep, err := b.ProcessDeadLetters(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func TestCommFlow_DeadLetter_RetriesWithBackoffUpToThree(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBus(t, nil, bus.WithDeadLetterPolicy(bus.DeadLetterPolicy{Backoff: 10 * time.Second}))
		if err := b.Register("B", bus.WithMailboxCapacity(1)); err != nil {
			t.Fatal(err)
		}
		mustSend(t, b, request("A", "B", "filler"))
		m := request("A", "B", "payload")
		if err := b.Send(t.Context(), m); !errors.Is(err, transport.ErrQueueFull) {
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
			time.Sleep(st.wait)
			if st.drain {
				mustReceiveOne(t, b, "B")
			}
			if rep := process(t, b); rep.Retried != st.retried {
				t.Fatalf("step %d: got %d retried, want %d", i, rep.Retried, st.retried)
			}
			dls := b.DeadLetters()
			switch {
			case st.retries < 0 && len(dls) != 0:
				t.Fatalf("step %d: got %d dead letters, want none", i, len(dls))
			case st.retries >= 0 && (len(dls) != 1 || dls[0].Retries != st.retries || dls[0].Message.MessageID != m.MessageID):
				t.Fatalf("step %d: got %+v, want one dead letter of %s with %d retries", i, dls, m.MessageID, st.retries)
			}
		}
		got := mustReceiveOne(t, b, "B")
		if got.MessageID != m.MessageID || got.Metadata[transport.MetadataDeadLetterRetries] != 3 {
			t.Errorf("got %s metadata %v, want %s after 3 retries", got.MessageID, got.Metadata, m.MessageID)
		}
		// 1 filler + the message + 3 retries accepted; the filler and the
		// last retry delivered; the message and 2 failed retries dead.
		s := assertCounts(t, b, flowCounts{Accepted: 5, Delivered: 2, DeadLettered: 3})
		if s.DeadLetterRetried != 3 || s.DeadLetterPasses != 5 {
			t.Errorf("got retried %d passes %d, want 3 and 5", s.DeadLetterRetried, s.DeadLetterPasses)
		}
		var actions []string
		for _, a := range b.DeadLetterAudit() {
			actions = append(actions, a.Action)
		}
		if len(actions) != 3 || actions[0] != bus.AuditRetried || actions[2] != bus.AuditRetried {
			t.Errorf("got audit %v, want 3 retried records", actions)
		}
	})
}

func TestCommFlow_DeadLetter_ExhaustedStayUntilStale(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBus(t, nil, bus.WithDeadLetterPolicy(bus.DeadLetterPolicy{Backoff: time.Second}))
		m := request("A", "Ghost", "lost")
		m.TTL = 10 * time.Minute
		_ = b.Send(t.Context(), m)
		for range 6 {
			time.Sleep(10 * time.Second)
			process(t, b)
		}
		if dls := b.DeadLetters(); len(dls) != 1 || dls[0].Retries != 3 {
			t.Fatalf("got %+v, want one dead letter retried 3 times and no more", dls)
		}
		time.Sleep(20 * time.Minute)
		if rep := process(t, b); rep.Discarded != 1 || rep.Held != 0 {
			t.Fatalf("got %+v, want it discarded past twice its TTL", rep)
		}
	})
}

func TestCommFlow_DeadLetter_DiscardsStaleWithAudit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBus(t, []string{"B"})
		rejected := ackable("A", "B", "refused")
		rejected.TTL = time.Minute
		mustSend(t, b, rejected)
		if err := b.Reject(t.Context(), mustReceiveOne(t, b, "B"), "no"); err != nil {
			t.Fatal(err)
		}
		expired := request("A", "B", "too late")
		expired.TTL = time.Minute
		mustSend(t, b, expired)
		time.Sleep(time.Minute)
		assertEmpty(t, b, "B") // dead-lettered ttl_expired
		if rep := process(t, b); rep.Retried != 0 || rep.Discarded != 0 || rep.Held != 2 {
			t.Fatalf("got %+v, want rejected and expired letters neither retried nor yet stale", rep)
		}
		time.Sleep(time.Minute + time.Second)
		rep := process(t, b)
		if rep.Discarded != 2 || rep.Held != 0 {
			t.Fatalf("got %+v, want both discarded once older than twice their TTL", rep)
		}
		audit := b.DeadLetterAudit()
		if len(audit) != 2 || audit[0].Action != bus.AuditDiscardedStale || audit[0].MessageID != rejected.MessageID ||
			audit[0].Reason != transport.ReasonRejected || audit[0].Age != 2*time.Minute+time.Second || audit[1].Reason != transport.ReasonTTLExpired {
			t.Errorf("got audit %+v, want two discarded_stale records", audit)
		}
		if s := assertBalanced(t, b); s.DeadLetterStale != 2 || s.DeadLettersHeld != 0 || s.DeadLettered != 2 {
			t.Errorf("got stale %d held %d dead %d, want 2 0 2 (discarded letters stay counted)", s.DeadLetterStale, s.DeadLettersHeld, s.DeadLettered)
		}
	})
}

func TestCommFlow_DeadLetter_AlertOnBurst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBus(t, nil)
		var alerts []bus.DeadLetterAlert
		b.OnDeadLetterAlert(func(a bus.DeadLetterAlert) { alerts = append(alerts, a) })
		lose := func(n int, every time.Duration) {
			for range n {
				_ = b.Send(t.Context(), request("A", "Ghost", "lost"))
				time.Sleep(every)
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
		time.Sleep(5 * time.Minute)
		lose(11, time.Second)
		if s := b.Metrics(); len(alerts) != 2 || s.DeadLetterAlerts != 2 {
			t.Errorf("got %d alerts (%d counted), want a second one for a new burst", len(alerts), s.DeadLetterAlerts)
		}
	})
}

func TestCommFlow_DeadLetter_PeriodicProcessing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBus(t, nil, bus.WithDeadLetterProcessing(bus.DeadLetterPolicy{Interval: time.Minute, Backoff: time.Second}))
		m := request("A", "Late", "work")
		if err := b.Send(t.Context(), m); !errors.Is(err, transport.ErrUnknownAgent) {
			t.Fatalf("got %v, want ErrUnknownAgent", err)
		}
		if err := b.Register("Late"); err != nil { // the agent comes back
			t.Fatal(err)
		}
		got, err := b.ReceiveWait(t.Context(), "Late") // delivered by the next pass
		if err != nil || got.MessageID != m.MessageID || time.Since(got.Timestamp) != time.Minute {
			t.Fatalf("got %v after %v, want %s after one interval", err, time.Since(got.Timestamp), m.MessageID)
		}
		synctest.Wait() // the pass finishes
		if s := assertCounts(t, b, flowCounts{Accepted: 2, Delivered: 1, DeadLettered: 1}); s.DeadLetterPasses != 1 {
			t.Errorf("got %d passes, want 1", s.DeadLetterPasses)
		}
	})
}

func TestCommFlow_DeadLetter_ManualActionsAudited(t *testing.T) {
	b := newBus(t, []string{"B"})
	_ = b.Send(t.Context(), request("A", "Ghost", "one"))
	_ = b.Send(t.Context(), request("A", "Ghost", "two"))
	dls := b.DeadLetters()
	if err := b.Discard(dls[0].Message.MessageID); err != nil {
		t.Fatal(err)
	}
	_ = b.Requeue(dls[1].Message.MessageID)
	audit := b.DeadLetterAudit()
	if len(audit) != 2 || audit[0].Action != bus.AuditDiscarded || audit[1].Action != bus.AuditRequeued {
		t.Errorf("got %+v, want discarded then requeued", audit)
	}
	if _, err := b.ProcessDeadLetters(t.Context()); err != nil {
		t.Fatal(err)
	}
	_ = b.Close()
	if _, err := b.ProcessDeadLetters(t.Context()); !errors.Is(err, transport.ErrClosed) {
		t.Errorf("got %v after Close, want ErrClosed", err)
	}
}
