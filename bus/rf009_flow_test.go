package bus_test

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/batonhq/baton/bus"
	"github.com/batonhq/baton/transport"
)

// Scenarios about flow: full queues and the communication metrics (sender
// retries and parallel sends that retry are feature.Retry's: see
// bus/feature/retry_test.go).

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

func TestRF009_Scenario20_CommunicationMetrics(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		agents := []string{"Orchestrator", "FlightAgent", "HotelAgent", "PaymentAgent", "NotificationAgent"}
		b := newBus(t, agents)
		var wg sync.WaitGroup
		wg.Go(func() { // the payment agent answers 50 requests
			for range 50 {
				req, err := b.ReceiveWait(t.Context(), "PaymentAgent")
				if err != nil {
					t.Error(err)
					return
				}
				time.Sleep(5 * time.Millisecond)
				if err := b.Reply(t.Context(), req, &transport.Message{Content: map[string]any{"action": "paid"}}); err != nil {
					t.Error(err)
				}
			}
		})
		for range 50 {
			if _, err := b.Request(t.Context(), request("HotelAgent", "PaymentAgent", "pay")); err != nil {
				t.Fatal(err)
			}
		}
		wg.Wait()
		for i := range 150 {
			mustSend(t, b, handoff(agents[i%2], "FlightAgent", "search", map[string]any{}, nil, nil))
		}
		for i := range 750 {
			m := request("Orchestrator", agents[1+i%4], "notify")
			m.Type = transport.MessageNotification
			mustSend(t, b, m)
		}
		time.Sleep(time.Millisecond)
		for _, a := range agents {
			receiveAll(t, b, a)
		}
		s := assertBalanced(t, b)
		if s.Accepted != 1000 || s.Delivered != 1000 || s.Handoffs != 150 {
			t.Errorf("got sent %d received %d hand-offs %d, want 1000 1000 150", s.Accepted, s.Delivered, s.Handoffs)
		}
		if s.Send.P95 >= 10*time.Millisecond || s.Receive.P95 >= 10*time.Millisecond || s.RoundTrip.P95 >= 50*time.Millisecond || s.Handoff.P95 >= 200*time.Millisecond {
			t.Errorf("got p95 send %v receive %v round trip %v hand-off %v, want under 10ms 10ms 50ms 200ms",
				s.Send.P95, s.Receive.P95, s.RoundTrip.P95, s.Handoff.P95)
		}
		if s.RoundTrip.Count != 50 || s.RoundTrip.P50 < 5*time.Millisecond {
			t.Errorf("got round trip %+v, want 50 samples of about 5ms", s.RoundTrip)
		}
		if s.DropRate() >= 0.001 {
			t.Errorf("got drop rate %v, want under 0.1%%", s.DropRate())
		}
	})
}
