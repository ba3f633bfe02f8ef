package bus_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/batonhq/baton/bus"
	"github.com/batonhq/baton/transport"
)

// Scenarios about flow: full queues, retries with backoff, parallel
// sends, and the communication metrics.

// retryTimes returns, relative to start, when each logged retry happened.
func retryTimes(logs *observer.ObservedLogs, start time.Time) []time.Duration {
	var out []time.Duration
	for _, e := range logs.FilterField(zap.String("category", "retry")).All() {
		out = append(out, e.Time.Sub(start))
	}
	return out
}

// fill sends n messages to agent.
func fill(t *testing.T, b *bus.Bus, agent string, n int) {
	t.Helper()
	for i := range n {
		mustSend(t, b, request("Filler", agent, fmt.Sprintf("fill-%d", i)))
	}
}

func TestRF009_Scenario12_MessageQueueFull(t *testing.T) {
	t.Run("refused and dead-lettered without retry", func(t *testing.T) {
		b := newBus(t, []string{"FlightAgent", "PaymentAgent"})
		fill(t, b, "PaymentAgent", bus.DefaultMailboxCapacity)
		m := request("FlightAgent", "PaymentAgent", "process_payment")
		err := b.Send(t.Context(), m)
		var full *transport.QueueFullError
		if !errors.As(err, &full) || !errors.Is(err, transport.ErrQueueFull) || !strings.Contains(err.Error(), "PaymentAgent queue full") {
			t.Fatalf("got %v, want a QueueFullError containing %q", err, "PaymentAgent queue full")
		}
		if full.Agent != "PaymentAgent" || full.Capacity != 1000 {
			t.Errorf("got %+v, want agent PaymentAgent capacity 1000", full)
		}
		s := assertBalanced(t, b)
		if s.DeadLettersByReason[transport.ReasonQueueOverflow] != 1 || depth(s, "PaymentAgent") != 1000 {
			t.Errorf("got dead letters %v depth %d, want 1 queue_overflow and 1000 queued", s.DeadLettersByReason, depth(s, "PaymentAgent"))
		}
	})
	t.Run("retried on 100ms 500ms 2s and sent once the queue clears", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			log, logs := observed()
			b := newBus(t, []string{"FlightAgent", "PaymentAgent"}, bus.WithLogger(log))
			fill(t, b, "PaymentAgent", bus.DefaultMailboxCapacity)
			start := time.Now()
			go func() {
				time.Sleep(300 * time.Millisecond) // the payment agent drains between retries 1 and 2
				if _, err := b.Receive("PaymentAgent", 10); err != nil {
					t.Error(err)
				}
			}()
			m := request("FlightAgent", "PaymentAgent", "process_payment")
			if err := b.Send(t.Context(), m, bus.WithRetry()); err != nil {
				t.Fatalf("got %v, want the retried send to succeed", err)
			}
			if got, want := time.Since(start), 600*time.Millisecond; got != want {
				t.Errorf("got the send done after %v, want %v (100ms + 500ms)", got, want)
			}
			if got, want := retryTimes(logs, start), []time.Duration{100 * time.Millisecond, 600 * time.Millisecond}; !slices.Equal(got, want) {
				t.Errorf("got retries at %v, want %v", got, want)
			}
			s := assertBalanced(t, b)
			if s.Retries != 2 || s.DeadLettered != 0 {
				t.Errorf("got retries %d dead letters %d, want 2 and 0", s.Retries, s.DeadLettered)
			}
		})
	})
	t.Run("bus-wide capacity", func(t *testing.T) {
		b := newBus(t, []string{"A", "B"}, bus.WithCapacity(3))
		fill(t, b, "A", 3)
		err := b.Send(t.Context(), request("X", "B", "y"))
		var full *transport.QueueFullError
		if !errors.As(err, &full) || !full.BusWide || full.Agent != "B" || full.Capacity != 3 {
			t.Fatalf("got %v, want a bus-wide QueueFullError for B", err)
		}
		assertBalanced(t, b)
	})
}

