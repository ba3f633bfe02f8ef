// Package refundagents provides no-op Go agents for the refund example
// workflow, shared by the benchmarks of the engine and of its stores.
package refundagents

import (
	"context"

	"github.com/batonhq/baton/registry"
)

// Approved returns handlers that drive examples/refund/workflow.yaml along
// its approved path: validated, reviewed APPROVED, refunded, sent.
func Approved() map[string]registry.Handler {
	reply := func(trigger string, result map[string]any) registry.Handler {
		return registry.HandlerFunc(func(context.Context, *registry.Task) (registry.Outcome, error) {
			return registry.Outcome{Trigger: trigger, Result: result}, nil
		})
	}
	return map[string]registry.Handler{
		"customer":     reply("validated", map[string]any{"refund_eligible": true, "order_id": "1"}),
		"seller":       reply("reviewed", map[string]any{"approval": "APPROVED"}),
		"payment":      reply("refunded", map[string]any{"transaction_id": "tx"}),
		"notification": reply("sent", nil),
	}
}

// Input is a refund's start input.
func Input() map[string]any { return map[string]any{"order_id": "1", "amount": 50} }
