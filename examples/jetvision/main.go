// Command jetvision embeds the Baton engine: it runs the Jetvision
// charter-flight workflow with deterministic in-process agents, one of which
// fails once so that the error monitor's recovery is visible.
//
//	go run ./examples/jetvision
package main

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync/atomic"
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
		fmt.Fprintln(os.Stderr, "jetvision:", err)
		os.Exit(1)
	}
}

// agents returns the workflow's agents as Go functions. Each agent decides
// from its state and input alone, except the communication agent, whose
// first send fails (Gmail quota) so that the error monitor retries it.
func agents() map[string]registry.Handler {
	var sends atomic.Int32
	return map[string]registry.Handler{
		"orchestrator": registry.HandlerFunc(func(_ context.Context, t *registry.Task) (registry.Outcome, error) {
			return registry.Outcome{Trigger: "analyzed", Result: map[string]any{
				"client_name": t.Input["client_name"], "rfp": t.Input["rfp"],
			}}, nil
		}),
		"client_data": registry.HandlerFunc(func(_ context.Context, t *registry.Task) (registry.Outcome, error) {
			return registry.Outcome{Trigger: "fetched", Result: map[string]any{
				"profile": map[string]any{"name": t.Context["client_name"], "vip": true},
			}}, nil
		}),
		"flight_search": registry.HandlerFunc(func(_ context.Context, t *registry.Task) (registry.Outcome, error) {
			if t.State == "SEARCHING_FLIGHTS" {
				return registry.Outcome{Trigger: "rfp_created", Result: map[string]any{"rfp_id": "rfp-" + t.InstanceID[:8]}}, nil
			}
			return registry.Outcome{Trigger: "quotes_received", Result: map[string]any{"quotes_count": 4}}, nil
		}),
		"proposal_analysis": registry.HandlerFunc(func(context.Context, *registry.Task) (registry.Outcome, error) {
			return registry.Outcome{Trigger: "analyzed", Result: map[string]any{
				"quotes_analyzed": 4, "top_proposals": []any{"G650 $48k", "Falcon 7X $45k", "Global 6000 $51k"},
			}}, nil
		}),
		"communication": registry.HandlerFunc(func(_ context.Context, t *registry.Task) (registry.Outcome, error) {
			if t.State == "GENERATING_EMAIL" {
				return registry.Outcome{Trigger: "email_generated", Result: map[string]any{"recipient": "client@example.com"}}, nil
			}
			if sends.Add(1) == 1 {
				return registry.Outcome{}, registry.Permanent(errors.New("Gmail API quota exceeded"))
			}
			return registry.Outcome{Trigger: "sent"}, nil
		}),
		"error_monitor": registry.HandlerFunc(func(context.Context, *registry.Task) (registry.Outcome, error) {
			return registry.Outcome{Trigger: "retry"}, nil
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
	requests := []map[string]any{
		{"request_id": "req-1", "session_id": "s-1", "client_name": "John Smith", "rfp": map[string]any{"from": "KTEB", "to": "KVNY"}},
		{"request_id": "req-2", "session_id": "s-2", "rfp": map[string]any{"from": "KLAX", "to": "KSFO"}},
	}
	for _, input := range requests {
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
		var handoffs []string
		for _, e := range history {
			if e.Kind == record.KindHandoff || e.Kind == record.KindFinalNotice {
				handoffs = append(handoffs, e.From+"->"+e.To)
			}
		}
		fmt.Fprintf(out, "%v: %s after %d steps\n", input["request_id"], res.Outcome, res.Steps)
		fmt.Fprintf(out, "  handoffs: %s\n", strings.Join(handoffs, ", "))
	}
	return nil
}
