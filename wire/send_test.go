package wire_test

import (
	"context"
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

// keeper is a transport that keeps every message sent as it is, and says
// it writes its work out when out is set.
type keeper struct {
	transport.Transport
	sent []*transport.Message
	err  error
}

func (k *keeper) SendWork(_ context.Context, m *transport.Message) error {
	k.sent = append(k.sent, m)
	return k.err
}

type writer struct{ keeper }

func (*writer) WritesWorkOut() {}

// Send reuses the maps of work it sent only through a WorkWriter that
// took it: a transport that keeps the message (the in-memory bus hands it
// to the agent), or one that refused it, keeps it whole.
func TestSend_ReusesTheMapsOfWorkOnlyAWorkWriterTook(t *testing.T) {
	task := &registry.Task{Agent: "payer", WorkflowID: "refund", InstanceID: "inst-1", State: "PAY", Step: 2, Attempt: 1, Priority: 1}
	whole := func(m *transport.Message) bool {
		return m.Content[wire.KeyAction] == wire.ActionRun && m.Metadata[wire.KeyInstanceID] == "inst-1"
	}
	k := &keeper{}
	refusing := &writer{keeper{err: errors.New("refused")}}
	for range 3 {
		for _, tr := range []transport.Transport{k, refusing} {
			if err := wire.Send(t.Context(), tr, task, wire.Sending{}); err != nil && tr == k {
				t.Fatal(err)
			}
		}
	}
	for i, m := range append(k.sent, refusing.sent...) {
		if !whole(m) {
			t.Fatalf("message %d: got content %v and metadata %v after more sends, want them whole", i, m.Content, m.Metadata)
		}
	}
	w := &writer{}
	// A pool may drop what it is given (the race detector has it drop a
	// quarter): enough sends that some reuse is certain.
	for range 20 {
		if err := wire.Send(t.Context(), w, task, wire.Sending{}); err != nil {
			t.Fatal(err)
		}
	}
	reused := 0
	for _, m := range w.sent {
		if !whole(m) {
			reused++
		}
	}
	if reused == 0 {
		t.Errorf("got every message whole through a WorkWriter, want the maps of those written out reused")
	}
}
