package bus_test

import (
	"context"
	"fmt"

	"github.com/batonhq/baton/bus"
	"github.com/batonhq/baton/transport"
)

// A requires_ack message stays in flight until it is acknowledged; one that
// is handed back (or not acknowledged in time) is delivered again with the
// next delivery count, and counts as delivered only once acknowledged.
func ExampleBus_Nack() {
	b := bus.New()
	defer b.Close()
	_ = b.Register("PaymentAgent")
	ctx := context.Background()

	_ = b.Send(ctx, &transport.Message{
		Type: transport.MessageHandoff, From: "engine", To: "PaymentAgent", RequiresAck: true,
		Content: map[string]any{"action": "handoff"},
	})
	m, _, _ := b.TryReceive("PaymentAgent")
	fmt.Println("delivery", m.DeliveryCount, "in flight", b.Metrics().InFlight)
	_ = b.Nack(ctx, m) // the agent cannot take it now

	m, _, _ = b.TryReceive("PaymentAgent")
	fmt.Println("delivery", m.DeliveryCount)
	_ = b.Ack(ctx, m)
	s := b.Metrics()
	fmt.Println("delivered", s.Delivered, "in flight", s.InFlight, "balanced", s.Balanced())
	// Output:
	// delivery 1 in flight 1
	// delivery 2
	// delivered 1 in flight 0 balanced true
}

// A second send with the same idempotency key is acknowledged without being
// delivered again.
func ExampleWithReceipt() {
	b := bus.New()
	defer b.Close()
	_ = b.Register("seller")
	ctx := context.Background()

	for range 2 {
		var r bus.Receipt
		err := b.Send(ctx, &transport.Message{
			Type: transport.MessageHandoff, From: "engine", To: "seller",
			Content:  map[string]any{"action": "handoff"},
			Metadata: map[string]any{"idempotency_key": "wf_refund_123:2"},
		}, bus.WithReceipt(&r))
		fmt.Println(err, r.Duplicate)
	}
	msgs, _ := b.Receive("seller", 0)
	fmt.Println(len(msgs), "delivered")
	// Output:
	// <nil> false
	// <nil> true
	// 1 delivered
}
