package feature_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/batonhq/baton/bus"
	"github.com/batonhq/baton/clock"
	"github.com/batonhq/baton/natsbus"
	"github.com/batonhq/baton/transport"
)

// guardEnv is one transport under test for the rate limiter, the breakers
// and the pressure gauge, with the manual clock the decorators run on.
type guardEnv struct {
	tr  transport.Transport
	clk *clock.Manual
	bus *bus.Bus // nil on natsbus
}

// guardEach runs f on each transport, as onEach does, except that the bus
// runs on the decorators' manual clock (its ack timeouts follow it) and
// natsbus waits ackWait for an ack (its default when zero): natsbus keeps
// the real clock, so a test of its ack timeouts needs a short one.
func guardEach(t *testing.T, ackWait time.Duration, f func(t *testing.T, e *guardEnv)) {
	t.Helper()
	t.Run("bus", func(t *testing.T) {
		clk := clock.NewManual(time.Now())
		b := newBus(t, bus.WithClock(clk))
		f(t, &guardEnv{tr: b, clk: clk, bus: b})
	})
	t.Run("nats", func(t *testing.T) {
		f(t, &guardEnv{tr: guardNATS(t, ackWait), clk: clock.NewManual(time.Now())})
	})
}

// guardNATS is newNATS with an ack wait of its own (the default when zero).
func guardNATS(t *testing.T, ackWait time.Duration) *natsbus.Transport {
	t.Helper()
	return newNATS(t, func(c *natsbus.Config) {
		if ackWait > 0 {
			c.AckWait = ackWait
		}
	})
}

// open gives each agent a mailbox of capacity (the transport's default
// when 0).
func (e *guardEnv) open(t *testing.T, capacity int, agents ...string) {
	t.Helper()
	for _, a := range agents {
		if err := e.tr.OpenMailbox(a, capacity); err != nil {
			t.Fatalf("open %s: %v", a, err)
		}
	}
}

// guardMsg builds a message of type typ.
func guardMsg(typ transport.MessageType, from, to, action string) *transport.Message {
	return &transport.Message{Type: typ, From: from, To: to, Content: map[string]any{"action": action}}
}

// guardAckable builds a REQUEST that requires an acknowledgement.
func guardAckable(from, to, action string) *transport.Message {
	m := guardMsg(transport.MessageRequest, from, to, action)
	m.RequiresAck = true
	return m
}

// send sends m through tr and fails the test on error.
func (e *guardEnv) send(t *testing.T, tr transport.Transport, m *transport.Message) {
	t.Helper()
	if err := tr.SendWork(t.Context(), m); err != nil {
		t.Fatalf("send %s -> %s: %v", m.From, m.To, err)
	}
}

// sendN sends n NOTIFICATIONs from -> to at priority p through tr, their
// actions msg-0, msg-1...
func (e *guardEnv) sendN(t *testing.T, tr transport.Transport, from, to string, p transport.Priority, n int) {
	t.Helper()
	for i := range n {
		m := guardMsg(transport.MessageNotification, from, to, fmt.Sprint("msg-", i))
		m.Priority = p
		e.send(t, tr, m)
	}
}

// take takes up to max messages of agent through tr (all when max <= 0).
func (e *guardEnv) take(t *testing.T, tr transport.Transport, agent string, max int) []*transport.Message {
	t.Helper()
	msgs, err := tr.TakeWork(t.Context(), agent, max)
	if err != nil {
		t.Fatalf("take %s: %v", agent, err)
	}
	return msgs
}

// takeN takes n messages of agent through tr, taking again while fewer
// came: natsbus may hand out work sent a moment before only at the next
// take (its consumers hear of new work a moment after the send returns).
func (e *guardEnv) takeN(t *testing.T, tr transport.Transport, agent string, n int) []*transport.Message {
	t.Helper()
	var got []*transport.Message
	for i := 0; len(got) < n && i < 250; i++ {
		got = append(got, e.take(t, tr, agent, n-len(got))...)
	}
	if len(got) != n {
		t.Fatalf("take %s: got %d messages, want %d", agent, len(got), n)
	}
	return got
}

