package feature_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/batonhq/baton/bus"
	"github.com/batonhq/baton/bus/feature"
	"github.com/batonhq/baton/clock"
	"github.com/batonhq/baton/transport"
)

// newLimiter wraps e's transport in a rate limiter on e's clock, closed
// when the test ends (before the transport).
func newLimiter(t *testing.T, e *guardEnv, limits feature.RateLimits) *feature.RateLimiter {
	rl := feature.NewRateLimiter(e.tr, limits, e.clk)
	t.Cleanup(func() { _ = rl.Close() })
	return rl
}

// sendDeferred sends n NOTIFICATIONs from -> to at priority p through rl
// and returns how many were deferred.
func sendDeferred(t *testing.T, rl *feature.RateLimiter, from, to string, p transport.Priority, n int) int {
	t.Helper()
	deferred := 0
	for i := range n {
		m := guardMsg(transport.MessageNotification, from, to, fmt.Sprint("msg-", i))
		m.Priority = p
		d, err := rl.Send(t.Context(), m)
		if err != nil {
			t.Fatalf("send %s -> %s: %v", from, to, err)
		}
		if d {
			deferred++
		}
	}
	return deferred
}

func TestCommFlow_RateLimit_OutboundExcessWaitsNotDropped(t *testing.T) {
	guardEach(t, 0, func(t *testing.T, e *guardEnv) {
		e.open(t, 0, "B")
		rl := newLimiter(t, e, feature.RateLimits{Outbound: 60, Inbound: 6000, Burst: 2})
		if got := sendDeferred(t, rl, "A", "B", transport.PriorityNormal, 5); got != 3 {
			t.Fatalf("got %d deferred, want 3 past the burst of 2", got)
		}
		e.counts(t, rl, guardCounts{Accepted: 5, Queued: 5})
		if st := rl.Stats(); st.Deferred != 3 || st.DeferredTotal != 3 || st.DeferredFor["B"] != 3 || e.depth(t, "B") != 2 {
			t.Fatalf("got %+v depth %d, want 3 waiting for B, 3 counted, depth 2", st, e.depth(t, "B"))
		}
		for want := 3; want <= 5; want++ { // 60/min: one more each second
			e.clk.Advance(time.Second)
			if got := e.depth(t, "B"); got != want {
				t.Fatalf("got depth %d after %d s, want %d", got, want-2, want)
			}
		}
		msgs := e.takeAll(t, rl, "B", 5)
		for i, m := range msgs {
			if want := fmt.Sprint("msg-", i); m.Action() != want {
				t.Errorf("got %q at %d, want %q: the backlog leaves in order", m.Action(), i, want)
			}
		}
		e.counts(t, rl, guardCounts{Accepted: 5, Delivered: 5})
	})
}

func TestCommFlow_RateLimit_InboundLimitAcrossSenders(t *testing.T) {
	guardEach(t, 0, func(t *testing.T, e *guardEnv) {
		e.open(t, 0, "B")
		rl := newLimiter(t, e, feature.RateLimits{Outbound: 6000, Inbound: 60, Burst: 1})
		if got := sendDeferred(t, rl, "A", "B", transport.PriorityNormal, 1) + sendDeferred(t, rl, "C", "B", transport.PriorityNormal, 1); got != 1 {
			t.Fatalf("got %d deferred, want the second sender's message to wait for B's inbound limit", got)
		}
		e.clk.Advance(time.Second)
		if got := e.depth(t, "B"); got != 2 {
			t.Errorf("got depth %d, want 2 after a second", got)
		}
	})
}

