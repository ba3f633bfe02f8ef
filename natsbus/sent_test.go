package natsbus_test

import (
	"fmt"
	"testing"

	"github.com/batonhq/baton/natsbus"
	"github.com/batonhq/baton/registry"
	"github.com/batonhq/baton/transport"
	"github.com/batonhq/baton/wire"
)

// Work an agent on a plain NATS client terminates is dead-lettered as it
// was sent, with its instance, step and idempotency key, whichever of two
// Transports sharing the server hears JetStream's advisory (the one that
// sent the work, or the other one, which asks it): the advisory itself
// names only the stream and the sequence, and the message has left its
// work-queue stream by then.
func TestTransport_TerminatedWork_KeepsItsIdentity(t *testing.T) {
	sender := newTestTransport(t)
	other := sender.another()
	dl := sender.collectDeadLetters()
	ctx := t.Context()
	sender.open("plain.agent", 0)
	const n = 8
	for i := range n {
		task := &registry.Task{Agent: "plain.agent", WorkflowID: "w", InstanceID: fmt.Sprintf("inst-%d", i), State: "S",
			Step: i + 1, IdempotencyKey: fmt.Sprintf("inst-%d:%d", i, i+1), Reason: "initial"}
		if err := sender.SendWork(ctx, wire.Encode(task)); err != nil {
			t.Fatal(err)
		}
	}
	js := sender.jetStream()
	took := 0
	for _, level := range []string{"critical", "high", "normal", "low"} {
		c, err := js.Consumer(ctx, natsbus.WorkStream("plain.agent"), level)
		if err != nil {
			t.Fatal(err)
		}
		b, err := c.FetchNoWait(n)
		if err != nil {
			t.Fatal(err)
		}
		for m := range b.Messages() {
			took++
			if err := m.TermWithReason("queue busy"); err != nil {
				t.Fatal(err)
			}
		}
	}
	if took != n {
		t.Fatalf("took %d messages, want %d", took, n)
	}
	waitFor(t, "the dead letters", func() bool { return len(dl.all()) == n })
	seen := map[string]bool{}
	for _, d := range dl.all() {
		if d.Reason != transport.ReasonRejected || d.LastError != "queue busy" {
			t.Errorf("got %s %q, want rejected: queue busy", d.Reason, d.LastError)
		}
		task, err := wire.Decode(d.Message)
		if err != nil {
			t.Errorf("dead letter %s: the work does not decode: %v", d.Message.MessageID, err)
			continue
		}
		if want := fmt.Sprintf("%s:%d", task.InstanceID, task.Step); d.Message.Key() != want || task.IdempotencyKey != want {
			t.Errorf("dead letter of %s step %d: got key %q, want %q", task.InstanceID, task.Step, d.Message.Key(), want)
		}
		seen[task.InstanceID] = true
	}
	if len(seen) != n {
		t.Errorf("got the dead letters of %d instances, want %d", len(seen), n)
	}
	_ = other
}
