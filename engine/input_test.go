package engine_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/clock"
	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/internal/refundagents"
	"github.com/batonhq/baton/record"
	"github.com/batonhq/baton/registry"
	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/wire"
)

var goodInput = map[string]any{"order_id": "o-1", "amount": 50.0}

// A start input that breaks the workflow's declaration is refused before
// anything starts, naming the field; nothing is stored.
func TestEngine_Start_RefusesInputThatBreaksItsDeclaration(t *testing.T) {
	tests := []struct {
		name      string
		input     map[string]any
		wantField string
		wantWhy   string
	}{
		{"missing field", map[string]any{"amount": 5}, "input.order_id", "is missing"},
		{"nil input misses every field", nil, "input.order_id", "is missing"},
		{"wrong type", map[string]any{"order_id": 12345, "amount": 5}, "input.order_id", "must be a string, got the number 12345"},
		{"number given as text", map[string]any{"order_id": "o-1", "amount": "5"}, "input.amount", `must be a number, got the string "5"`},
		{"optional field of the wrong type", map[string]any{"order_id": "o-1", "amount": 5, "note": 1}, "input.note", "must be a string, got the number 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := record.NewMemStore()
			r := newSimRun(t, "typed.yaml", nil, engine.WithStore(store))
			_, err := r.eng.Start(t.Context(), tt.input)
			var ie *engine.InputError
			if !errors.As(err, &ie) || ie.Field != tt.wantField || ie.Reason != tt.wantWhy || !errors.Is(err, engine.ErrInvalidData) {
				t.Fatalf("got %v, want an *InputError: %s %s", err, tt.wantField, tt.wantWhy)
			}
			if snaps, _ := store.Instances(t.Context()); len(snaps) != 0 {
				t.Errorf("got %d instances in the store, want none", len(snaps))
			}
		})
	}
	t.Run("fitting input starts, undeclared fields and all", func(t *testing.T) {
		r := newSimRun(t, "typed.yaml", nil)
		if _, err := r.eng.Start(t.Context(), map[string]any{"order_id": "o-1", "amount": 5, "note": nil, "extra": true}); err != nil {
			t.Fatalf("got %v, want the instance started", err)
		}
	})
}

// A Go handler's result that breaks its agent's declaration fails the run
// with kind invalid_result, naming the field: the retry policy (on:
// [invalid_result]) runs it again, and rules read error.kind.
func TestEngine_Result_BreakingItsDeclarationIsInvalidResult(t *testing.T) {
	t.Run("retried, then good", func(t *testing.T) {
		r := newSimRun(t, "typed.yaml", map[string][]reply{
			"reviewer": {ok("reviewed", map[string]any{"approval": "yes", "score": "high"}), ok("reviewed", map[string]any{"approval": "yes", "score": 4.0})},
			"payer":    {ok("paid", nil)},
		})
		res, h := r.finish(goodInput)
		wantCompleted(t, res, "DONE")
		ran := entries(h, record.KindAgentRun)
		if len(ran) != 3 || ran[0].ErrorKind != "invalid_result" || !strings.Contains(ran[0].Error, `result.score must be an int, got the string "high"`) {
			t.Fatalf("got runs %+v, want the first failed with kind invalid_result naming result.score", ran)
		}
		if retries := entries(h, record.KindRetry); len(retries) != 1 || retries[0].ErrorKind != "invalid_result" {
			t.Errorf("got retries %+v, want one of kind invalid_result", retries)
		}
	})
	t.Run("no retry left: error.kind in rules", func(t *testing.T) {
		r := newSimRun(t, "typed.yaml", map[string][]reply{
			"reviewer": {ok("reviewed", map[string]any{"approval": "yes"}), ok("reviewed", map[string]any{"approval": "yes", "score": 4.5})},
		})
		res, _ := r.finish(goodInput)
		wantCompleted(t, res, "INVALID")
		if why, _ := res.Context["why"].(string); !strings.Contains(why, "result.score must be an int, got the number 4.5") {
			t.Errorf("got error.message %q, want the last failure naming result.score", why)
		}
	})
	t.Run("a failed run is not held to the declaration", func(t *testing.T) {
		r := newSimRun(t, "typed.yaml", map[string][]reply{"reviewer": {permanent("down")}})
		res, _ := r.finish(goodInput)
		wantCompleted(t, res, "ERRORED")
	})
}

