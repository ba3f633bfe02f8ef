package feature_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/batonhq/baton/bus"
	"github.com/batonhq/baton/bus/feature"
	"github.com/batonhq/baton/clock"
	"github.com/batonhq/baton/transport"
)

// newGauge gives e senders A and C and a receiver B holding 10 messages
// (throttled at 8, overloaded at 10, recovered at 5), and wraps its
// transport in a pressure gauge on e's clock.
func newGauge(t *testing.T, e *guardEnv, p feature.Backpressure) *feature.PressureGauge {
	e.open(t, 0, "A", "C")
	e.open(t, 10, "B")
	g := feature.NewPressureGauge(e.tr, p, e.clk)
	t.Cleanup(func() { _ = g.Close() })
	return g
}

// statuses takes the n messages of agent and returns the statuses of
// the backpressure notices they are.
func statuses(t *testing.T, e *guardEnv, agent string, n int) []string {
	t.Helper()
	var out []string
	for _, m := range e.takeAll(t, e.tr, agent, n) {
		if m.Type != transport.MessageNotification || m.Action() != "backpressure" || m.From != "B" || m.Priority != transport.PriorityHigh {
			t.Fatalf("got %s %q from %s, want a backpressure NOTIFICATION from B", m.Type, m.Action(), m.From)
		}
		out = append(out, m.Content["status"].(string))
	}
	return out
}

func TestCommFlow_Backpressure_NotifiesSendersOnStateChanges(t *testing.T) {
	guardEach(t, 0, func(t *testing.T, e *guardEnv) {
		g := newGauge(t, e, feature.Backpressure{})
		steps := []struct {
			name    string
			do      func()
			a, c    []string
			level   feature.PressureLevel
			depthOf int
		}{
			{"below 80%", func() { e.sendN(t, g, "A", "B", transport.PriorityNormal, 7) }, nil, nil, feature.PressureNormal, 7},
			{"80% throttles", func() { e.sendN(t, g, "A", "B", transport.PriorityNormal, 1) }, []string{"throttled"}, nil, feature.PressureThrottled, 8},
			{"a new sender is told once", func() { e.sendN(t, g, "C", "B", transport.PriorityNormal, 1) }, nil, []string{"throttled"}, feature.PressureThrottled, 9},
			{"95% overloads", func() { e.sendN(t, g, "A", "B", transport.PriorityNormal, 1) }, []string{"overloaded"}, []string{"overloaded"}, feature.PressureOverloaded, 10},
			{"below 80% is throttled again", func() { e.takeN(t, g, "B", 3) }, []string{"throttled"}, []string{"throttled"}, feature.PressureThrottled, 7},
			{"above the low-water mark stays throttled", func() { e.takeN(t, g, "B", 1) }, nil, nil, feature.PressureThrottled, 6},
			{"at 50% recovers", func() { e.takeN(t, g, "B", 1) }, []string{"recovering"}, []string{"recovering"}, feature.PressureNormal, 5},
			{"no pressure, no signal", func() { e.sendN(t, g, "A", "B", transport.PriorityNormal, 2) }, nil, nil, feature.PressureNormal, 7},
		}
		for _, st := range steps {
			st.do()
			e.settle(t, "B", st.depthOf)
			if a, c := statuses(t, e, "A", len(st.a)), statuses(t, e, "C", len(st.c)); !slices.Equal(a, st.a) || !slices.Equal(c, st.c) {
				t.Fatalf("%s: got A %v C %v, want A %v C %v", st.name, a, c, st.a, st.c)
			}
			p, err := g.Pressure(t.Context(), "B")
			if err != nil || p.Level != st.level || p.Depth != st.depthOf || p.Capacity != 10 {
				t.Fatalf("%s: got %+v %v, want level %s depth %d", st.name, p, err, st.level, st.depthOf)
			}
		}
		if st := g.Stats(); st.Changes != 4 || st.Signals != 8 || st.Levels["B"] != feature.PressureNormal {
			t.Errorf("got %+v, want 4 changes and 8 signals, B normal", st)
		}
		e.counts(t, g, guardCounts{Accepted: 20, Delivered: 13, Queued: 7})
	})
}