// takeAll takes the n messages of agent through tr and checks that no
// other waits.
func (e *guardEnv) takeAll(t *testing.T, tr transport.Transport, agent string, n int) []*transport.Message {
	t.Helper()
	got := e.takeN(t, tr, agent, n)
	if more := e.take(t, tr, agent, 0); len(more) > 0 {
		t.Fatalf("take %s: got %d more messages, want %d in all", agent, len(more), n)
	}
	return got
}

// takeOne takes the next message of agent through tr.
func (e *guardEnv) takeOne(t *testing.T, tr transport.Transport, agent string) *transport.Message {
	t.Helper()
	return e.takeN(t, tr, agent, 1)[0]
}

// redelivered waits for the next delivery of a requires_ack message of
// agent that was not acknowledged in time and takes it through tr: on the
// bus the manual clock passes the ack timeout; natsbus redelivers on the
// real clock after its (short) ack wait.
func (e *guardEnv) redelivered(t *testing.T, tr transport.Transport, agent string) *transport.Message {
	t.Helper()
	if e.bus != nil {
		e.clk.Advance(bus.DefaultAckTimeout)
		return e.takeOne(t, tr, agent)
	}
	for range 500 { // 500 takes waiting 20ms each: 10s at most
		if msgs := e.take(t, tr, agent, 1); len(msgs) == 1 {
			return msgs[0]
		}
	}
	t.Fatalf("got no redelivery of %s's message, want one after the ack wait", agent)
	return nil
}

// depth returns how many messages agent's mailbox holds.
func (e *guardEnv) depth(t *testing.T, agent string) int {
	t.Helper()
	free, capacity, err := e.tr.(transport.RoomTeller).Room(t.Context(), agent)
	if err != nil {
		t.Fatalf("room of %s: %v", agent, err)
	}
	return capacity - free
}

// settle waits until agent's mailbox holds want messages. The bus counts
// a message taken at once; natsbus's stream drops one taken a moment
// later, once the server has processed the ack the take sent.
func (e *guardEnv) settle(t *testing.T, agent string, want int) {
	t.Helper()
	got := e.depth(t, agent)
	for i := 0; got != want && e.bus == nil && i < 5000; i++ {
		time.Sleep(time.Millisecond)
		got = e.depth(t, agent)
	}
	if got != want {
		t.Fatalf("got depth %d for %s, want %d", got, agent, want)
	}
}

// guardCounts are the accounting terms of a snapshot, for comparisons.
type guardCounts struct {
	Accepted, Delivered, DeadLettered uint64
	Queued, InFlight                  int
}

// counts checks that tr's accounting adds up to want; on natsbus it waits
// for the acks of messages taken to reach the server (see settle).
func (e *guardEnv) counts(t *testing.T, tr transport.Transport, want guardCounts) transport.Snapshot {
	t.Helper()
	var s transport.Snapshot
	var got guardCounts
	for i := 0; i < 5000; i++ {
		s = tr.Metrics()
		got = guardCounts{s.Accepted, s.Delivered, s.DeadLettered, s.Queued, s.InFlight}
		if (got == want && s.Balanced()) || e.bus != nil {
			break
		}
		time.Sleep(time.Millisecond)
	}
	if !s.Balanced() {
		t.Fatalf("got accepted %d, want delivered %d + dead-lettered %d + queued %d + in flight %d",
			s.Accepted, s.Delivered, s.DeadLettered, s.Queued, s.InFlight)
	}
	if got != want {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	return s
}

// guardNum reads a number of a message's content, whichever way it
// travelled (a Go int on the bus, a JSON number on natsbus).
func guardNum(v any) float64 {
	switch n := v.(type) {
	case int:
		return float64(n)
	case float64:
		return n
	}
	return -1
}
