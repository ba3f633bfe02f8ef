package handoff_test

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"

	"go.uber.org/zap/zaptest/observer"

	"github.com/batonhq/baton/bus"
	"github.com/batonhq/baton/handoff"
	"github.com/batonhq/baton/registry"
)

// rf009Agents is RF-009's cast, with the seed's agent names.
func rf009Agents() []registry.Agent {
	return []registry.Agent{
		{ID: "CustomerAgent", Type: "support"},
		{ID: "SellerAgent", Type: "merchant"},
		{ID: "PaymentAgent", Type: "finance"},
		{ID: "NotificationAgent", Type: "messaging"},
		{ID: "FlightAgent", Type: "booking"},
	}
}

// handoffLog returns the one "handoff" log entry, failing otherwise.
func handoffLog(t *testing.T, logs *observer.ObservedLogs) map[string]any {
	t.Helper()
	entries := logs.FilterMessage("handoff").All()
	if len(entries) != 1 {
		t.Fatalf("got %d handoff log entries, want 1", len(entries))
	}
	if entries[0].Time.IsZero() {
		t.Errorf("log entry has no timestamp")
	}
	return entries[0].ContextMap()
}

func TestRF009_Scenario07_HandoffBetweenAgents(t *testing.T) {
	e := newEnvWith(t, rf009Agents())
	result := map[string]any{"order_id": "12345", "refund_eligible": true}
	ctx := map[string]any{"order_id": "12345", "reason": "defective product", "amount": 50}
	rec, err := e.mgr.Handoff(t.Context(), handoff.Command{
		From: "CustomerAgent", To: "SellerAgent", Reason: handoff.ReasonRule,
		Task: "Approve refund for order 12345", Context: ctx, PreviousResult: result,
		WorkflowID: "refund", InstanceID: "wf_refund_123", Step: 2, IdempotencyKey: "wf_refund_123:2",
	})
	if err != nil {
		t.Fatal(err)
	}
	m := e.take(t, "SellerAgent")
	if m.Type != bus.MessageHandoff || m.From != "CustomerAgent" || m.To != "SellerAgent" || m.Action() != "handoff" {
		t.Fatalf("message = %s %s -> %s %q, want a HANDOFF from CustomerAgent to SellerAgent", m.Type, m.From, m.To, m.Action())
	}
	for _, key := range []string{"task_description", "context", "previous_result", "constraints"} {
		if _, ok := m.Content[key]; !ok {
			t.Errorf("content has no %q (RT-011 required field): %v", key, m.Content)
		}
	}
	if m.Content["task_description"] != "Approve refund for order 12345" ||
		!reflect.DeepEqual(m.Content["context"], ctx) || !reflect.DeepEqual(m.Content["previous_result"], result) ||
		!reflect.DeepEqual(m.Content["constraints"], map[string]any{}) {
		t.Errorf("content = %v, want the command's task, context, result and empty constraints", m.Content)
	}
	want := map[string]any{"handoff_id": rec.ID, "workflow_id": "refund", "instance_id": "wf_refund_123", "step": 2, "idempotency_key": "wf_refund_123:2"}
	if !reflect.DeepEqual(m.Metadata, want) {
		t.Errorf("metadata = %v, want %v", m.Metadata, want)
	}
	if m.MessageID != rec.MessageID || m.Priority != bus.PriorityNormal {
		t.Errorf("message id %q priority %s, want %q NORMAL", m.MessageID, m.Priority, rec.MessageID)
	}
	if got := handoffLog(t, e.logs); got["step_number"] != int64(2) || got["from_agent"] != "CustomerAgent" {
		t.Errorf("log = %v, want step 2 from CustomerAgent", got)
	}
}

// fiveKB returns RF-009 scenario 8's context, padded to exactly 5 KB of JSON.
func fiveKB(t *testing.T) map[string]any {
	t.Helper()
	ctx := map[string]any{
		"user_preferences": map[string]any{"prefer_morning": true},
		"travel_dates":     map[string]any{"departure": "Dec 15", "return": "Dec 20"},
		"selected_flight":  map[string]any{"name": "Flight A", "notes": ""},
	}
	b, _ := json.Marshal(ctx)
	ctx["selected_flight"].(map[string]any)["notes"] = strings.Repeat("n", 5*1024-len(b))
	if b, _ = json.Marshal(ctx); len(b) != 5*1024 {
		t.Fatalf("context is %d bytes, want 5120", len(b))
	}
	return ctx
}