func TestCommFlow_RateLimit_PriorityFactors(t *testing.T) {
	tests := []struct {
		p        transport.Priority
		n        int
		deferred int
		drained  time.Duration // when the whole batch is in the mailbox
	}{
		{transport.PriorityCritical, 50, 0, 0},                 // no limit
		{transport.PriorityHigh, 5, 1, 500 * time.Millisecond}, // 2/s, burst 4
		{transport.PriorityNormal, 3, 1, time.Second},          // 1/s, burst 2
		{transport.PriorityLow, 2, 1, 2 * time.Second},         // 0.5/s, burst 1
	}
	for _, tc := range tests {
		t.Run(tc.p.String(), func(t *testing.T) {
			guardEach(t, 0, func(t *testing.T, e *guardEnv) {
				e.open(t, 0, "B")
				rl := newLimiter(t, e, feature.RateLimits{Outbound: 60, Inbound: 6000, Burst: 2})
				if got := sendDeferred(t, rl, "A", "B", tc.p, tc.n); got != tc.deferred {
					t.Fatalf("got %d deferred, want %d", got, tc.deferred)
				}
				if tc.drained > 0 {
					e.clk.Advance(tc.drained - time.Millisecond)
					if got := e.depth(t, "B"); got != tc.n-1 {
						t.Fatalf("got depth %d just before %v, want %d", got, tc.drained, tc.n-1)
					}
					e.clk.Advance(time.Millisecond)
				}
				if got := e.depth(t, "B"); got != tc.n {
					t.Errorf("got depth %d, want all %d", got, tc.n)
				}
			})
		})
	}
}

// TestCommFlow_RateLimit_OffByDefault: a transport without a rate limiter
// queues every message at once.
func TestCommFlow_RateLimit_OffByDefault(t *testing.T) {
	guardEach(t, 0, func(t *testing.T, e *guardEnv) {
		e.open(t, 0, "B")
		e.sendN(t, e.tr, "A", "B", transport.PriorityLow, 500)
		if got := e.depth(t, "B"); got != 500 {
			t.Errorf("got depth %d, want all 500 queued without a rate limiter", got)
		}
	})
}

// TestCommFlow_RateLimit_DeferredToUnregisteredReceiver runs on the bus
// only: the transport interface has no way to remove a mailbox, and the
// bus's Unregister does.
func TestCommFlow_RateLimit_DeferredToUnregisteredReceiver(t *testing.T) {
	clk := clock.NewManual(time.Now())
	b := newBus(t, bus.WithClock(clk))
	e := &guardEnv{tr: b, clk: clk, bus: b}
	e.open(t, 0, "B")
	rl := newLimiter(t, e, feature.RateLimits{Outbound: 60, Burst: 1})
	sendDeferred(t, rl, "A", "B", transport.PriorityNormal, 3)
	if err := b.Unregister("B"); err != nil {
		t.Fatal(err)
	}
	e.counts(t, rl, guardCounts{Accepted: 3, DeadLettered: 1, Queued: 2})
	clk.Advance(2 * time.Second)
	s := e.counts(t, rl, guardCounts{Accepted: 3, DeadLettered: 3})
	if s.DeadLettersByReason[transport.ReasonReceiverNotFound] != 3 {
		t.Errorf("got %v, want 3 receiver_not_found", s.DeadLettersByReason)
	}
}

func TestCommFlow_RateLimit_CloseKeepsBacklogCounted(t *testing.T) {
	guardEach(t, 0, func(t *testing.T, e *guardEnv) {
		e.open(t, 0, "B")
		rl := newLimiter(t, e, feature.RateLimits{Outbound: 60, Burst: 1})
		sendDeferred(t, rl, "A", "B", transport.PriorityNormal, 4)
		if err := rl.Close(); err != nil {
			t.Fatal(err)
		}
		e.clk.Advance(time.Minute)
		e.counts(t, rl, guardCounts{Accepted: 4, Queued: 4})
		if st := rl.Stats(); st.Deferred != 3 {
			t.Errorf("got %d deferred after Close, want 3 still counted", st.Deferred)
		}
		late := guardMsg(transport.MessageNotification, "A", "B", "late")
		if _, err := rl.Send(t.Context(), late); !errors.Is(err, transport.ErrClosed) {
			t.Errorf("got %v, want ErrClosed after Close", err)
		}
		late.Priority = transport.PriorityCritical // never limited, refused all the same
		if err := rl.SendWork(t.Context(), late); !errors.Is(err, transport.ErrClosed) || rl.Close() != nil {
			t.Errorf("got %v, want ErrClosed after Close (and a second Close to return nil)", err)
		}
	})
}

