package bus_test

import (
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/batonhq/baton/bus"
	"github.com/batonhq/baton/transport"
)

// sendN sends n messages from -> to at priority p and returns how many were
// deferred.
func sendN(t *testing.T, b *bus.Bus, from, to string, p transport.Priority, n int) int {
	t.Helper()
	deferred := 0
	for i := range n {
		m := notice(from, to, fmt.Sprint("msg-", i))
		m.Priority = p
		var r bus.Receipt
		mustSend(t, b, m, bus.WithReceipt(&r))
		if r.Deferred {
			deferred++
		}
	}
	return deferred
}

// depthOf returns the depth of agent's mailbox.
func depthOf(b *bus.Bus, agent string) int { return depth(b.Metrics(), agent) }

func TestCommFlow_RateLimit_OutboundExcessWaitsNotDropped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBus(t, []string{"B"}, bus.WithRateLimits(bus.RateLimits{Outbound: 60, Inbound: 6000, Burst: 2}))
		if got := sendN(t, b, "A", "B", transport.PriorityNormal, 5); got != 3 {
			t.Fatalf("got %d deferred, want 3 past the burst of 2", got)
		}
		s := assertCounts(t, b, flowCounts{Accepted: 5, Queued: 5})
		if s.Deferred != 3 || s.RateDeferred != 3 || depth(s, "B") != 2 {
			t.Fatalf("got deferred %d counted %d depth %d, want 3 3 2", s.Deferred, s.RateDeferred, depth(s, "B"))
		}
		for want := 3; want <= 5; want++ { // 60/min: one more each second
			time.Sleep(time.Second)
			synctest.Wait()
			if got := depthOf(b, "B"); got != want {
				t.Fatalf("got depth %d after %d s, want %d", got, want-2, want)
			}
		}
		msgs := receiveAll(t, b, "B")
		for i, m := range msgs {
			if want := fmt.Sprint("msg-", i); m.Action() != want {
				t.Errorf("got %q at %d, want %q: the backlog leaves in order", m.Action(), i, want)
			}
		}
		assertCounts(t, b, flowCounts{Accepted: 5, Delivered: 5})
	})
}

func TestCommFlow_RateLimit_InboundLimitAcrossSenders(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBus(t, []string{"B"}, bus.WithRateLimits(bus.RateLimits{Outbound: 6000, Inbound: 60, Burst: 1}))
		if got := sendN(t, b, "A", "B", transport.PriorityNormal, 1) + sendN(t, b, "C", "B", transport.PriorityNormal, 1); got != 1 {
			t.Fatalf("got %d deferred, want the second sender's message to wait for B's inbound limit", got)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if got := depthOf(b, "B"); got != 2 {
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
			synctest.Test(t, func(t *testing.T) {
				b := newBus(t, []string{"B"}, bus.WithRateLimits(bus.RateLimits{Outbound: 60, Inbound: 6000, Burst: 2}))
				if got := sendN(t, b, "A", "B", tc.p, tc.n); got != tc.deferred {
					t.Fatalf("got %d deferred, want %d", got, tc.deferred)
				}
				if tc.drained > 0 {
					time.Sleep(tc.drained - time.Millisecond)
					synctest.Wait()
					if got := depthOf(b, "B"); got != tc.n-1 {
						t.Fatalf("got depth %d just before %v, want %d", got, tc.drained, tc.n-1)
					}
					time.Sleep(time.Millisecond)
					synctest.Wait()
				}
				if got := depthOf(b, "B"); got != tc.n {
					t.Errorf("got depth %d, want all %d", got, tc.n)
				}
			})
		})
	}
}

func TestCommFlow_RateLimit_OffByDefault(t *testing.T) {
	b := newBus(t, []string{"B"})
	if got := sendN(t, b, "A", "B", transport.PriorityLow, 500); got != 0 {
		t.Errorf("got %d deferred, want none without WithRateLimits", got)
	}
}

func TestCommFlow_RateLimit_DeferredToUnregisteredReceiver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBus(t, []string{"B"}, bus.WithRateLimits(bus.RateLimits{Outbound: 60, Burst: 1}))
		sendN(t, b, "A", "B", transport.PriorityNormal, 3)
		if err := b.Unregister("B"); err != nil {
			t.Fatal(err)
		}
		assertCounts(t, b, flowCounts{Accepted: 3, DeadLettered: 1, Queued: 2})
		time.Sleep(2 * time.Second)
		synctest.Wait()
		s := assertCounts(t, b, flowCounts{Accepted: 3, DeadLettered: 3})
		if s.DeadLettersByReason[transport.ReasonReceiverNotFound] != 3 {
			t.Errorf("got %v, want 3 receiver_not_found", s.DeadLettersByReason)
		}
	})
}

func TestCommFlow_RateLimit_CloseKeepsBacklogCounted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBus(t, []string{"B"}, bus.WithRateLimits(bus.RateLimits{Outbound: 60, Burst: 1}))
		sendN(t, b, "A", "B", transport.PriorityNormal, 4)
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		if s := assertCounts(t, b, flowCounts{Accepted: 4, Queued: 4}); s.Deferred != 3 {
			t.Errorf("got %d deferred after Close, want 3 still counted", s.Deferred)
		}
	})
}
