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

// guardAckWait is natsbus's ack wait in the tests of ack timeouts.
const guardAckWait = 100 * time.Millisecond

// newBreakers wraps e's transport in breakers on e's clock, closed when
// the test ends (before the transport).
func newBreakers(t *testing.T, e *guardEnv, s feature.BreakerSettings) *feature.Breakers {
	br := feature.NewBreakers(e.tr, s, e.clk)
	t.Cleanup(func() { _ = br.Close() })
	return br
}

func assertBreaker(t *testing.T, br *feature.Breakers, agent string, want feature.BreakerState) {
	t.Helper()
	if got := br.Breaker(agent); got != want {
		t.Fatalf("got breaker %q, want %q", got, want)
	}
}

// assertRefused checks that a send to agent is refused by its breaker in
// state want and never reaches the transport.
func assertRefused(t *testing.T, e *guardEnv, br *feature.Breakers, agent string, want feature.BreakerState) {
	t.Helper()
	before, refused := e.tr.Metrics(), br.Stats().Refused
	err := br.SendWork(t.Context(), guardMsg(transport.MessageRequest, "Ghost", agent, "refused"))
	var ce *feature.CircuitOpenError
	if !errors.As(err, &ce) || !errors.Is(err, feature.ErrCircuitOpen) || !errors.Is(err, transport.ErrCommunication) ||
		ce.Agent != agent || ce.State != want {
		t.Fatalf("got %v, want a CircuitOpenError for %s (%s)", err, agent, want)
	}
	if after := e.tr.Metrics(); after.Accepted != before.Accepted || br.Stats().Refused != refused+1 {
		t.Fatalf("got accepted %d -> %d refused %d -> %d, want the message refused, not accepted",
			before.Accepted, after.Accepted, refused, br.Stats().Refused)
	}
}

// failOne sends B a requires_ack message through br that fails: rejected,
// or never acknowledged until its timeout.
func failOne(t *testing.T, e *guardEnv, br *feature.Breakers, how string) {
	t.Helper()
	e.send(t, br, guardAckable("Ghost", "B", "work"))
	m := e.takeOne(t, br, "B")
	switch how {
	case "reject":
		if err := br.Reject(t.Context(), m, "no"); err != nil {
			t.Fatal(err)
		}
	case "ack timeout":
		if err := br.Reject(t.Context(), e.redelivered(t, br, "B"), "drop the redelivery"); err != nil {
			t.Fatal(err)
		}
	}
}

func TestCommFlow_Breaker_OpensAfterConsecutiveFailures(t *testing.T) {
	for _, how := range []string{"reject", "ack timeout"} {
		t.Run(how, func(t *testing.T) {
			guardEach(t, guardAckWait, func(t *testing.T, e *guardEnv) {
				e.open(t, 0, "B")
				br := newBreakers(t, e, feature.BreakerSettings{})
				for range 9 {
					failOne(t, e, br, how)
				}
				e.send(t, br, guardMsg(transport.MessageRequest, "Ghost", "B", "fine")) // a success resets the count
				e.takeOne(t, br, "B")
				for range 9 {
					failOne(t, e, br, how)
				}
				assertBreaker(t, br, "B", feature.BreakerClosed)
				failOne(t, e, br, how) // the tenth consecutive failure
				assertBreaker(t, br, "B", feature.BreakerOpen)
				assertRefused(t, e, br, "B", feature.BreakerOpen)
				if st := br.Stats(); st.Opened != 1 || st.States["B"] != feature.BreakerOpen {
					t.Errorf("got %+v, want opened once and B open", st)
				}
			})
		})
	}
}

