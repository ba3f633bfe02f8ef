package bus_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/batonhq/baton/bus"
	"github.com/batonhq/baton/transport"
)

// TestStress_AccountingUnderLoad runs concurrent senders and receivers with
// mixed priorities, short TTLs, full mailboxes, acks, nacks,
// rejects, unacknowledged messages redelivered after
// a short ack timeout, duplicate idempotency keys and agent churn, checking
// the accounting invariant on every snapshot taken meanwhile and exactly at the
// end. TestMain checks for leaked goroutines.
func TestStress_AccountingUnderLoad(t *testing.T) {
	const senders, perSender = 8, 1000
	b := bus.New(
		bus.WithDefaultMailboxCapacity(16),
		bus.WithCapacity(80),
		bus.WithDeadLetterLimit(100),
		bus.WithAckTimeout(2*time.Millisecond),
	)
	agents := []string{"A0", "A1", "A2", "A3", "A4", "A5"}
	for i, a := range agents {
		if err := b.Register(a, bus.WithAgentType(fmt.Sprintf("type%d", i%2))); err != nil {
			t.Fatal(err)
		}
	}
	ctx, stop := context.WithCancel(t.Context())
	// delivered counts what the bus must count as delivered: messages
	// received that need no ack, and acks the bus took.
	var delivered, acked, nacked, rejected atomic.Uint64

	var receivers sync.WaitGroup
	for i, a := range agents {
		receivers.Go(func() {
			for {
				var msgs []*transport.Message
				if i%2 == 0 {
					m, err := b.ReceiveWait(ctx, a)
					if err != nil {
						return
					}
					msgs = []*transport.Message{m}
				} else {
					select {
					case <-ctx.Done():
						return
					case <-b.Ready(a):
					}
					var err error
					if msgs, err = b.Receive(a, 1+i); err != nil {
						return
					}
				}
				for _, m := range msgs {
					if !m.RequiresAck {
						delivered.Add(1)
					}
					if m.RequiresAck {
						switch rand.IntN(8) {
						case 0, 1: // crashed: never acknowledged, redelivered later
						case 2:
							if b.Nack(ctx, m) == nil {
								nacked.Add(1)
							}
						case 3:
							// A failed ERROR notice does not undo the rejection.
							if err := b.Reject(ctx, m, "no"); err == nil || errors.Is(err, bus.ErrNotice) {
								rejected.Add(1)
							}
						default:
							// Ack fails only for a copy no longer awaiting
							// one; its ACK may still fail to be queued.
							if err := b.Ack(ctx, m); err == nil || !errors.Is(err, transport.ErrValidation) {
								delivered.Add(1)
								acked.Add(1)
							}
						}
					}
				}
			}
		})
	}

	var watchers sync.WaitGroup
	watchers.Go(func() { // every snapshot taken under load balances
		for ; ctx.Err() == nil; pause() {
			if s := b.Metrics(); !s.Balanced() {
				t.Errorf("got accepted %d, want delivered %d + dead %d + queued %d", s.Accepted, s.Delivered, s.DeadLettered, s.Queued)
				return
			}
		}
	})
	watchers.Go(func() { // an agent that keeps leaving and coming back
		for ; ctx.Err() == nil; pause() {
			_ = b.Register("Churn")
			_ = b.Unregister("Churn")
		}
	})
	watchers.Go(func() { // dead-letter operations race with everything else
		for ; ctx.Err() == nil; pause() {
			for _, d := range b.DeadLetters() {
				if rand.IntN(2) == 0 {
					_ = b.Requeue(d.Message.MessageID)
				} else {
					_ = b.Discard(d.Message.MessageID)
				}
			}
		}
	})

	var wg sync.WaitGroup
	for s := range senders {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(s), 42))
			targets := append([]string{"Ghost", "Churn"}, agents...)
			for i := range perSender {
				m := &transport.Message{
					Type:     transport.MessageNotification,
					From:     fmt.Sprintf("S%d", s),
					To:       targets[r.IntN(len(targets))],
					Priority: transport.Priority(r.IntN(4) - 1),
					Content:  map[string]any{"action": "work", "n": i},
				}
				if r.IntN(4) == 0 { // already expired: must never be delivered
					m.TTL, m.Timestamp = time.Millisecond, time.Now().Add(-time.Second)
				}
				m.RequiresAck = r.IntN(4) == 0
				if r.IntN(16) == 0 { // a resend after a sender crash: same key
					m.IdempotencyKey = fmt.Sprintf("S%d-%d", s, i/2)
				}
				switch r.IntN(40) {
				case 0:
					m.Content = nil // invalid: refused, never accepted
					if err := b.Send(ctx, m); !errors.Is(err, transport.ErrValidation) {
						t.Errorf("got %v, want ErrValidation", err)
					}
				default:
					_ = b.Send(ctx, m)
				}
			}
		})
	}
	wg.Wait()
	stop()
	receivers.Wait()
	watchers.Wait()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}

	s := b.Metrics()
	if !s.Balanced() {
		t.Fatalf("got accepted %d, want delivered %d + dead %d + queued %d + in flight %d", s.Accepted, s.Delivered, s.DeadLettered, s.Queued, s.InFlight)
	}
	if got, want := s.Delivered, delivered.Load(); got != want {
		t.Errorf("got %d delivered, want %d received without ack or acked", got, want)
	}
	if s.Acks != acked.Load() || s.Nacks != nacked.Load() || s.Rejects != rejected.Load() {
		t.Errorf("got acks %d nacks %d rejects %d, want %d %d %d", s.Acks, s.Nacks, s.Rejects, acked.Load(), nacked.Load(), rejected.Load())
	}
	// Only what the senders' seeded schedule guarantees is required: sends
	// to the never-registered Ghost and invalid messages. Redeliveries,
	// rejections, duplicates, expiry and overflow depend on how the
	// goroutines interleave; they are logged, and the invariants above hold
	// whichever occurred.
	if s.Accepted == 0 || s.DeadLettersByReason[transport.ReasonReceiverNotFound] == 0 || s.ValidationErrors == 0 {
		t.Errorf("got %+v, want the load to exercise routing and validation", s)
	}
	t.Logf("accepted %d delivered %d dead %d queued %d in flight %d by reason %v redeliveries %d duplicates %d expired %d rejects %d",
		s.Accepted, s.Delivered, s.DeadLettered, s.Queued, s.InFlight, s.DeadLettersByReason, s.Redeliveries, s.Duplicates, s.Expired, s.Rejects)
}

// pause lets the watchers interleave with the load instead of starving it.
func pause() { time.Sleep(100 * time.Microsecond) }
