package handoff_test

import (
	"strconv"
	"testing"

	"go.uber.org/zap"

	"github.com/batonhq/baton/handoff"
)

// BenchmarkHandoff measures one whole hand-off: validation, the HANDOFF
// message on a real bus, the target receiving and unpacking it, and its
// acceptance (which stops the time-out timer).
func BenchmarkHandoff(b *testing.B) {
	e := newEnv(b, handoff.WithLogger(zap.NewNop()))
	ctx := b.Context()
	cmd := handoff.Command{
		From: "seller", To: "payment", Reason: handoff.ReasonRule, Task: "Refund order 12345",
		Context:        map[string]any{"order_id": "12345", "amount": 50},
		PreviousResult: map[string]any{"approval": "APPROVED"},
		Constraints:    map[string]any{"refund_method": "original_payment"},
		WorkflowID:     "refund", InstanceID: "bench", Step: 3, IdempotencyKey: "bench:3",
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		// Each hand-off is a new step: the bus drops a repeated
		// idempotency key as a duplicate.
		cmd.Step = i
		cmd.IdempotencyKey = "bench:" + strconv.Itoa(i)
		if _, err := e.mgr.Handoff(ctx, cmd); err != nil {
			b.Fatal(err)
		}
		m, ok, err := e.bus.TryReceive("payment")
		if err != nil || !ok {
			b.Fatalf("TryReceive = %v, %v", ok, err)
		}
		d, err := handoff.Unpack(m)
		if err != nil {
			b.Fatal(err)
		}
		if err := e.mgr.Accept(ctx, d.HandoffID); err != nil {
			b.Fatal(err)
		}
		if i++; i%1024 == 0 {
			e.mgr.Forget("bench") // as the engine does when an instance ends
		}
	}
}

// BenchmarkValidate measures the validator alone on a dynamic hand-off,
// every check included.
func BenchmarkValidate(b *testing.B) {
	v := newValidator(b)
	cmd := handoff.Command{From: "seller", To: "rag", Reason: handoff.ReasonCapabilityMatch, Task: "search", Capability: "rag_search"}
	recent := history("customer", "seller", "seller", "payment", "payment", "rag", "rag", "seller")
	b.ReportAllocs()
	for b.Loop() {
		if err := v.Validate(cmd, recent); err != nil {
			b.Fatal(err)
		}
	}
}