func TestCommFlow_Backpressure_GoCallersWithoutSignals(t *testing.T) {
	guardEach(t, 0, func(t *testing.T, e *guardEnv) {
		g := newGauge(t, e, feature.Backpressure{Silent: true})
		var got []feature.PressureChange
		g.OnPressure(nil)() // ignored
		stop := g.OnPressure(func(c feature.PressureChange) { got = append(got, c) })
		e.sendN(t, g, "A", "B", transport.PriorityNormal, 10)
		e.takeN(t, g, "B", 10)
		stop()
		e.settle(t, "B", 0)
		e.sendN(t, g, "A", "B", transport.PriorityNormal, 10)
		if a := e.take(t, e.tr, "A", 0); len(a) != 0 {
			t.Errorf("got %d messages for the sender, want none from a silent gauge", len(a))
		}
		want := []struct {
			from, to feature.PressureLevel
			status   string
			depth    int
		}{
			{feature.PressureNormal, feature.PressureThrottled, feature.StatusThrottled, 8},
			{feature.PressureThrottled, feature.PressureOverloaded, feature.StatusOverloaded, 10},
			{feature.PressureOverloaded, feature.PressureThrottled, feature.StatusThrottled, 7},
			{feature.PressureThrottled, feature.PressureNormal, feature.StatusRecovering, 5},
		}
		if len(got) != len(want) {
			t.Fatalf("got %d changes, want %d (and none after cancel)", len(got), len(want))
		}
		for i, w := range want {
			if c := got[i]; c.Agent != "B" || c.From != w.from || c.Level != w.to || c.Status != w.status || c.Depth != w.depth {
				t.Errorf("change %d: got %+v, want %s -> %s (%s) at depth %d", i, c, w.from, w.to, w.status, w.depth)
			}
		}
		if _, err := g.Pressure(t.Context(), "nobody"); !errors.Is(err, transport.ErrUnknownAgent) {
			t.Errorf("got %v, want ErrUnknownAgent", err)
		}
	})
}

func TestCommFlow_Backpressure_EstimatedDelay(t *testing.T) {
	guardEach(t, 0, func(t *testing.T, e *guardEnv) {
		g := newGauge(t, e, feature.Backpressure{})
		e.sendN(t, g, "C", "B", transport.PriorityNormal, 7)
		e.clk.Advance(10 * time.Second)
		e.sendN(t, g, "A", "B", transport.PriorityNormal, 1)
		msgs := e.takeAll(t, e.tr, "A", 1)
		c := msgs[0].Content
		if guardNum(c["estimated_delay"]) != 10 || guardNum(c["queue_depth"]) != 8 || guardNum(c["capacity"]) != 10 || c["agent"] != "B" {
			t.Errorf("got %v, want depth 8 of 10 and a 10s estimated delay (the oldest message's age)", c)
		}
	})
}

// The estimated delay is the longer of the oldest message's age and the
// smoothed time the messages taken spent in the mailbox.
func TestPressureGauge_EstimatedDelayFollowsRecentWaits(t *testing.T) {
	guardEach(t, 0, func(t *testing.T, e *guardEnv) {
		g := newGauge(t, e, feature.Backpressure{})
		e.sendN(t, g, "A", "B", transport.PriorityNormal, 1)
		e.clk.Advance(80 * time.Second)
		e.takeN(t, g, "B", 1) // waited 80s: the average moves an eighth of the way
		e.settle(t, "B", 0)
		e.sendN(t, g, "A", "B", transport.PriorityNormal, 1)
		p, err := g.Pressure(t.Context(), "B")
		if err != nil || p.EstimatedDelay != 10*time.Second || p.Depth != 1 {
			t.Errorf("got %+v %v, want depth 1 and a 10s estimated delay", p, err)
		}
	})
}

// Go callers follow a mailbox's pressure; without Silent the gauge would
// also send its senders a NOTIFICATION at each change.
func ExamplePressureGauge_OnPressure() {
	b := bus.New()
	defer b.Close()
	_ = b.Register("reviewer", bus.WithMailboxCapacity(10))
	g := feature.NewPressureGauge(b, feature.Backpressure{Silent: true}, clock.Real())
	defer g.Close()
	g.OnPressure(func(c feature.PressureChange) {
		fmt.Println(c.Agent, c.Status, c.Depth)
	})
	ctx := context.Background()
	for range 10 {
		_ = g.SendWork(ctx, &transport.Message{Type: transport.MessageRequest, From: "lead", To: "reviewer", Content: map[string]any{"action": "review"}})
	}
	_, _ = g.TakeWork(ctx, "reviewer", 0)
	// Output:
	// reviewer throttled 8
	// reviewer overloaded 10
	// reviewer throttled 7
	// reviewer recovering 5
}

// A transport that cannot tell a mailbox's room leaves the gauge blind:
// Pressure says so, and sends still pass.
func TestPressureGauge_NeedsRoom(t *testing.T) {
	guardEach(t, 0, func(t *testing.T, e *guardEnv) {
		e.open(t, 0, "B")
		narrow := struct{ transport.Transport }{e.tr} // the interface alone, without Room
		g := feature.NewPressureGauge(narrow, feature.Backpressure{}, e.clk)
		e.sendN(t, g, "A", "B", transport.PriorityNormal, 1)
		if _, err := g.Pressure(t.Context(), "B"); !errors.Is(err, feature.ErrNoRoom) || !errors.Is(err, transport.ErrCommunication) {
			t.Errorf("got %v, want ErrNoRoom", err)
		}
		if e.depth(t, "B") != 1 {
			t.Errorf("got depth %d, want the message sent", e.depth(t, "B"))
		}
	})
}