func TestCommFlow_Breaker_OpensAtCapacityThenHalfOpenTrialCloses(t *testing.T) {
	guardEach(t, 0, func(t *testing.T, e *guardEnv) {
		e.open(t, 10, "B")
		br := newBreakers(t, e, feature.BreakerSettings{})
		e.sendN(t, br, "A", "B", transport.PriorityNormal, 8)
		assertBreaker(t, br, "B", feature.BreakerClosed)
		e.sendN(t, br, "A", "B", transport.PriorityNormal, 1) // 90%: queued, and the breaker opens
		assertBreaker(t, br, "B", feature.BreakerOpen)
		assertRefused(t, e, br, "B", feature.BreakerOpen)
		e.takeAll(t, br, "B", 9)
		e.settle(t, "B", 0)

		e.clk.Advance(time.Minute) // open for a minute, half-open once it has passed
		assertRefused(t, e, br, "B", feature.BreakerOpen)
		e.clk.Advance(time.Millisecond)
		assertBreaker(t, br, "B", feature.BreakerHalfOpen)
		e.send(t, br, guardAckable("A", "B", "trial")) // one trial message passes
		assertRefused(t, e, br, "B", feature.BreakerHalfOpen)
		if err := br.Ack(t.Context(), e.takeOne(t, br, "B")); err != nil {
			t.Fatal(err)
		}
		assertBreaker(t, br, "B", feature.BreakerClosed)
		e.send(t, br, guardMsg(transport.MessageRequest, "A", "B", "back to normal"))
		e.counts(t, br, guardCounts{Accepted: 11, Delivered: 10, Queued: 1})
	})
}

func TestCommFlow_Breaker_HalfOpenTrialFailureReopens(t *testing.T) {
	guardEach(t, guardAckWait, func(t *testing.T, e *guardEnv) {
		e.open(t, 0, "B")
		br := newBreakers(t, e, feature.BreakerSettings{Failures: 2, OpenFor: 10 * time.Second})
		failOne(t, e, br, "reject")
		failOne(t, e, br, "reject")
		assertBreaker(t, br, "B", feature.BreakerOpen)
		e.clk.Advance(10*time.Second + time.Millisecond)
		assertBreaker(t, br, "B", feature.BreakerHalfOpen)
		failOne(t, e, br, "ack timeout") // the trial is never acknowledged
		assertBreaker(t, br, "B", feature.BreakerOpen)
		if st := br.Stats(); st.Opened != 2 {
			t.Errorf("got opened %d, want 2", st.Opened)
		}
	})
}

// TestCommFlow_Breaker_OffByDefault: a transport without breakers refuses
// a full mailbox with ErrQueueFull, not ErrCircuitOpen.
func TestCommFlow_Breaker_OffByDefault(t *testing.T) {
	guardEach(t, 0, func(t *testing.T, e *guardEnv) {
		e.open(t, 10, "B")
		e.sendN(t, e.tr, "A", "B", transport.PriorityNormal, 10)
		err := e.tr.SendWork(t.Context(), guardMsg(transport.MessageRequest, "A", "B", "full"))
		if !errors.Is(err, transport.ErrQueueFull) || errors.Is(err, feature.ErrCircuitOpen) {
			t.Errorf("got %v, want ErrQueueFull without breakers", err)
		}
	})
}

// A requires_ack message not acknowledged in time is a failed delivery
// even when its redelivery is acknowledged later.
func TestBreakers_AckTimeoutFailsEvenIfTheRedeliveryIsAcked(t *testing.T) {
	guardEach(t, guardAckWait, func(t *testing.T, e *guardEnv) {
		e.open(t, 0, "B")
		br := newBreakers(t, e, feature.BreakerSettings{Failures: 1})
		e.send(t, br, guardAckable("Ghost", "B", "work"))
		e.takeOne(t, br, "B")
		if err := br.Ack(t.Context(), e.redelivered(t, br, "B")); err != nil {
			t.Fatal(err)
		}
		assertBreaker(t, br, "B", feature.BreakerOpen)
	})
}

