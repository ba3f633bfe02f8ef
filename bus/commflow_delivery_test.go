package bus_test

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/batonhq/baton/bus"
	"github.com/batonhq/baton/transport"
)

func TestCommFlow_Delivery_RedeliversUnackedMessage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBus(t, []string{"Orchestrator", "FlightAgent"})
		req := ackable("Orchestrator", "FlightAgent", "search_flights")
		mustSend(t, b, req)
		first := mustReceiveOne(t, b, "FlightAgent")
		if first != req || first.DeliveryCount != 1 {
			t.Fatalf("got %p delivery %d, want the message itself, delivery 1", first, first.DeliveryCount)
		}
		assertCounts(t, b, flowCounts{Accepted: 1, InFlight: 1})

		time.Sleep(bus.DefaultAckTimeout - time.Millisecond)
		synctest.Wait()
		assertEmpty(t, b, "FlightAgent")

		time.Sleep(time.Millisecond) // the agent "crashed": no ack in time
		synctest.Wait()
		assertCounts(t, b, flowCounts{Accepted: 1, Queued: 1})
		again := mustReceiveOne(t, b, "FlightAgent")
		if again.MessageID != req.MessageID || again.DeliveryCount != 2 || again == first {
			t.Fatalf("got %s delivery %d, want a copy of %s with delivery 2", again.MessageID, again.DeliveryCount, req.MessageID)
		}
		if first.DeliveryCount != 1 {
			t.Errorf("got the first copy's delivery count changed to %d, want it left at 1", first.DeliveryCount)
		}
		if err := b.Ack(t.Context(), again); err != nil {
			t.Fatal(err)
		}
		// Delivered is counted once, at the ack; the ACK itself is a new message.
		s := assertCounts(t, b, flowCounts{Accepted: 2, Delivered: 1, Queued: 1})
		if s.Redeliveries != 1 || s.Acks != 1 {
			t.Errorf("got redeliveries %d acks %d, want 1 and 1", s.Redeliveries, s.Acks)
		}
		if ack := mustReceiveOne(t, b, "Orchestrator"); ack.Type != transport.MessageAck || ack.CorrelationID != req.MessageID {
			t.Errorf("got %s correlated to %s, want the ACK of %s", ack.Type, ack.CorrelationID, req.MessageID)
		}
		time.Sleep(time.Hour)
		synctest.Wait()
		assertCounts(t, b, flowCounts{Accepted: 2, Delivered: 2})
	})
}

func TestCommFlow_Delivery_DeadLettersAfterMaxDeliveries(t *testing.T) {
	tests := []struct {
		name string
		opts []bus.Option
		max  int
	}{
		{"default 3", nil, bus.DefaultMaxDeliveries},
		{"WithMaxDeliveries 5", []bus.Option{bus.WithMaxDeliveries(5)}, 5},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := newBus(t, []string{"FlightAgent"}, tc.opts...)
				req := ackable("Orchestrator", "FlightAgent", "search_flights")
				mustSend(t, b, req)
				for n := 1; n <= tc.max; n++ {
					m := mustReceiveOne(t, b, "FlightAgent")
					if m.DeliveryCount != n {
						t.Fatalf("got delivery %d, want %d", m.DeliveryCount, n)
					}
					time.Sleep(bus.DefaultAckTimeout)
					synctest.Wait()
				}
				assertEmpty(t, b, "FlightAgent")
				s := assertCounts(t, b, flowCounts{Accepted: 1, DeadLettered: 1})
				d := deadLetterOf(t, b, req.MessageID)
				if d.Reason != transport.ReasonMaxRetries || d.Attempts != tc.max || s.Redeliveries != uint64(tc.max-1) {
					t.Errorf("got reason %s attempts %d redeliveries %d, want max_retries %d %d", d.Reason, d.Attempts, s.Redeliveries, tc.max, tc.max-1)
				}
			})
		})
	}
}

func TestCommFlow_Delivery_AckTimeoutOverrides(t *testing.T) {
	tests := []struct {
		name    string
		opts    []bus.Option
		message time.Duration
		want    time.Duration
	}{
		{"bus default", nil, 0, bus.DefaultAckTimeout},
		{"WithAckTimeout", []bus.Option{bus.WithAckTimeout(5 * time.Second)}, 0, 5 * time.Second},
		{"per message", []bus.Option{bus.WithAckTimeout(5 * time.Second)}, 2 * time.Second, 2 * time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := newBus(t, []string{"FlightAgent"}, tc.opts...)
				req := ackable("Orchestrator", "FlightAgent", "search")
				req.AckTimeout = tc.message
				mustSend(t, b, req)
				start := time.Now()
				mustReceiveOne(t, b, "FlightAgent")
				m, err := b.ReceiveWait(t.Context(), "FlightAgent")
				if err != nil {
					t.Fatal(err)
				}
				if got := time.Since(start); got != tc.want || m.DeliveryCount != 2 {
					t.Errorf("got redelivery %d after %v, want delivery 2 after %v", m.DeliveryCount, got, tc.want)
				}
			})
		})
	}
}

