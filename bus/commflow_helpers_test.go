package bus_test

import (
	"testing"

	"github.com/batonhq/baton/bus"
	"github.com/batonhq/baton/transport"
)

// ackable builds a REQUEST that requires an acknowledgement.
func ackable(from, to, action string) *transport.Message {
	m := request(from, to, action)
	m.RequiresAck = true
	return m
}

// notice builds a NOTIFICATION.
func notice(from, to, action string) *transport.Message {
	return &transport.Message{Type: transport.MessageNotification, From: from, To: to, Content: map[string]any{"action": action}}
}

// mustReceiveOne takes the next message of agent, failing if there is none.
func mustReceiveOne(t *testing.T, b *bus.Bus, agent string) *transport.Message {
	t.Helper()
	m, ok, err := b.TryReceive(agent)
	if err != nil || !ok {
		t.Fatalf("receive %s: got ok %v err %v, want a message", agent, ok, err)
	}
	return m
}

// assertEmpty fails if agent's mailbox holds a message.
func assertEmpty(t *testing.T, b *bus.Bus, agent string) {
	t.Helper()
	if m, ok, _ := b.TryReceive(agent); ok {
		t.Fatalf("got %s %q in %s's mailbox, want none", m.Type, m.Action(), agent)
	}
}

// flowCounts are the accounting terms of a snapshot, for table comparisons.
type flowCounts struct {
	Accepted, Delivered, DeadLettered uint64
	Queued, InFlight                  int
}

func countsOf(s transport.Snapshot) flowCounts {
	return flowCounts{s.Accepted, s.Delivered, s.DeadLettered, s.Queued, s.InFlight}
}

// assertCounts checks the invariant and the exact accounting terms.
func assertCounts(t *testing.T, b *bus.Bus, want flowCounts) transport.Snapshot {
	t.Helper()
	s := assertBalanced(t, b)
	if got := countsOf(s); got != want {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	return s
}

// deadLetterOf returns the dead letter of message id.
func deadLetterOf(t *testing.T, b *bus.Bus, id string) transport.DeadLetter {
	t.Helper()
	for _, d := range b.DeadLetters() {
		if d.Message.MessageID == id {
			return d
		}
	}
	t.Fatalf("got no dead letter for %s, want one", id)
	return transport.DeadLetter{}
}
