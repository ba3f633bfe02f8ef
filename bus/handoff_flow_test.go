package bus_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/batonhq/baton/bus"
	"github.com/batonhq/baton/transport"
)

// Scenarios about flow: full queues (sender retries and parallel sends
// that retry are feature.Retry's: see bus/feature/retry_test.go).

// fill sends n messages to agent.
func fill(t *testing.T, b *bus.Bus, agent string, n int) {
	t.Helper()
	for i := range n {
		mustSend(t, b, request("Filler", agent, fmt.Sprintf("fill-%d", i)))
	}
}

func TestMessageQueueFull(t *testing.T) {
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
