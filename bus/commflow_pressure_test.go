package bus_test

import (
	"errors"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/batonhq/baton/bus"
	"github.com/batonhq/baton/transport"
)

// pressureBus has senders A and C and a receiver B holding 10 messages:
// throttled at 8, overloaded at 10, recovered at 5.
func pressureBus(t *testing.T, opts ...bus.Option) *bus.Bus {
	b := newBus(t, []string{"A", "C"}, opts...)
	if err := b.Register("B", bus.WithMailboxCapacity(10)); err != nil {
		t.Fatal(err)
	}
	return b
}

// statuses drains agent's mailbox and returns the statuses of the
// backpressure notices in it.
func statuses(t *testing.T, b *bus.Bus, agent string) []string {
	t.Helper()
	var out []string
	for _, m := range receiveAll(t, b, agent) {
		if m.Type != transport.MessageNotification || m.Action() != "backpressure" || m.From != "B" || m.Priority != transport.PriorityHigh {
			t.Fatalf("got %s %q from %s, want a backpressure NOTIFICATION from B", m.Type, m.Action(), m.From)
		}
		out = append(out, m.Content["status"].(string))
	}
	return out
}

func TestCommFlow_Backpressure_NotifiesSendersOnStateChanges(t *testing.T) {
	b := pressureBus(t, bus.WithBackpressure(bus.Backpressure{}))
	steps := []struct {
		name    string
		do      func()
		a, c    []string
		level   transport.PressureLevel
		depthOf int
	}{
		{"below 80%", func() { sendN(t, b, "A", "B", transport.PriorityNormal, 7) }, nil, nil, transport.PressureNormal, 7},
		{"80% throttles", func() { sendN(t, b, "A", "B", transport.PriorityNormal, 1) }, []string{"throttled"}, nil, transport.PressureThrottled, 8},
		{"a new sender is told once", func() { sendN(t, b, "C", "B", transport.PriorityNormal, 1) }, nil, []string{"throttled"}, transport.PressureThrottled, 9},
		{"95% overloads", func() { sendN(t, b, "A", "B", transport.PriorityNormal, 1) }, []string{"overloaded"}, []string{"overloaded"}, transport.PressureOverloaded, 10},
		{"below 80% is throttled again", func() { receiveN(t, b, "B", 3) }, []string{"throttled"}, []string{"throttled"}, transport.PressureThrottled, 7},
		{"above the low-water mark stays throttled", func() { receiveN(t, b, "B", 1) }, nil, nil, transport.PressureThrottled, 6},
		{"at 50% recovers", func() { receiveN(t, b, "B", 1) }, []string{"recovering"}, []string{"recovering"}, transport.PressureNormal, 5},
		{"no pressure, no signal", func() { sendN(t, b, "A", "B", transport.PriorityNormal, 2) }, nil, nil, transport.PressureNormal, 7},
	}
	for _, st := range steps {
		st.do()
		if a, c := statuses(t, b, "A"), statuses(t, b, "C"); !slices.Equal(a, st.a) || !slices.Equal(c, st.c) {
			t.Fatalf("%s: got A %v C %v, want A %v C %v", st.name, a, c, st.a, st.c)
		}
		p, err := b.Pressure("B")
		if err != nil || p.Level != st.level || p.Depth != st.depthOf || p.Capacity != 10 {
			t.Fatalf("%s: got %+v %v, want level %s depth %d", st.name, p, err, st.level, st.depthOf)
		}
	}
	s := assertBalanced(t, b)
	if s.PressureChanges != 4 || s.BackpressureSignals != 8 {
		t.Errorf("got changes %d signals %d, want 4 and 8", s.PressureChanges, s.BackpressureSignals)
	}
}

// receiveN takes n messages from agent.
func receiveN(t *testing.T, b *bus.Bus, agent string, n int) {
	t.Helper()
	if got, err := b.Receive(agent, n); err != nil || len(got) != n {
		t.Fatalf("got %d messages, %v, want %d", len(got), err, n)
	}
}

func TestCommFlow_Backpressure_GoCallersWithoutSignals(t *testing.T) {
	b := pressureBus(t)
	var got []bus.PressureChange
	stop := b.OnPressure(func(c bus.PressureChange) { got = append(got, c) })
	sendN(t, b, "A", "B", transport.PriorityNormal, 10)
	receiveN(t, b, "B", 10)
	stop()
	sendN(t, b, "A", "B", transport.PriorityNormal, 10)
	if a := receiveAll(t, b, "A"); len(a) != 0 {
		t.Errorf("got %d messages for the sender, want none without WithBackpressure", len(a))
	}
	want := []struct {
		from, to transport.PressureLevel
		status   string
		depth    int
	}{
		{transport.PressureNormal, transport.PressureThrottled, bus.StatusThrottled, 8},
		{transport.PressureThrottled, transport.PressureOverloaded, bus.StatusOverloaded, 10},
		{transport.PressureOverloaded, transport.PressureThrottled, bus.StatusThrottled, 7},
		{transport.PressureThrottled, transport.PressureNormal, bus.StatusRecovering, 5},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d changes, want %d (and none after cancel)", len(got), len(want))
	}
	for i, w := range want {
		if c := got[i]; c.Agent != "B" || c.From != w.from || c.Level != w.to || c.Status != w.status || c.Depth != w.depth {
			t.Errorf("change %d: got %+v, want %s -> %s (%s) at depth %d", i, c, w.from, w.to, w.status, w.depth)
		}
	}
	if _, err := b.Pressure("nobody"); !errors.Is(err, transport.ErrUnknownAgent) {
		t.Errorf("got %v, want ErrUnknownAgent", err)
	}
}

func TestCommFlow_Backpressure_EstimatedDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := pressureBus(t, bus.WithBackpressure(bus.Backpressure{}))
		sendN(t, b, "C", "B", transport.PriorityNormal, 7)
		time.Sleep(10 * time.Second)
		sendN(t, b, "A", "B", transport.PriorityNormal, 1)
		msgs := receiveAll(t, b, "A")
		if len(msgs) != 1 {
			t.Fatalf("got %d notices, want 1", len(msgs))
		}
		c := msgs[0].Content
		if c["estimated_delay"] != 10.0 || c["queue_depth"] != 8 || c["capacity"] != 10 || c["agent"] != "B" {
			t.Errorf("got %v, want depth 8 of 10 and a 10s estimated delay (the oldest message's age)", c)
		}
	})
}
