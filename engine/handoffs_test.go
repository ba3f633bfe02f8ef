package engine_test

import (
	"reflect"
	"slices"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/handoff"
	"github.com/batonhq/baton/registry"
	"github.com/batonhq/baton/transport"
	"github.com/batonhq/baton/wire"
)

// handoffRun is the refund of testdata/refund_handoffs.yaml with every agent external:
// the test takes each agent's work from the bus and reports for it.
type handoffRun struct {
	t    *testing.T
	eng  *engine.Engine
	logs *observer.ObservedLogs
	inst *engine.Instance
}

func newHandoffRun(t *testing.T, input map[string]any) *handoffRun {
	t.Helper()
	core, logs := observer.New(zap.DebugLevel)
	eng := poolEngine(t, "refund_handoffs.yaml", nil, engine.WithLogger(zap.New(core)))
	t.Cleanup(func() { _ = eng.Close() })
	inst, err := eng.Start(t.Context(), input)
	if err != nil {
		t.Fatal(err)
	}
	return &handoffRun{t: t, eng: eng, logs: logs, inst: inst}
}

// take returns the one piece of work waiting for agent, decoded.
func (h *handoffRun) take(agent string) (*transport.Message, *registry.Task) {
	h.t.Helper()
	msgs, err := h.eng.Transport().TakeWork(h.t.Context(), agent, 0)
	if err != nil || len(msgs) != 1 {
		h.t.Fatalf("work for %s: got %d messages (%v), want 1", agent, len(msgs), err)
	}
	task, err := wire.Decode(msgs[0])
	if err != nil {
		h.t.Fatal(err)
	}
	_ = h.eng.Transport().Ack(h.t.Context(), msgs[0])
	return msgs[0], task
}

// report answers task with trigger and result.
func (h *handoffRun) report(task *registry.Task, trigger string, result map[string]any) {
	h.t.Helper()
	rep := wire.ReportOf(task, registry.Outcome{Trigger: trigger, Result: result}, nil)
	if ans := h.eng.HandleReport(h.t.Context(), &rep); !ans.OK {
		h.t.Fatalf("report of %s step %d: %+v", task.Agent, task.Step, ans)
	}
}

var handoffInput = map[string]any{"order_id": "12345", "reason": "defective product", "amount": 50}

func TestHandoffBetweenAgents(t *testing.T) {
	h := newHandoffRun(t, handoffInput)
	_, first := h.take("customer")
	result := map[string]any{"order_id": "12345", "refund_eligible": true}
	h.report(first, "validated", result)

	m, task := h.take("seller")
	if m.Type != transport.MessageHandoff || m.From != "customer" || m.To != "seller" || m.Content[wire.KeyAction] != wire.ActionRun {
		t.Fatalf("got %s %s -> %s %v, want a HANDOFF run from customer to seller", m.Type, m.From, m.To, m.Content[wire.KeyAction])
	}
	for _, key := range []string{wire.KeyTask, wire.KeyContext, wire.KeyPreviousResult, wire.KeyConstraints} {
		if _, ok := m.Content[key]; !ok {
			t.Errorf("content has no %q: %v", key, m.Content)
		}
	}
	if task.Description != "Approve refund for order 12345" || !reflect.DeepEqual(task.PreviousResult, result) ||
		task.Kind != string(handoff.ReasonRule) || task.Reason != "Seller must approve the refund" {
		t.Errorf("got task %q previous %v reason %q/%q, want the rule's task, the customer's result, rule and its reason", task.Description, task.PreviousResult, task.Kind, task.Reason)
	}
	if task.WorkflowID != "refund_handoffs" || task.InstanceID != h.inst.ID() || task.Step != 2 ||
		task.IdempotencyKey != h.inst.ID()+":2" || task.HandoffID != task.IdempotencyKey {
		t.Errorf("got workflow %q instance %q step %d key %q hand-off %q, want step 2 of the instance, its key as the hand-off id",
			task.WorkflowID, task.InstanceID, task.Step, task.IdempotencyKey, task.HandoffID)
	}
	if m.Priority != transport.PriorityNormal {
		t.Errorf("got priority %s, want NORMAL", m.Priority)
	}
	recs := handoffHistory(t, h.eng, h.inst.ID())
	if len(recs) != 1 || recs[0].From != "customer" || recs[0].To != "seller" || recs[0].Status != handoff.StatusPending || recs[0].Step != 2 {
		t.Errorf("got records %+v, want customer -> seller pending at step 2", recs)
	}
}

