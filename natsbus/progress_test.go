package natsbus_test

import (
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/registry"
)

// Progress and usage travel in reports over NATS like any report: an agent
// with nothing but a NATS client sends progress while it works, then its
// outcome with the run's usage.
func TestReports_ProgressAndUsageOverNATS_CheckedAndApplied(t *testing.T) {
	ns := startServer(t, false)
	var (
		mu   sync.Mutex
		told []registry.Progress
	)
	re := newRefundEngine(t, connect(t, ns), memStorage,
		engine.WithObserver(func(ev engine.Event) {
			if ev.Type == engine.EventAgentProgress {
				mu.Lock()
				told = append(told, *ev.Progress)
				mu.Unlock()
			}
		}))
	ctx, inst := startInstance(t, re.eng, refundInput)
	nc := connect(t, ns)
	var msg = nextWork(nc, "BATON_WORK_customer")
	for msg == nil && ctx.Err() == nil {
		time.Sleep(5 * time.Millisecond)
		msg = nextWork(nc, "BATON_WORK_customer")
	}
	if msg == nil {
		t.Fatal("no work for customer")
	}
	var w plainWork
	if err := json.Unmarshal(msg.Data, &w); err != nil {
		t.Fatal(err)
	}
	ask := func(report map[string]any) (ok bool, code string) {
		t.Helper()
		report["instance_id"], report["step"], report["agent"] = w.Metadata["instance_id"], w.Metadata["step"], "customer"
		body, _ := json.Marshal(report)
		answer, err := nc.Request("baton.reports", body, 10*time.Second)
		if err != nil {
			t.Fatalf("request: %v", err)
		}
		var ans struct {
			OK   bool   `json:"ok"`
			Code string `json:"code"`
		}
		if err := json.Unmarshal(answer.Data, &ans); err != nil {
			t.Fatalf("answer %s: %v", answer.Data, err)
		}
		return ans.OK, ans.Code
	}
	if ok, code := ask(map[string]any{"progress": map[string]any{"message": "checking the order", "delta": "Order "}}); !ok {
		t.Fatalf("progress: got %s, want ok", code)
	}
	if got := inst.Progress(); len(got) != 1 || got[0].Progress.Delta != "Order " {
		t.Errorf("got progress %+v, want the run's latest", got)
	}
	if ok, code := ask(map[string]any{"progress": map[string]any{}, "trigger": "validated"}); ok || code != "invalid" {
		t.Errorf("progress with a trigger: got ok %v code %q, want invalid", ok, code)
	}
	if ok, code := ask(map[string]any{"trigger": "validated", "result": map[string]any{"refund_eligible": false, "order_id": "1"}, "usage": map[string]any{"input_tokens": -3}}); ok || code != "invalid" {
		t.Errorf("negative usage: got ok %v code %q, want invalid", ok, code)
	}
	if ok, code := ask(map[string]any{"trigger": "validated", "result": map[string]any{"refund_eligible": false, "order_id": "1"}, "usage": map[string]any{"input_tokens": 1200, "output_tokens": 300, "cost": 0.02, "model": "m"}}); !ok {
		t.Fatalf("report: got %s, want ok", code)
	}
	if ok, code := ask(map[string]any{"progress": map[string]any{"message": "late"}}); ok || code != "stale" {
		t.Errorf("progress after the run ended: got ok %v code %q, want stale", ok, code)
	}
	if got := inst.Result().Usage; got.Tokens != 1500 || got.Cost != 0.02 || got.Agents.Of("customer").InputTokens != 1200 {
		t.Errorf("got usage %+v, want the customer's 1500 tokens and 0.02", got)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(told) != 1 || told[0].Message != "checking the order" {
		t.Errorf("got agent_progress %+v, want the one accepted", told)
	}
}