// External agents' reports meet the same check, whichever way they come:
// Report, or a wire report (NATS, HTTP). The report is
// applied (the answer is ok): it ended the run, as a failure.
func TestEngine_Result_ExternalReportsBreakingTheDeclaration(t *testing.T) {
	bad := registry.Outcome{Trigger: "reviewed", Result: map[string]any{"approval": 1, "score": 3}}
	good := registry.Outcome{Trigger: "reviewed", Result: map[string]any{"approval": "ok", "score": 3}}
	paths := []struct {
		name   string
		report func(r *simRun, inst *engine.Instance, step int, out registry.Outcome) error
	}{
		{"Report", func(r *simRun, inst *engine.Instance, step int, out registry.Outcome) error {
			return r.eng.Report(t.Context(), inst.ID(), step, out, nil)
		}},
		{"HandleReport", func(r *simRun, inst *engine.Instance, step int, out registry.Outcome) error {
			ans := r.eng.HandleReport(t.Context(), &wire.Report{InstanceID: inst.ID(), Step: step, Agent: "reviewer", Trigger: out.Trigger, Result: out.Result})
			if !ans.OK {
				return errors.New(ans.Code + ": " + ans.Message)
			}
			return nil
		}},
	}
	for _, p := range paths {
		t.Run(p.name, func(t *testing.T) {
			r := newSimRun(t, "typed.yaml", map[string][]reply{"payer": {ok("paid", nil)}})
			inst := r.start(goodInput)
			if err := p.report(r, inst, 1, bad); err != nil {
				t.Fatalf("bad report: got %v, want it applied", err)
			}
			r.settle() // the retry's backoff
			if err := p.report(r, inst, 2, good); err != nil {
				t.Fatalf("good report: %v", err)
			}
			r.settle()
			wantCompleted(t, inst.Result(), "DONE")
			ran := entries(history(t, inst), record.KindAgentRun)
			if len(ran) < 1 || ran[0].ErrorKind != "invalid_result" || !strings.Contains(ran[0].Error, "result.approval must be a string, got the number 1") {
				t.Fatalf("got runs %+v, want the first failed with kind invalid_result naming result.approval", ran)
			}
		})
	}
}

// A workflow that declares its input refuses a start that breaks it, before
// anything starts, naming the field.
func ExampleInputError() {
	w, err := rules.Parse("orders.yaml", []byte(`workflow: orders
initial: PACKING
input: {order_id: string, amount: number}
agents: {packer: {}}
states:
  PACKING: {agent: packer}
  DONE: {terminal: true}
rules:
  - {id: packed, from: packer, trigger: packed, next: DONE}
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	reg, _ := engine.NewRegistry(w, nil)
	eng, _ := newEngine(w, reg)
	defer eng.Close()
	_, err = eng.Start(context.Background(), map[string]any{"order_id": "o-1", "amount": "12.50"})
	var ie *engine.InputError
	if errors.As(err, &ie) {
		fmt.Println(ie.Field, ie.Reason)
	}
	// Output: input.amount must be a number, got the string "12.50"
}

// BenchmarkEngineRefundSimTyped is BenchmarkEngineRefundSim/discard with
// the refund workflow's input and every result declared: the cost of the
// checks per step (compare the two).
func BenchmarkEngineRefundSimTyped(b *testing.B) {
	src, err := os.ReadFile("../examples/refund/workflow.yaml")
	if err != nil {
		b.Fatal(err)
	}
	typed := strings.NewReplacer(
		"initial: VALIDATING\n", "initial: VALIDATING\ninput: {order_id: string, amount: number, reason: 'string?'}\n",
		"customer:     {type: support}", "customer:     {type: support, result: {refund_eligible: bool, order_id: string, reason: 'string?'}}",
		"seller:       {type: merchant, capabilities: [approve_refund]}", "seller:       {type: merchant, capabilities: [approve_refund], result: {approval: string, approver: 'string?', reason: 'string?', question: 'string?'}}",
		"payment:      {type: finance, capabilities: [refund], queue: 1000}", "payment:      {type: finance, capabilities: [refund], queue: 1000, result: {transaction_id: string}}",
	).Replace(string(src))
	w, err := rules.Parse("refund.yaml", []byte(typed))
	if err != nil {
		b.Fatal(err)
	}
	if w.Input == nil {
		b.Fatal("the declarations were not added")
	}
	reg, err := engine.NewRegistry(w, refundagents.Approved())
	if err != nil {
		b.Fatal(err)
	}
	sim := clock.NewSim(time.Unix(0, 0))
	eng, err := newEngine(w, reg, engine.WithClock(sim), engine.WithExecutor(sim), engine.WithStore(discardStore{}))
	if err != nil {
		b.Fatal(err)
	}
	defer eng.Close()
	runInstances(b, eng, sim, refundInput, 4, "COMPLETED")
}