func TestContextTransfer(t *testing.T) {
	h := newHandoffRun(t, handoffInput)
	_, task := h.take("customer")
	h.report(task, "validated", map[string]any{"order_id": "12345", "refund_eligible": true})
	_, task = h.take("seller")
	want := map[string]any{"order_id": "12345", "reason": "defective product", "amount": 50}
	if !reflect.DeepEqual(task.Context, want) {
		t.Errorf("seller got context %v, want %v", task.Context, want)
	}
	h.report(task, "reviewed", map[string]any{"approval": "APPROVED"})
	_, task = h.take("payment")
	want["approval"] = "APPROVED"
	if !reflect.DeepEqual(task.Context, want) || task.Description != "Refund order 12345" {
		t.Errorf("payment got context %v task %q, want %v and the order in its task", task.Context, task.Description, want)
	}
}

func TestSequentialChain(t *testing.T) {
	h := newHandoffRun(t, handoffInput)
	chain := []struct {
		agent, trigger string
		result         map[string]any
	}{
		{"customer", "validated", map[string]any{"order_id": "12345", "refund_eligible": true}},
		{"seller", "reviewed", map[string]any{"approval": "APPROVED"}},
		{"payment", "refunded", map[string]any{"transaction_id": "tx-1"}},
		{"notification", "sent", nil},
	}
	var previous map[string]any
	for k, c := range chain {
		_, task := h.take(c.agent)
		if task.Step != k+1 {
			t.Errorf("%s: got step %d, want %d", c.agent, task.Step, k+1)
		}
		if k > 0 && !reflect.DeepEqual(task.PreviousResult, previous) {
			t.Errorf("%s: got previous result %v, want %v", c.agent, task.PreviousResult, previous)
		}
		h.report(task, c.trigger, c.result)
		previous = c.result
		if previous == nil {
			previous = map[string]any{}
		}
	}
	res := h.inst.Result()
	wantCompleted(t, res, "COMPLETED")
	var pairs []string
	for _, r := range handoffHistory(t, h.eng, h.inst.ID()) {
		pairs = append(pairs, r.From+"->"+r.To+":"+string(r.Status))
	}
	want := []string{"customer->seller:accepted", "seller->payment:accepted", "payment->notification:accepted"}
	if !slices.Equal(pairs, want) {
		t.Errorf("got hand-offs %v, want %v", pairs, want)
	}
}

func TestConditionalHandoff(t *testing.T) {
	for _, tt := range []struct {
		name     string
		eligible bool
		want     string // the agent that receives the next piece of work
		outcome  string
	}{
		{"eligible goes to the seller", true, "seller", ""},
		{"ineligible notifies and ends rejected", false, "notification", "REJECTED"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHandoffRun(t, handoffInput)
			_, task := h.take("customer")
			h.report(task, "validated", map[string]any{"order_id": "12345", "refund_eligible": tt.eligible})
			_, next := h.take(tt.want)
			if next.From != "customer" {
				t.Errorf("got work from %q, want customer's hand-off", next.From)
			}
			if tt.outcome != "" {
				wantCompleted(t, h.inst.Result(), tt.outcome)
				if !next.Notice {
					t.Errorf("got a run for %s, want a final notice", tt.want)
				}
			}
		})
	}
}

func TestHandoffLogging(t *testing.T) {
	h := newHandoffRun(t, handoffInput)
	_, task := h.take("customer")
	h.report(task, "validated", map[string]any{"order_id": "12345", "refund_eligible": true})
	entries := h.logs.FilterMessage("handoff").All()
	if len(entries) != 1 || entries[0].Level != zap.DebugLevel {
		t.Fatalf("got %d hand-off log lines (%v), want 1 at debug: one per step would flood an info log", len(entries), entries)
	}
	got := entries[0].ContextMap()
	want := map[string]any{
		"category": "handoff", "from_agent": "customer", "to_agent": "seller", "workflow_id": "refund_handoffs",
		"instance_id": h.inst.ID(), "step_number": int64(2), "task_description": "Approve refund for order 12345",
		"reason": "rule", "handoff_id": h.inst.ID() + ":2",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("log field %s: got %v, want %v", k, got[k], v)
		}
	}
	if kb, ok := got["context_size_kb"].(float64); !ok || kb <= 0 {
		t.Errorf("got context_size_kb %v, want the context's size", got["context_size_kb"])
	}
}

func TestHandoffWithConstraints(t *testing.T) {
	h := newHandoffRun(t, handoffInput)
	_, task := h.take("customer")
	h.report(task, "validated", map[string]any{"order_id": "12345", "refund_eligible": true})
	_, task = h.take("seller")
	want := map[string]any{"refund_method": "original_payment", "processing_time": "within_3_days"}
	if !reflect.DeepEqual(task.Constraints, want) {
		t.Errorf("got constraints %v, want %v", task.Constraints, want)
	}
}