func TestCommFlow_Delivery_NackRedeliversNow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBus(t, []string{"FlightAgent"})
		first := ackable("Orchestrator", "FlightAgent", "first")
		second := request("Orchestrator", "FlightAgent", "second")
		mustSend(t, b, first)
		mustSend(t, b, second)
		got := mustReceiveOne(t, b, "FlightAgent")
		if err := b.Nack(t.Context(), got); err != nil {
			t.Fatal(err)
		}
		// The redelivery keeps its place ahead of later messages of its priority.
		again := mustReceiveOne(t, b, "FlightAgent")
		if again.MessageID != first.MessageID || again.DeliveryCount != 2 {
			t.Fatalf("got %q delivery %d, want %q again with delivery 2", again.Action(), again.DeliveryCount, "first")
		}
		if err := b.Nack(t.Context(), got); !errors.Is(err, transport.ErrValidation) {
			t.Errorf("got %v nacking a stale copy, want ErrValidation", err)
		}
		if err := b.Nack(t.Context(), again); err != nil {
			t.Fatal(err)
		}
		last := mustReceiveOne(t, b, "FlightAgent")
		if err := b.Nack(t.Context(), last); err != nil { // third delivery: dead-lettered
			t.Fatal(err)
		}
		if got := mustReceiveOne(t, b, "FlightAgent"); got.MessageID != second.MessageID {
			t.Errorf("got %q, want %q once the first is dead-lettered", got.Action(), "second")
		}
		s := assertCounts(t, b, flowCounts{Accepted: 2, Delivered: 1, DeadLettered: 1})
		if s.Nacks != 3 || deadLetterOf(t, b, first.MessageID).Reason != transport.ReasonMaxRetries {
			t.Errorf("got nacks %d, want 3 and first dead-lettered max_retries", s.Nacks)
		}
	})
}

func TestCommFlow_Delivery_RejectDeadLettersAndNotifiesSender(t *testing.T) {
	b := newBus(t, []string{"Orchestrator", "PaymentAgent"})
	req := ackable("Orchestrator", "PaymentAgent", "process_payment")
	mustSend(t, b, req)
	got := mustReceiveOne(t, b, "PaymentAgent")
	if err := b.Reject(t.Context(), got, "card declined"); err != nil {
		t.Fatal(err)
	}
	d := deadLetterOf(t, b, req.MessageID)
	if d.Reason != transport.ReasonRejected || d.LastError != "card declined" || d.Retryable() {
		t.Errorf("got %s %q retryable %v, want rejected %q, not retryable", d.Reason, d.LastError, d.Retryable(), "card declined")
	}
	e := mustReceiveOne(t, b, "Orchestrator")
	if e.Type != transport.MessageError || e.InReplyTo != req.MessageID || e.CorrelationID != req.MessageID ||
		e.Action() != "rejected" || e.Content["error"] != "card declined" || e.From != "PaymentAgent" {
		t.Errorf("got %+v, want an ERROR from PaymentAgent about %s", e, req.MessageID)
	}
	if err := b.Ack(t.Context(), got); !errors.Is(err, transport.ErrValidation) {
		t.Errorf("got %v acking a rejected message, want ErrValidation", err)
	}
	s := assertCounts(t, b, flowCounts{Accepted: 2, Delivered: 1, DeadLettered: 1})
	if s.Rejects != 1 || s.DeadLettersByReason[transport.ReasonRejected] != 1 {
		t.Errorf("got rejects %d by reason %v, want 1", s.Rejects, s.DeadLettersByReason)
	}
}

func TestCommFlow_Delivery_LateAckWithdrawsRedelivery(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBus(t, []string{"SlowAgent"})
		req := ackable("Orchestrator", "SlowAgent", "slow_work")
		mustSend(t, b, req)
		got := mustReceiveOne(t, b, "SlowAgent")
		time.Sleep(bus.DefaultAckTimeout + time.Second) // slower than its ack timeout
		synctest.Wait()
		assertCounts(t, b, flowCounts{Accepted: 1, Queued: 1})
		if err := b.Ack(t.Context(), got); err != nil {
			t.Fatalf("got %v acking late, want the ack accepted", err)
		}
		assertEmpty(t, b, "SlowAgent")
		assertCounts(t, b, flowCounts{Accepted: 1, Delivered: 1})
	})
}

