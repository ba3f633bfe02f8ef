// Command refund embeds the Baton engine: it runs the refund workflow
// with deterministic in-process agents and prints how each request ended.
//
//	go run ./examples/refund
package main

import (
	"context"
	_ "embed"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/record"
	"github.com/batonhq/baton/registry"
	"github.com/batonhq/baton/rules"
)

//go:embed workflow.yaml
var workflowYAML []byte

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "refund:", err)
		os.Exit(1)
	}
}

// agents are the refund workflow's agents as plain Go functions: the
// customer agent accepts orders under 500, the seller approves amounts up to
// 200, payment and notification always succeed.
func agents() map[string]registry.Handler {
	return map[string]registry.Handler{
		"customer": registry.HandlerFunc(func(_ context.Context, t *registry.Task) (registry.Outcome, error) {
			amount, _ := t.Input["amount"].(int)
			return registry.Outcome{Trigger: "validated", Result: map[string]any{
				"refund_eligible": amount < 500, "order_id": t.Input["order_id"],
			}}, nil
		}),
		"seller": registry.HandlerFunc(func(_ context.Context, t *registry.Task) (registry.Outcome, error) {
			approval := "APPROVED"
			if amount, _ := t.Context["amount"].(int); amount > 200 {
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

func run(ctx context.Context, out io.Writer) error {
	w, err := rules.Parse("workflow.yaml", workflowYAML)
	if err != nil {
		return err
	}
	reg, err := engine.NewRegistry(w, agents())
	if err != nil {
		return err
	}
	eng, err := engine.New(w, reg)
	if err != nil {
		return err
	}
	defer eng.Close()

	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	orders := []map[string]any{
		{"order_id": "12345", "amount": 50, "reason": "defective product"},
		{"order_id": "23456", "amount": 350, "reason": "wrong size"},
		{"order_id": "34567", "amount": 900, "reason": "changed my mind"},
	}
	for _, input := range orders {
		inst, err := eng.Start(ctx, input)
		if err != nil {
			return err
		}
		res, err := inst.Wait(ctx)
		if err != nil {
			return err
		}
		history, err := inst.History(ctx)
		if err != nil {
			return err
		}
		var path, handoffs []string
		for _, e := range history {
			switch e.Kind {
			case record.KindStarted:
				path = append(path, e.State)
			case record.KindTransition:
				path = append(path, e.Next)
			case record.KindHandoff, record.KindFinalNotice:
				handoffs = append(handoffs, e.From+"->"+e.To)
			}
		}
		fmt.Fprintf(out, "order %v (%v): %s after %d steps\n", input["order_id"], input["amount"], res.Outcome, res.Steps)
		fmt.Fprintf(out, "  path:     %s\n", strings.Join(path, " -> "))
		fmt.Fprintf(out, "  handoffs: %s\n", strings.Join(handoffs, ", "))
	}
	return nil
}