func TestRF009_Scenario08_ContextTransfer(t *testing.T) {
	e := newEnvWith(t, rf009Agents())
	ctx := fiveKB(t)
	rec, err := e.mgr.Handoff(t.Context(), handoff.Command{From: "FlightAgent", To: "PaymentAgent",
		Reason: handoff.ReasonRule, Task: "charge Flight A", Context: ctx, WorkflowID: "trip", InstanceID: "i8", Step: 2})
	if err != nil {
		t.Fatal(err)
	}
	if rec.ContextBytes != 5120 || rec.ContextKB() != 5 {
		t.Errorf("record context size %d bytes (%v KB), want 5120 (5 KB)", rec.ContextBytes, rec.ContextKB())
	}
	// Over the wire: encode the message as JSON and read it back, as a
	// remote PaymentAgent would.
	wire, err := json.Marshal(e.take(t, "PaymentAgent"))
	if err != nil {
		t.Fatal(err)
	}
	var m bus.Message
	if err := json.Unmarshal(wire, &m); err != nil {
		t.Fatal(err)
	}
	d, err := handoff.Unpack(&m)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Task.Context) != 3 || !reflect.DeepEqual(d.Task.Context, ctx) {
		t.Errorf("received context differs from the 5 KB sent")
	}
	if d.Task.Context["user_preferences"].(map[string]any)["prefer_morning"] != true {
		t.Errorf("PaymentAgent cannot read user_preferences.prefer_morning")
	}
	if d.Task.Step != 2 || d.Task.InstanceID != "i8" {
		t.Errorf("step %d instance %q after the round trip, want 2 and i8", d.Task.Step, d.Task.InstanceID)
	}
	if got := handoffLog(t, e.logs)["context_size_kb"]; got != 5.0 {
		t.Errorf("logged context_size_kb = %v, want 5", got)
	}
}

func TestRF009_Scenario09_SequentialChain(t *testing.T) {
	e := newEnvWith(t, rf009Agents())
	chain := []string{"CustomerAgent", "SellerAgent", "PaymentAgent", "NotificationAgent"}
	results := map[string]map[string]any{
		"CustomerAgent":     {"order_id": "12345", "refund_eligible": true},
		"SellerAgent":       {"approval": "APPROVED"},
		"PaymentAgent":      {"transaction_id": "tx-1"},
		"NotificationAgent": {"sent": true},
	}
	handler := func(agent string) registry.Handler {
		return registry.HandlerFunc(func(_ context.Context, _ *registry.Task) (registry.Outcome, error) {
			return registry.Outcome{Trigger: "done", Result: results[agent]}, nil
		})
	}
	for _, a := range chain {
		if err := e.reg.SetHandler(a, handler(a)); err != nil {
			t.Fatal(err)
		}
	}
	var (
		mu   sync.Mutex
		seen = map[string]map[string]any{}
		wg   sync.WaitGroup
	)
	for i, agent := range chain[1:] {
		next := ""
		if i+2 < len(chain) {
			next = chain[i+2]
		}
		wg.Go(func() {
			m, err := e.bus.ReceiveWait(t.Context(), agent)
			if err != nil {
				t.Errorf("%s: %v", agent, err)
				return
			}
			d, err := handoff.Unpack(m)
			if err == nil {
				err = e.mgr.Accept(t.Context(), d.HandoffID)
			}
			if err != nil {
				t.Errorf("%s: %v", agent, err)
				return
			}
			mu.Lock()
			seen[agent] = d.Task.PreviousResult
			mu.Unlock()
			a, _ := e.reg.Get(agent)
			out, _ := a.Handler.Handle(t.Context(), &d.Task)
			if next == "" {
				return
			}
			if _, err := e.mgr.Handoff(t.Context(), handoff.Command{From: agent, To: next, Reason: handoff.ReasonRule,
				Task: "continue the refund", Context: d.Task.Context, PreviousResult: out.Result,
				WorkflowID: d.Task.WorkflowID, InstanceID: d.Task.InstanceID, Step: d.Task.Step + 1}); err != nil {
				t.Errorf("%s: %v", agent, err)
			}
		})
	}
	first, _ := e.reg.Get("CustomerAgent")
	out, _ := first.Handler.Handle(t.Context(), &registry.Task{})
	if _, err := e.mgr.Handoff(t.Context(), handoff.Command{From: "CustomerAgent", To: "SellerAgent", Reason: handoff.ReasonRule,
		Task: "Approve refund for order 12345", Context: map[string]any{"order_id": "12345"}, PreviousResult: out.Result,
		WorkflowID: "refund", InstanceID: "chain", Step: 2}); err != nil {
		t.Fatal(err)
	}
	wg.Wait()

	for i, agent := range chain[1:] {
		if !reflect.DeepEqual(seen[agent], results[chain[i]]) {
			t.Errorf("%s got previous_result %v, want %s's %v", agent, seen[agent], chain[i], results[chain[i]])
		}
	}
	var got []string
	for _, r := range e.mgr.History("chain") {
		got = append(got, fmt.Sprintf("%s->%s@%d:%s", r.From, r.To, r.Step, r.Status))
	}
	want := []string{"CustomerAgent->SellerAgent@2:accepted", "SellerAgent->PaymentAgent@3:accepted", "PaymentAgent->NotificationAgent@4:accepted"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("history = %v, want %v", got, want)
	}
	if s := e.mgr.Stats(); s.Total != 3 || s.Accepted != 3 || s.Pending != 0 {
		t.Errorf("Stats() = %+v, want 3 sent and accepted", s)
	}
}

