package bus_test

import (
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/batonhq/baton/bus"
	"github.com/batonhq/baton/transport"
)

// newBus returns a bus closed at the end of the test, with agents
// registered under default mailbox options.
func newBus(t *testing.T, agents []string, opts ...bus.Option) *bus.Bus {
	t.Helper()
	b := bus.New(opts...)
	t.Cleanup(func() { _ = b.Close() })
	for _, a := range agents {
		if err := b.Register(a); err != nil {
			t.Fatalf("register %s: %v", a, err)
		}
	}
	return b
}

// observed returns a debug-level logger whose entries the test can read.
func observed() (*zap.Logger, *observer.ObservedLogs) {
	core, logs := observer.New(zapcore.DebugLevel)
	return zap.New(core), logs
}

// request builds a valid REQUEST.
func request(from, to, action string) *transport.Message {
	return &transport.Message{Type: transport.MessageRequest, From: from, To: to, Content: map[string]any{"action": action}}
}

// mustSend sends m and fails the test on error.
func mustSend(t *testing.T, b *bus.Bus, m *transport.Message, opts ...bus.SendOption) {
	t.Helper()
	if err := b.Send(t.Context(), m, opts...); err != nil {
		t.Fatalf("send %s -> %s: %v", m.From, m.To, err)
	}
}

// receiveAll drains agent's mailbox.
func receiveAll(t *testing.T, b *bus.Bus, agent string) []*transport.Message {
	t.Helper()
	msgs, err := b.Receive(agent, 0)
	if err != nil {
		t.Fatalf("receive %s: %v", agent, err)
	}
	return msgs
}

// ids returns the message ids of msgs.
func ids(msgs []*transport.Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = m.MessageID
	}
	return out
}

// assertBalanced checks the accounting invariant on a fresh snapshot.
func assertBalanced(t *testing.T, b *bus.Bus) transport.Snapshot {
	t.Helper()
	s := b.Metrics()
	if !s.Balanced() {
		t.Fatalf("got accepted %d, want delivered %d + dead-lettered %d + queued %d",
			s.Accepted, s.Delivered, s.DeadLettered, s.Queued)
	}
	return s
}

// depth returns the queue depth of agent in s.
func depth(s transport.Snapshot, agent string) int {
	for _, a := range s.Agents {
		if a.Agent == agent {
			return a.Depth
		}
	}
	return -1
}

// fieldsOf returns an observed entry's fields as a map.
func fieldsOf(e observer.LoggedEntry) map[string]any { return e.ContextMap() }