// A deferred message that the transport inside the limiter refuses for
// good when its turn comes (here an open breaker) is counted as refused,
// and leaves the accounting.
func TestRateLimiter_RefusedWhenItsTurnCame(t *testing.T) {
	guardEach(t, 0, func(t *testing.T, e *guardEnv) {
		e.open(t, 0, "B")
		br := newBreakers(t, e, feature.BreakerSettings{Failures: 1})
		rl := newLimiter(t, &guardEnv{tr: br, clk: e.clk}, feature.RateLimits{Outbound: 60, Burst: 1})
		e.send(t, rl, guardAckable("A", "B", "first"))
		if deferred, err := rl.Send(t.Context(), guardAckable("A", "B", "second")); err != nil || !deferred {
			t.Fatalf("got deferred %v, %v, want the second message deferred", deferred, err)
		}
		if err := rl.Reject(t.Context(), e.takeOne(t, rl, "B"), "no"); err != nil { // opens B's breaker
			t.Fatal(err)
		}
		e.clk.Advance(time.Second)
		if st := rl.Stats(); st.Refused != 1 || st.Deferred != 0 {
			t.Errorf("got %+v, want the second message refused and nothing waiting", st)
		}
		e.counts(t, rl, guardCounts{Accepted: 1, DeadLettered: 1})
	})
}

// The decorators keep the transport's offers: a full mailbox refuses an
// offered message without accepting or dead-lettering it.
func TestGuards_KeepOffers(t *testing.T) {
	guardEach(t, 0, func(t *testing.T, e *guardEnv) {
		e.open(t, 2, "B")
		e.sendN(t, e.tr, "A", "B", transport.PriorityCritical, 2)
		for _, o := range []transport.Offerer{
			newLimiter(t, e, feature.RateLimits{}),
			newBreakers(t, e, feature.BreakerSettings{}),
			feature.NewPressureGauge(e.tr, feature.Backpressure{}, e.clk),
		} {
			before := e.tr.Metrics()
			m := guardMsg(transport.MessageRequest, "A", "B", "offered")
			m.Priority = transport.PriorityCritical
			if err := o.OfferWork(t.Context(), m); !errors.Is(err, transport.ErrQueueFull) {
				t.Fatalf("%T: got %v, want ErrQueueFull", o, err)
			}
			if after := e.tr.Metrics(); after.Accepted != before.Accepted || after.DeadLettered != before.DeadLettered {
				t.Errorf("%T: got accepted %d -> %d dead %d -> %d, want the offer neither accepted nor dead-lettered",
					o, before.Accepted, after.Accepted, before.DeadLettered, after.DeadLettered)
			}
			if free, capacity, err := o.(transport.RoomTeller).Room(t.Context(), "B"); err != nil || free != 0 || capacity != 2 {
				t.Errorf("%T: got room %d of %d (%v), want the transport's: 0 of 2", o, free, capacity, err)
			}
		}
	})
}

// A sender past its burst waits in its outbound queue; the limiter's clock
// lets the backlog go, one message per token.
func ExampleNewRateLimiter() {
	clk := clock.NewManual(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	b := bus.New(bus.WithClock(clk))
	defer b.Close()
	_ = b.Register("reviewer")
	rl := feature.NewRateLimiter(b, feature.RateLimits{Outbound: 60, Burst: 2}, clk) // one a second after two
	defer rl.Close()
	ctx := context.Background()
	for range 3 {
		deferred, err := rl.Send(ctx, &transport.Message{Type: transport.MessageRequest, From: "lead", To: "reviewer",
			Content: map[string]any{"action": "review"}})
		fmt.Println(deferred, err)
	}
	free, _, _ := b.Room(ctx, "reviewer")
	clk.Advance(time.Second)
	after, _, _ := b.Room(ctx, "reviewer")
	fmt.Println(free-after, "more queued a second later")
	// Output:
	// false <nil>
	// false <nil>
	// true <nil>
	// 1 more queued a second later
}
