package wire_test

import (
	"errors"
	"testing"

	"github.com/batonhq/baton/bus"
	"github.com/batonhq/baton/registry"
	"github.com/batonhq/baton/transport"
	"github.com/batonhq/baton/wire"
)

// Send is Encode and the transport's send in one call: the agent receives
// the task as Decode reads it, under the key Sending gives; offered work
// that finds the mailbox full is refused without a dead letter, where sent
// work is dead-lettered.
func TestSend_EncodesAndSendsThroughTheTransport(t *testing.T) {
	b := bus.New(bus.WithAckMessages(false))
	defer b.Close()
	if err := b.Register("payer", bus.WithMailboxCapacity(1)); err != nil {
		t.Fatal(err)
	}
	task := &registry.Task{Agent: "payer", WorkflowID: "refund", InstanceID: "inst-1", State: "PAY", Step: 2, Attempt: 1, IdempotencyKey: "inst-1:2", Priority: 1}
	if err := wire.Send(t.Context(), b, task, wire.Sending{Key: "inst-1:2#resent.3"}); err != nil {
		t.Fatalf("Send: %v", err)
	}
	second := *task
	second.Step, second.IdempotencyKey = 3, "inst-1:3"
	var full *transport.QueueFullError
	if err := wire.Send(t.Context(), b, &second, wire.Sending{Offer: true}); !errors.As(err, &full) {
		t.Fatalf("offered into a full mailbox: got %v, want a *transport.QueueFullError", err)
	}
	if n := len(b.DeadLetters()); n != 0 {
		t.Fatalf("got %d dead letters after an offer, want none", n)
	}
	if err := wire.Send(t.Context(), b, &second, wire.Sending{}); !errors.As(err, &full) {
		t.Fatalf("sent into a full mailbox: got %v, want a *transport.QueueFullError", err)
	}
	if n := len(b.DeadLetters()); n != 1 {
		t.Fatalf("got %d dead letters after a send, want 1", n)
	}
	ms, err := b.Receive("payer", 1)
	if err != nil || len(ms) != 1 {
		t.Fatalf("got %d messages, %v, want the first work", len(ms), err)
	}
	if ms[0].IdempotencyKey != "inst-1:2#resent.3" {
		t.Errorf("got message key %q, want the key Sending gave", ms[0].IdempotencyKey)
	}
	got, err := wire.Decode(ms[0])
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	if got.IdempotencyKey != "inst-1:2" || got.Step != 2 || got.Agent != "payer" {
		t.Errorf("got task %+v, want step 2 of payer under the task's own key", got)
	}
}
