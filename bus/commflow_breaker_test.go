package bus_test

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/batonhq/baton/bus"
	"github.com/batonhq/baton/transport"
)

func assertBreaker(t *testing.T, b *bus.Bus, agent string, want transport.BreakerState) {
	t.Helper()
	if got, err := b.Breaker(agent); err != nil || got != want {
		t.Fatalf("got breaker %q (%v), want %q", got, err, want)
	}
}

// assertRefused checks that a send to agent is refused by its breaker in
// state want and not accepted.
func assertRefused(t *testing.T, b *bus.Bus, agent string, want transport.BreakerState) {
	t.Helper()
	before := b.Metrics()
	err := b.Send(t.Context(), request("Ghost", agent, "refused"))
	var ce *bus.CircuitOpenError
	if !errors.As(err, &ce) || !errors.Is(err, bus.ErrCircuitOpen) || ce.Agent != agent || ce.State != want {
		t.Fatalf("got %v, want a CircuitOpenError for %s (%s)", err, agent, want)
	}
	after := assertBalanced(t, b)
	if after.Accepted != before.Accepted || after.BreakerRefused != before.BreakerRefused+1 {
		t.Fatalf("got accepted %d -> %d refused %d -> %d, want the message refused, not accepted",
			before.Accepted, after.Accepted, before.BreakerRefused, after.BreakerRefused)
	}
}

// failOne sends B a requires_ack message that fails: rejected, or never
// acknowledged until its timeout.
func failOne(t *testing.T, b *bus.Bus, how string) {
	t.Helper()
	mustSend(t, b, ackable("Ghost", "B", "work"))
	m := mustReceiveOne(t, b, "B")
	switch how {
	case "reject":
		if err := b.Reject(t.Context(), m, "no"); err != nil {
			t.Fatal(err)
		}
	case "ack timeout":
		time.Sleep(bus.DefaultAckTimeout)
		synctest.Wait()
		if err := b.Reject(t.Context(), mustReceiveOne(t, b, "B"), "drop the redelivery"); err != nil {
			t.Fatal(err)
		}
	}
}

func TestCommFlow_Breaker_OpensAfterConsecutiveFailures(t *testing.T) {
	for _, how := range []string{"reject", "ack timeout"} {
		t.Run(how, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := newBus(t, []string{"B"}, bus.WithCircuitBreaker(bus.BreakerSettings{}))
				for range 9 {
					failOne(t, b, how)
				}
				mustSend(t, b, request("Ghost", "B", "fine")) // a success resets the count
				mustReceiveOne(t, b, "B")
				for range 9 {
					failOne(t, b, how)
				}
				assertBreaker(t, b, "B", transport.BreakerClosed)
				failOne(t, b, how) // the tenth consecutive failure
				assertBreaker(t, b, "B", transport.BreakerOpen)
				assertRefused(t, b, "B", transport.BreakerOpen)
				if s := b.Metrics(); s.BreakerOpened != 1 || s.Agents[0].Breaker != transport.BreakerOpen {
					t.Errorf("got opened %d agent %+v, want 1 and open", s.BreakerOpened, s.Agents[0])
				}
			})
		})
	}
}

func TestCommFlow_Breaker_OpensAtCapacityThenHalfOpenTrialCloses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBus(t, nil, bus.WithCircuitBreaker(bus.BreakerSettings{}))
		if err := b.Register("B", bus.WithMailboxCapacity(10)); err != nil {
			t.Fatal(err)
		}
		sendN(t, b, "A", "B", transport.PriorityNormal, 8)
		assertBreaker(t, b, "B", transport.BreakerClosed)
		sendN(t, b, "A", "B", transport.PriorityNormal, 1) // 90%: queued, and the breaker opens
		assertBreaker(t, b, "B", transport.BreakerOpen)
		assertRefused(t, b, "B", transport.BreakerOpen)
		receiveAll(t, b, "B")

		time.Sleep(time.Minute) // gobreaker half-opens once its timeout has passed
		assertRefused(t, b, "B", transport.BreakerOpen)
		time.Sleep(time.Millisecond)
		assertBreaker(t, b, "B", transport.BreakerHalfOpen)
		trial := ackable("A", "B", "trial")
		mustSend(t, b, trial) // one trial message passes
		assertRefused(t, b, "B", transport.BreakerHalfOpen)
		if err := b.Ack(t.Context(), mustReceiveOne(t, b, "B")); err != nil {
			t.Fatal(err)
		}
		assertBreaker(t, b, "B", transport.BreakerClosed)
		mustSend(t, b, request("A", "B", "back to normal"))
		assertCounts(t, b, flowCounts{Accepted: 11, Delivered: 10, Queued: 1})
	})
}

func TestCommFlow_Breaker_HalfOpenTrialFailureReopens(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBus(t, []string{"B"}, bus.WithCircuitBreaker(bus.BreakerSettings{Failures: 2, OpenFor: 10 * time.Second}))
		failOne(t, b, "reject")
		failOne(t, b, "reject")
		assertBreaker(t, b, "B", transport.BreakerOpen)
		time.Sleep(10*time.Second + time.Millisecond)
		assertBreaker(t, b, "B", transport.BreakerHalfOpen)
		failOne(t, b, "ack timeout") // the trial is never acknowledged
		assertBreaker(t, b, "B", transport.BreakerOpen)
		if s := b.Metrics(); s.BreakerOpened != 2 {
			t.Errorf("got opened %d, want 2", s.BreakerOpened)
		}
	})
}

func TestCommFlow_Breaker_OffByDefault(t *testing.T) {
	b := newBus(t, nil)
	if err := b.Register("B", bus.WithMailboxCapacity(10)); err != nil {
		t.Fatal(err)
	}
	sendN(t, b, "A", "B", transport.PriorityNormal, 10)
	assertBreaker(t, b, "B", transport.BreakerNone)
	if err := b.Send(t.Context(), request("A", "B", "full")); !errors.Is(err, transport.ErrQueueFull) {
		t.Errorf("got %v, want ErrQueueFull without a breaker", err)
	}
}
