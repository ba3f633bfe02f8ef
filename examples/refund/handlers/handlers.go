// Package handlers holds the refund example's agents as Go handlers, the
// same ones whether they run inside the engine's process
// (examples/refund) or in a process of their own that takes its work from
// NATS (examples/refund/agents): the customer agent accepts orders under
// 500, the seller approves amounts up to 200, payment and notification
// always succeed, and the supervisor rejects what is escalated to it.
package handlers

import (
	"context"
	"fmt"

	"github.com/batonhq/baton/registry"
)

// All returns the refund workflow's agents by id.
func All() map[string]registry.Handler {
	return map[string]registry.Handler{
		"customer": registry.HandlerFunc(func(_ context.Context, t *registry.Task) (registry.Outcome, error) {
			return registry.Outcome{Trigger: "validated", Result: map[string]any{
				"refund_eligible": number(t.Input["amount"]) < 500, "order_id": t.Input["order_id"],
			}}, nil
		}),
		"seller": registry.HandlerFunc(func(_ context.Context, t *registry.Task) (registry.Outcome, error) {
			approval := "APPROVED"
			if number(t.Context["amount"]) > 200 {
				approval = "REJECTED"
			}
			return registry.Outcome{Trigger: "reviewed", Result: map[string]any{"approval": approval}}, nil
		}),
		"payment": registry.HandlerFunc(func(_ context.Context, t *registry.Task) (registry.Outcome, error) {
			return registry.Outcome{Trigger: "refunded", Result: map[string]any{
				"transaction_id": fmt.Sprintf("tx-%v", t.Context["order_id"]),
			}}, nil
		}),
		"notification": registry.HandlerFunc(func(context.Context, *registry.Task) (registry.Outcome, error) {
			return registry.Outcome{Trigger: "sent"}, nil
		}),
		"supervisor": registry.HandlerFunc(func(context.Context, *registry.Task) (registry.Outcome, error) {
			return registry.Outcome{Trigger: "reject", Result: map[string]any{"reason": "escalated"}}, nil
		}),
	}
}

// number reads an amount as the engine passes it: an int from a Go
// caller, a float64 once it has travelled as JSON.
func number(v any) float64 {
	switch n := v.(type) {
	case int:
		return float64(n)
	case int64:
		return float64(n)
	case float64:
		return n
	}
	return 0
}
