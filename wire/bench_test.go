package wire_test

import (
	"testing"
	"time"

	"github.com/batonhq/baton/registry"
	"github.com/batonhq/baton/wire"
)

// BenchmarkEncode encodes the work of an agent-to-agent hand-off, as every
// step of an external agent sends one.
func BenchmarkEncode(b *testing.B) {
	task := handoffTask()
	b.ReportAllocs()
	for b.Loop() {
		if m := wire.Encode(task); len(m.Content) != 8 {
			b.Fatalf("content holds %d entries, want 8", len(m.Content))
		}
	}
}

// BenchmarkMarshalWork writes the JSON of a hand-off's work message, as
// natsbus does for every work it sends.
func BenchmarkMarshalWork(b *testing.B) {
	m := wire.Encode(handoffTask())
	m.MessageID, m.Timestamp = "0193f1c2-bbbb-7bbb-8ccc-123456789abc", time.Unix(1_800_000_000, 0)
	m.Metadata["ack_wait"] = 30.0
	b.ReportAllocs()
	for b.Loop() {
		if _, err := m.MarshalJSON(); err != nil {
			b.Fatal(err)
		}
	}
}

// handoffTask is the work of an agent-to-agent hand-off.
func handoffTask() *registry.Task {
	id := "0193f1c2-aaaa-7bbb-8ccc-123456789abc"
	return &registry.Task{
		Agent: "seller", WorkflowID: "refund", Version: 1, InstanceID: id, State: "SELLER_REVIEW",
		From: "customer", Reason: "eligible", Kind: "rule", Description: "Approve refund for order 1",
		HandoffID: id + ":2", IdempotencyKey: id + ":2", Step: 2, Attempt: 1, Priority: 5,
		Input: map[string]any{"order_id": "1"}, Context: map[string]any{"amount": 50},
		Deadline: time.Unix(1_800_000_000, 0),
	}
}

// BenchmarkDecodeWork reads a hand-off's work message into its task, as a
// Worker on NATS does for every work it takes.
func BenchmarkDecodeWork(b *testing.B) {
	data := workJSON(b, handoffTask())
	b.ReportAllocs()
	for b.Loop() {
		if _, _, ok := wire.DecodeWork(data); !ok {
			b.Fatal("DecodeWork left the work to Decode")
		}
	}
}
