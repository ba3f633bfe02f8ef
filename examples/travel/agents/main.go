// Command agents runs the travel example's agents in a process of their
// own: they take their work from Baton over NATS.
//
//	NATS_URL=nats://127.0.0.1:4222 go run ./examples/travel/agents [-agents flight,hotel] [-replicas 3]
//
// Their answers follow the trip's input, so that a run is repeatable: the
// searches recommend the premium package for a budget of 2000 or more and
// the budget package below it (the flight search already from 1000), with
// confidences 0.9, 0.8 and 0.7; there are no flights or hotels to
// ATLANTIS, so such a trip is planned again and then abandoned.
package main

import (
	"context"
	"errors"

	"github.com/batonhq/baton/examples/internal/agentmain"
	"github.com/batonhq/baton/registry"
)

func main() { agentmain.Main("travel-agents", handlers()) }

func handlers() map[string]registry.Handler {
	return map[string]registry.Handler{
		"planner": registry.HandlerFunc(plan),
		"flight":  search("flight", 1000, 0.9, true),
		"hotel":   search("hotel", 2000, 0.8, true),
		"car":     search("car", 2000, 0.7, false),
		"payment": registry.HandlerFunc(func(_ context.Context, t *registry.Task) (registry.Outcome, error) {
			return registry.Outcome{Trigger: "paid", Result: map[string]any{"transaction_id": "tx-" + t.InstanceID}}, nil
		}),
	}
}

// plan plans a trip once: a trip back in planning (its destination is in
// the context already) is abandoned.
func plan(_ context.Context, t *registry.Task) (registry.Outcome, error) {
	if _, again := t.Context["destination"]; again {
		return registry.Outcome{Trigger: "abandon"}, nil
	}
	return registry.Outcome{Trigger: "planned"}, nil
}

// search is a search agent that recommends premium from a budget of
// premiumFrom; one that cannot reach ATLANTIS fails for it.
func search(what string, premiumFrom, confidence float64, noAtlantis bool) registry.Handler {
	return registry.HandlerFunc(func(_ context.Context, t *registry.Task) (registry.Outcome, error) {
		if noAtlantis && t.Input["to"] == "ATLANTIS" {
			return registry.Outcome{}, registry.Permanent(errors.New("no " + what + " goes to ATLANTIS"))
		}
		option := "budget"
		if budget, _ := t.Input["budget"].(float64); budget >= premiumFrom { // numbers travel as JSON
			option = "premium"
		}
		return registry.Outcome{Trigger: "found", Result: map[string]any{"option": option, "confidence": confidence}}, nil
	})
}