// An acknowledged message's bookkeeping is reused by the next requires_ack
// message: whichever are acknowledged, on time or late, the others are
// still redelivered with their own counts, and an acknowledged one stays
// acknowledged.
func TestCommFlow_Delivery_TracksEachMessageAfterAcks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBus(t, []string{"Worker"})
		ack := func(m *transport.Message) {
			t.Helper()
			if err := b.Ack(t.Context(), m); err != nil {
				t.Fatalf("ack %s: %v", m.Action(), err)
			}
		}
		for _, a := range []string{"a1", "a2"} {
			mustSend(t, b, ackable("Orchestrator", "Worker", a))
			ack(mustReceiveOne(t, b, "Worker"))
		}
		late := ackable("Orchestrator", "Worker", "late")
		mustSend(t, b, late)
		gotLate := mustReceiveOne(t, b, "Worker")
		time.Sleep(bus.DefaultAckTimeout)
		synctest.Wait()
		ack(gotLate) // withdraws its queued redelivery

		kept, dropped := ackable("Orchestrator", "Worker", "kept"), ackable("Orchestrator", "Worker", "dropped")
		mustSend(t, b, kept)
		mustSend(t, b, dropped)
		gotKept, gotDropped := mustReceiveOne(t, b, "Worker"), mustReceiveOne(t, b, "Worker")
		if gotKept != kept || gotDropped != dropped || kept.DeliveryCount != 1 || dropped.DeliveryCount != 1 {
			t.Fatalf("got %s (%d), %s (%d), want kept and dropped, delivery 1 each",
				gotKept.Action(), gotKept.DeliveryCount, gotDropped.Action(), gotDropped.DeliveryCount)
		}
		ack(gotKept)
		time.Sleep(bus.DefaultAckTimeout)
		synctest.Wait()
		again := mustReceiveOne(t, b, "Worker")
		if again.MessageID != dropped.MessageID || again.DeliveryCount != 2 {
			t.Fatalf("got %s delivery %d, want %s again, delivery 2", again.Action(), again.DeliveryCount, dropped.Action())
		}
		assertEmpty(t, b, "Worker")
		if err := b.Ack(t.Context(), gotKept); err == nil {
			t.Error("got a second ack of kept accepted, want it refused: not awaiting one")
		}
		ack(again)
		assertCounts(t, b, flowCounts{Accepted: 5, Delivered: 5})
	})
}

func TestCommFlow_Delivery_UnregisterDeadLettersInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBus(t, []string{"CrashingAgent"})
		req := ackable("Orchestrator", "CrashingAgent", "work")
		mustSend(t, b, req)
		mustReceiveOne(t, b, "CrashingAgent")
		if err := b.Unregister("CrashingAgent"); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * bus.DefaultAckTimeout) // the ack timer is gone with the mailbox
		synctest.Wait()
		assertCounts(t, b, flowCounts{Accepted: 1, DeadLettered: 1})
		if d := deadLetterOf(t, b, req.MessageID); d.Reason != transport.ReasonReceiverNotFound {
			t.Errorf("got %s, want receiver_not_found", d.Reason)
		}
	})
}

func TestCommFlow_Delivery_AckArgumentErrors(t *testing.T) {
	b := newBus(t, []string{"FlightAgent"})
	plain := request("Orchestrator", "FlightAgent", "x")
	mustSend(t, b, plain)
	mustReceiveOne(t, b, "FlightAgent")
	never := ackable("Orchestrator", "FlightAgent", "never sent")
	never.MessageID = "not-sent"
	ghost := ackable("Orchestrator", "Ghost", "x")
	tests := []struct {
		name  string
		m     *transport.Message
		field string
		is    error
	}{
		{"nil", nil, "message", transport.ErrValidation},
		{"no requires_ack", plain, "requires_ack", transport.ErrValidation},
		{"not in flight", never, "message_id", transport.ErrValidation},
		{"unknown receiver", ghost, "", transport.ErrUnknownAgent},
	}
	ops := map[string]func(*transport.Message) error{
		"Ack":    func(m *transport.Message) error { return b.Ack(t.Context(), m) },
		"Nack":   func(m *transport.Message) error { return b.Nack(t.Context(), m) },
		"Reject": func(m *transport.Message) error { return b.Reject(t.Context(), m, "no") },
	}
	for _, tc := range tests {
		for op, f := range ops {
			t.Run(tc.name+"/"+op, func(t *testing.T) {
				err := f(tc.m)
				var ve *transport.ValidationError
				if !errors.Is(err, tc.is) || tc.field != "" && (!errors.As(err, &ve) || ve.Field != tc.field) {
					t.Errorf("got %v, want %v on field %q", err, tc.is, tc.field)
				}
			})
		}
	}
}

func TestCommFlow_Delivery_AckMessagesCanBeTurnedOff(t *testing.T) {
	for _, on := range []bool{true, false} {
		b := newBus(t, []string{"Orchestrator", "FlightAgent"}, bus.WithAckMessages(on))
		mustSend(t, b, ackable("Orchestrator", "FlightAgent", "search"))
		if err := b.Ack(t.Context(), mustReceiveOne(t, b, "FlightAgent")); err != nil {
			t.Fatal(err)
		}
		if got := len(receiveAll(t, b, "Orchestrator")); got != map[bool]int{true: 1, false: 0}[on] {
			t.Errorf("WithAckMessages(%v): got %d ACKs, want %v", on, got, on)
		}
		if s := b.Metrics(); s.Acks != 1 || s.InFlight != 0 {
			t.Errorf("got acks %d in flight %d, want the ack taken either way", s.Acks, s.InFlight)
		}
	}
}
