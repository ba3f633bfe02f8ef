// Command refund embeds the Baton engine: it runs the refund workflow
// with deterministic in-process agents (package handlers) and prints how each request ended.
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

	"github.com/batonhq/baton/bus"
	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/examples/refund/handlers"
	"github.com/batonhq/baton/record"
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

func run(ctx context.Context, out io.Writer) error {
	w, err := rules.Parse("workflow.yaml", workflowYAML)
	if err != nil {
		return err
	}
	reg, err := engine.NewRegistry(w, handlers.All())
	if err != nil {
		return err
	}
	// senior_seller has no Go handler: its work waits on an in-memory bus
	// for a person or another process to take it.
	b := bus.New(bus.WithAckMessages(false))
	defer b.Close()
	eng, err := engine.New(w, reg, engine.WithTransport(b))
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