func TestRF009_Scenario10_ConditionalHandoff(t *testing.T) {
	tests := []struct {
		approval, want, not string
	}{
		{"APPROVED", "PaymentAgent", "NotificationAgent"},
		{"REJECTED", "NotificationAgent", "PaymentAgent"},
	}
	for _, tt := range tests {
		t.Run(tt.approval, func(t *testing.T) {
			e := newEnvWith(t, rf009Agents())
			// The seller's decision, as its handler would make it.
			to, why := "NotificationAgent", "approval_result != APPROVED: send the rejection email"
			if tt.approval == "APPROVED" {
				to, why = "PaymentAgent", "approval_result == APPROVED: refund the payment"
			}
			if _, err := e.mgr.Handoff(t.Context(), handoff.Command{From: "SellerAgent", To: to, Reason: handoff.ReasonRule,
				Explanation: why, Task: "handle " + tt.approval + " refund",
				PreviousResult: map[string]any{"approval_result": tt.approval}, WorkflowID: "refund", InstanceID: "c", Step: 3}); err != nil {
				t.Fatal(err)
			}
			d := e.takeHandoff(t, tt.want)
			if d.Task.PreviousResult["approval_result"] != tt.approval {
				t.Errorf("%s got %v, want the seller's %s", tt.want, d.Task.PreviousResult, tt.approval)
			}
			e.empty(t, tt.not)
			if got := handoffLog(t, e.logs); got["to_agent"] != tt.want || got["explanation"] != why {
				t.Errorf("log = %v, want the hand-off to %s with its condition", got, tt.want)
			}
		})
	}
}

func TestRF009_Scenario16_HandoffLogging(t *testing.T) {
	e := newEnvWith(t, rf009Agents())
	ctx := map[string]any{"order_id": "12345", "amount": 50}
	if _, err := e.mgr.Handoff(t.Context(), handoff.Command{From: "CustomerAgent", To: "SellerAgent",
		Reason: handoff.ReasonRule, Task: "Approve refund", Context: ctx,
		WorkflowID: "wf_refund_123", InstanceID: "inst-16", Step: 2}); err != nil {
		t.Fatal(err)
	}
	got := handoffLog(t, e.logs)
	b, _ := json.Marshal(ctx)
	want := map[string]any{
		"category":         "handoff",
		"from_agent":       "CustomerAgent",
		"to_agent":         "SellerAgent",
		"workflow_id":      "wf_refund_123",
		"instance_id":      "inst-16",
		"step_number":      int64(2),
		"task_description": "Approve refund",
		"context_size_kb":  float64(len(b)) / 1024,
		"reason":           "rule",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("log field %s = %#v, want %#v", k, got[k], v)
		}
	}
	if id, _ := got["handoff_id"].(string); id == "" {
		t.Errorf("log has no handoff_id: %v", got)
	}
}

func TestRF009_Scenario19_HandoffWithConstraints(t *testing.T) {
	e := newEnvWith(t, rf009Agents())
	constraints := map[string]any{"refund_method": "original_payment", "processing_time": "within_3_days"}
	rec, err := e.mgr.Handoff(t.Context(), handoff.Command{From: "SellerAgent", To: "PaymentAgent", Reason: handoff.ReasonRule,
		Task: "Refund order 12345", Constraints: constraints, InstanceID: "i19", Step: 3})
	if err != nil {
		t.Fatal(err)
	}
	d := e.takeHandoff(t, "PaymentAgent")
	if !reflect.DeepEqual(d.Task.Constraints, constraints) {
		t.Errorf("PaymentAgent got constraints %v, want %v", d.Task.Constraints, constraints)
	}
	if !reflect.DeepEqual(rec.Constraints, constraints) {
		t.Errorf("record constraints %v, want %v", rec.Constraints, constraints)
	}
	if got := handoffLog(t, e.logs)["constraints"]; !reflect.DeepEqual(got, constraints) {
		t.Errorf("logged constraints %v, want %v", got, constraints)
	}
}