func TestRF009_Scenario14_ParallelMessages(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		log, logs := observed()
		agents := []string{"FlightAgent", "HotelAgent", "CarAgent"}
		b := bus.New(bus.WithLogger(log), bus.WithDefaultMailboxCapacity(1))
		t.Cleanup(func() { _ = b.Close() })
		for _, a := range agents {
			if err := b.Register(a); err != nil {
				t.Fatal(err)
			}
			fill(t, b, a, 1) // every mailbox is full: each message needs a retry
		}
		go func() {
			time.Sleep(50 * time.Millisecond)
			for _, a := range agents {
				if _, err := b.Receive(a, 0); err != nil {
					t.Error(err)
				}
			}
		}()
		msgs := make([]*transport.Message, len(agents))
		for i, a := range agents {
			msgs[i] = request("Orchestrator", a, "search")
		}
		start := time.Now()
		errs := b.SendAll(t.Context(), msgs, bus.WithRetry())
		if got := time.Since(start); got != 100*time.Millisecond {
			t.Errorf("got SendAll done after %v, want 100ms: the three retries ran concurrently, not one after another", got)
		}
		for i, err := range errs {
			if err != nil {
				t.Errorf("message %d: got %v, want nil", i, err)
			}
		}
		for _, a := range agents {
			got := receiveAll(t, b, a)
			if len(got) != 1 || got[0].Action() != "search" {
				t.Errorf("%s got %v, want the parallel message", a, got)
			}
		}
		if entries := logs.FilterField(zap.String("category", "parallel_send")).All(); len(entries) != 1 || fieldsOf(entries[0])["messages"] != int64(3) {
			t.Errorf("got parallel send logs %v, want one for 3 messages", entries)
		}
		assertBalanced(t, b)
	})
}

func TestRF009_Scenario15_MessageRetryWithBackoff(t *testing.T) {
	t.Run("success on the fourth attempt", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			log, logs := observed()
			b := newBus(t, nil, bus.WithLogger(log))
			if err := b.Register("PaymentAgent", bus.WithMailboxCapacity(1)); err != nil {
				t.Fatal(err)
			}
			fill(t, b, "PaymentAgent", 1)
			start := time.Now()
			go func() {
				time.Sleep(2500 * time.Millisecond) // clears between attempts 3 (600ms) and 4 (2600ms)
				if _, err := b.Receive("PaymentAgent", 0); err != nil {
					t.Error(err)
				}
			}()
			m := request("FlightAgent", "PaymentAgent", "process_payment")
			if err := b.Send(t.Context(), m, bus.WithRetry()); err != nil {
				t.Fatalf("got %v, want delivery on the fourth attempt", err)
			}
			want := []time.Duration{100 * time.Millisecond, 600 * time.Millisecond, 2600 * time.Millisecond}
			if got := retryTimes(logs, start); !slices.Equal(got, want) {
				t.Errorf("got retries at %v, want %v", got, want)
			}
			if got := receiveAll(t, b, "PaymentAgent"); len(got) != 1 || got[0] != m {
				t.Errorf("got %v, want the message delivered", ids(got))
			}
			if s := assertBalanced(t, b); s.Retries != 3 || s.Send.Max < 2600*time.Millisecond {
				t.Errorf("got retries %d send latency %+v, want 3 retries and the 2.6s wait recorded", s.Retries, s.Send)
			}
		})
	})
	t.Run("dead-lettered max_retries when it never fits", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			b := newBus(t, nil)
			if err := b.Register("PaymentAgent", bus.WithMailboxCapacity(1)); err != nil {
				t.Fatal(err)
			}
			fill(t, b, "PaymentAgent", 1)
			start := time.Now()
			m := request("FlightAgent", "PaymentAgent", "process_payment")
			err := b.Send(t.Context(), m, bus.WithRetry())
			var full *transport.QueueFullError
			if !errors.As(err, &full) || full.Attempts != 4 {
				t.Fatalf("got %v, want a QueueFullError after 4 attempts", err)
			}
			if got := time.Since(start); got != 2600*time.Millisecond {
				t.Errorf("got failure after %v, want 2.6s", got)
			}
			dl := b.DeadLetters()
			if len(dl) != 1 || dl[0].Reason != transport.ReasonMaxRetries || dl[0].Attempts != 4 || !strings.Contains(dl[0].LastError, "PaymentAgent queue full") {
				t.Errorf("got dead letters %+v, want one max_retries after 4 attempts", dl)
			}
			assertBalanced(t, b)
		})
	})
	t.Run("custom schedule and cancelled context", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			b := newBus(t, nil, bus.WithRetrySchedule(time.Second, time.Second))
			if err := b.Register("PaymentAgent", bus.WithMailboxCapacity(1)); err != nil {
				t.Fatal(err)
			}
			fill(t, b, "PaymentAgent", 1)
			ctx, cancel := context.WithTimeout(t.Context(), 1500*time.Millisecond)
			defer cancel()
			err := b.Send(ctx, request("FlightAgent", "PaymentAgent", "x"), bus.WithRetry())
			if !errors.Is(err, transport.ErrQueueFull) || !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("got %v, want queue full and the context deadline", err)
			}
			if s := assertBalanced(t, b); s.Retries != 1 || s.DeadLettersByReason[transport.ReasonQueueOverflow] != 1 {
				t.Errorf("got retries %d dead letters %v, want 1 retry and 1 queue_overflow", s.Retries, s.DeadLettersByReason)
			}
		})
	})
}