// A rejection made past the breakers (by another process, on NATS) reaches
// them through the transport's dead letters; a message nacked through them
// is no ack timeout when it comes back.
func TestBreakers_SeeRejectionsElsewhereAndNacks(t *testing.T) {
	guardEach(t, 0, func(t *testing.T, e *guardEnv) {
		e.open(t, 0, "B")
		br := newBreakers(t, e, feature.BreakerSettings{Failures: 1})
		e.send(t, br, guardAckable("Ghost", "B", "nacked"))
		if err := br.Nack(t.Context(), e.takeOne(t, br, "B")); err != nil {
			t.Fatal(err)
		}
		if err := br.Ack(t.Context(), e.takeOne(t, br, "B")); err != nil {
			t.Fatal(err)
		}
		assertBreaker(t, br, "B", feature.BreakerClosed)

		e.send(t, br, guardAckable("Ghost", "B", "rejected elsewhere"))
		if err := e.tr.Reject(t.Context(), e.takeOne(t, e.tr, "B"), "no"); err != nil {
			t.Fatal(err)
		}
		assertBreaker(t, br, "B", feature.BreakerOpen)
		if err := br.Close(); err != nil {
			t.Fatal(err)
		}
	})
}

// A trial acknowledged past the breakers (by another process) is never
// seen: after OpenFor another trial may go, and its success closes the
// breaker.
func TestBreakers_UnseenTrialLetsAnotherThroughAfterOpenFor(t *testing.T) {
	guardEach(t, 0, func(t *testing.T, e *guardEnv) {
		e.open(t, 0, "B")
		br := newBreakers(t, e, feature.BreakerSettings{Failures: 1, OpenFor: 10 * time.Second})
		failOne(t, e, br, "reject")
		e.clk.Advance(10*time.Second + time.Millisecond)
		e.send(t, br, guardAckable("A", "B", "trial"))
		if err := e.tr.Ack(t.Context(), e.takeOne(t, e.tr, "B")); err != nil {
			t.Fatal(err)
		}
		assertRefused(t, e, br, "B", feature.BreakerHalfOpen)
		e.clk.Advance(10 * time.Second)
		assertRefused(t, e, br, "B", feature.BreakerHalfOpen)
		e.clk.Advance(time.Millisecond)
		e.send(t, br, guardMsg(transport.MessageNotification, "A", "B", "second trial"))
		assertBreaker(t, br, "B", feature.BreakerClosed)
	})
}

// A receiver that rejects what it is sent opens its breaker: the next send
// is refused before it reaches the transport.
func ExampleNewBreakers() {
	b := bus.New()
	defer b.Close()
	_ = b.Register("payments")
	br := feature.NewBreakers(b, feature.BreakerSettings{Failures: 1}, clock.Real())
	defer br.Close()
	ctx := context.Background()
	send := func() error {
		return br.SendWork(ctx, &transport.Message{Type: transport.MessageRequest, From: "shop", To: "payments",
			RequiresAck: true, Content: map[string]any{"action": "charge"}})
	}
	_ = send()
	got, _ := br.TakeWork(ctx, "payments", 1)
	_ = br.Reject(ctx, got[0], "card declined")
	fmt.Println(br.Breaker("payments"))
	fmt.Println(errors.Is(send(), feature.ErrCircuitOpen))
	// Output:
	// open
	// true
}

// Sends to agents without a mailbox leave no breaker behind.
func TestBreakers_ForgetUnknownReceivers(t *testing.T) {
	guardEach(t, 0, func(t *testing.T, e *guardEnv) {
		br := newBreakers(t, e, feature.BreakerSettings{})
		for i := range 3 {
			err := br.SendWork(t.Context(), guardMsg(transport.MessageRequest, "A", fmt.Sprint("nobody-", i), "lost"))
			if !errors.Is(err, transport.ErrUnknownAgent) {
				t.Fatalf("got %v, want ErrUnknownAgent", err)
			}
		}
		if st := br.Stats(); len(st.States) != 0 {
			t.Errorf("got breakers %v, want none for unknown receivers", st.States)
		}
	})
}
