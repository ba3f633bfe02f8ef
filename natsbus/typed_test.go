package natsbus_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/batonhq/baton/record"
	"github.com/batonhq/baton/registry"
	"github.com/batonhq/baton/rules"
)

// A result reported over NATS that breaks its agent's declaration has
// failed its run, with kind invalid_result, like a Go handler's: the retry
// policy runs it again.
func TestWorker_ResultBreakingItsDeclarationIsInvalidResult(t *testing.T) {
	w, err := rules.Parse("typed.yaml", []byte(`workflow: typed
initial: COUNTING
agents:
  counter: {result: {words: int}}
states:
  COUNTING: {agent: counter, retry: {max: 1, on: [invalid_result]}}
  DONE: {terminal: true}
rules:
  - {id: counted, from: counter, trigger: counted, next: DONE}
`))
	if err != nil {
		t.Fatal(err)
	}
	ns := startServer(t, false)
	nc := connect(t, ns)
	eng, _ := newEngine(t, nc, w, memStorage)
	serveReports(t, nc, eng)
	var runs atomic.Int64
	startWorker(t, connect(t, ns), map[string]registry.Handler{
		"counter": registry.HandlerFunc(func(context.Context, *registry.Task) (registry.Outcome, error) {
			if runs.Add(1) == 1 {
				return registry.Outcome{Trigger: "counted", Result: map[string]any{"words": 2.5}}, nil
			}
			return registry.Outcome{Trigger: "counted", Result: map[string]any{"words": 2}}, nil
		}),
	}, memStorage)
	ctx, inst := startInstance(t, eng, nil)
	res, err := inst.Wait(ctx)
	if err != nil || res.Outcome != "DONE" {
		t.Fatalf("got %s %s (%v, %v), want DONE", res.Status, res.Outcome, res.Err, err)
	}
	h, err := inst.History(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ran []record.Entry
	for _, e := range h {
		if e.Kind == record.KindAgentRun {
			ran = append(ran, e)
		}
	}
	if len(ran) != 2 || ran[0].ErrorKind != "invalid_result" || !strings.Contains(ran[0].Error, "result.words must be an int, got the number 2.5") || ran[1].ErrorKind != "" {
		t.Fatalf("got runs %+v, want the first failed with kind invalid_result naming result.words, the second fine", ran)
	}
}
