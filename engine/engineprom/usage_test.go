package engineprom_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/batonhq/baton/clock"
	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/engine/engineprom"
	"github.com/batonhq/baton/registry"
	"github.com/batonhq/baton/rules"
)

// drafting: a writer drafts (and fails once, having spent tokens), a
// reviewer reviews; the usage each reports is counted by agent.
const drafting = `workflow: drafting
version: 1
initial: DRAFT
agents: {writer: {}, reviewer: {}}
states:
  DRAFT: {agent: writer, retry: {max: 2, backoff: [1s]}}
  REVIEW: {agent: reviewer}
  DONE: {terminal: true}
rules:
  - {id: drafted, from: writer, trigger: drafted, next: REVIEW}
  - {id: ok, from: reviewer, trigger: ok, next: DONE}
`

func TestCollector_TokensAndCost(t *testing.T) {
	w, err := rules.Parse("drafting.yaml", []byte(drafting))
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	c, err := engineprom.Register(reg)
	if err != nil {
		t.Fatal(err)
	}
	tries := 0
	writer := registry.HandlerFunc(func(context.Context, *registry.Task) (registry.Outcome, error) {
		tries++
		if tries == 1 {
			// A failed run's usage counts too.
			return registry.Outcome{Usage: registry.Usage{InputTokens: 100, Cost: 0.125, Model: "big"}}, registry.Kind(errors.New("overloaded"), "rate_limited")
		}
		return registry.Outcome{Trigger: "drafted", Usage: registry.Usage{InputTokens: 1000, OutputTokens: 250, Cost: 0.5, Model: "big"}}, nil
	})
	reviewer := registry.HandlerFunc(func(context.Context, *registry.Task) (registry.Outcome, error) {
		// Cost only: no token series appears for the reviewer.
		return registry.Outcome{Trigger: "ok", Usage: registry.Usage{Cost: 0.25}}, nil
	})
	agents, err := engine.NewRegistry(w, map[string]registry.Handler{"writer": writer, "reviewer": reviewer})
	if err != nil {
		t.Fatal(err)
	}
	sim := clock.NewSim(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	eng, err := engine.New(w, agents, engine.WithClock(sim), engine.WithExecutor(sim), engine.WithObserver(c.Observe))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = eng.Close() })
	if _, err := eng.Start(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	if err := sim.Run(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	compare(t, reg, `
# HELP baton_tokens_total Tokens the runs' agents reported using, input (read) or output (written).
# TYPE baton_tokens_total counter
baton_tokens_total{agent="writer",direction="input",workflow="drafting"} 1100
baton_tokens_total{agent="writer",direction="output",workflow="drafting"} 250
# HELP baton_cost_total Cost the runs' agents reported, in the unit the workflows budget in.
# TYPE baton_cost_total counter
baton_cost_total{agent="reviewer",workflow="drafting"} 0.25
baton_cost_total{agent="writer",workflow="drafting"} 0.625
`, "baton_tokens_total", "baton_cost_total")
}

// Usage the engine would have refused never reaches a counter: a hand-made
// event with it neither panics nor makes a series.
func TestCollector_IgnoresUsageNoRunCouldReport(t *testing.T) {
	c := engineprom.New()
	for _, u := range []registry.Usage{{InputTokens: -5, OutputTokens: -1, Cost: -1}, {Cost: math.Inf(1)}, {Cost: math.NaN()}} {
		c.Observe(engine.Event{Type: engine.EventAgentReported, Workflow: "w", Agent: "a", Usage: u})
	}
	if n := testutil.CollectAndCount(c, "baton_tokens_total", "baton_cost_total"); n != 0 {
		t.Errorf("got %d usage series, want 0", n)
	}
	want := "\n# HELP baton_cost_total Cost the runs' agents reported, in the unit the workflows budget in.\n# TYPE baton_cost_total counter\nbaton_cost_total{agent=\"a\",workflow=\"w\"} 1.5\n"
	c.Observe(engine.Event{Type: engine.EventAgentReported, Workflow: "w", Agent: "a", Usage: registry.Usage{Cost: 1.5}})
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), "baton_cost_total"); err != nil {
		t.Error(err)
	}
}
