package engine_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/batonhq/baton/bus"
	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/record"
	"github.com/batonhq/baton/registry"
	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/transport"
)

// refundApproved are deterministic no-op agents that drive the refund
// workflow down its approved path. They check what they are handed, so a
// mixed-up context between instances fails the test.
func refundApproved(t *testing.T, runs *atomic.Int64) map[string]registry.Handler {
	check := func(task *registry.Task, key string) {
		if got, want := task.Context[key], task.Input["order_id"]; key != "" && got != want {
			t.Errorf("instance %s step %d: got context %s %v, want %v", task.InstanceID, task.Step, key, got, want)
		}
	}
	h := func(trigger string, key string, result func(*registry.Task) map[string]any) registry.Handler {
		return registry.HandlerFunc(func(_ context.Context, task *registry.Task) (registry.Outcome, error) {
			runs.Add(1)
			check(task, key)
			return registry.Outcome{Trigger: trigger, Result: result(task)}, nil
		})
	}
	return map[string]registry.Handler{
		"customer": h("validated", "", func(task *registry.Task) map[string]any {
			return map[string]any{"refund_eligible": true, "order_id": task.Input["order_id"]}
		}),
		"seller": h("reviewed", "order_id", func(*registry.Task) map[string]any {
			return map[string]any{"approval": "APPROVED"}
		}),
		"payment": h("refunded", "order_id", func(task *registry.Task) map[string]any {
			return map[string]any{"transaction_id": "tx-" + task.Context["order_id"].(string)}
		}),
		"notification": h("sent", "order_id", func(*registry.Task) map[string]any { return nil }),
	}
}

func TestEngine_Concurrency_TenThousandRefunds(t *testing.T) {
	defer goleak.VerifyNone(t)
	const n = 10_000
	w, err := rules.Load(filepath.Join("..", "examples", "refund", "workflow.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	// The run timeouts (10s and 30s) count a run's wait in its agent's
	// queue: 10 000 runs queued at once on a loaded machine under -race
	// could pass them and be retried. This test is about concurrency, not
	// timeouts: it runs without them.
	for _, st := range w.States {
		st.Timeout = 0
	}
	var runs atomic.Int64
	// Every instance starts at once: each Go agent's in-process mailbox
	// must hold all of their work (the default is 1000 per agent).
	reg := registry.New()
	handlers := refundApproved(t, &runs)
	for _, a := range w.Agents {
		ag := engine.AgentOf(a, handlers[a.ID])
		ag.Queue = n
		if err := reg.Add(ag); err != nil {
			t.Fatal(err)
		}
	}
	// Every instance starts at once: the customer's mailbox must hold all
	// of their first hand-offs (the bus defaults are 1000 per agent).
	b := bus.New(bus.WithCapacity(4*n), bus.WithDefaultMailboxCapacity(n), bus.WithAckMessages(false))
	for _, a := range w.Agents {
		if err := b.Register(a.ID, bus.WithAgentType(a.Type), bus.WithMailboxCapacity(n)); err != nil {
			t.Fatal(err)
		}
	}
	var completed atomic.Int64
	eng, err := newEngine(w, reg, engine.WithTransport(b), engine.WithObserver(func(e engine.Event) {
		if e.Type == engine.EventCompleted {
			completed.Add(1)
		}
	}))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()

	insts := make([]*engine.Instance, n)
	var wg sync.WaitGroup
	const starters = 8
	for s := range starters {
		wg.Go(func() {
			for k := s; k < n; k += starters {
				inst, err := eng.Start(ctx, map[string]any{"order_id": fmt.Sprintf("order-%d", k), "amount": k % 500})
				if err != nil {
					t.Errorf("Start %d: %v", k, err)
					return
				}
				insts[k] = inst
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	ids := make(map[string]bool, n)
	for k, inst := range insts {
		res, err := inst.Wait(ctx)
		if err != nil {
			t.Fatalf("instance %d: Wait: %v (state %s)", k, err, res.State)
		}
		if res.Status != record.StatusCompleted || res.Outcome != "COMPLETED" || res.Steps != 4 {
			t.Fatalf("instance %d: got %s %q after %d steps (%v), want completed COMPLETED after 4", k, res.Status, res.Outcome, res.Steps, res.Err)
		}
		if want := fmt.Sprintf("tx-order-%d", k); res.Context["transaction_id"] != want {
			t.Fatalf("instance %d: got transaction %v, want %s", k, res.Context["transaction_id"], want)
		}
		ids[res.ID] = true
	}
	if len(ids) != n {
		t.Errorf("got %d distinct instance ids, want %d", len(ids), n)
	}
	if got := runs.Load(); got != 4*n {
		t.Errorf("got %d agent runs, want %d", got, 4*n)
	}
	if got := completed.Load(); got != n {
		t.Errorf("got %d completed events, want %d", got, n)
	}
	snaps, err := eng.Store().Instances(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(snaps) != n || !slices.IsSortedFunc(snaps, func(a, b record.Snapshot) int {
		if a.ID < b.ID {
			return -1
		}
		return 1
	}) {
		t.Errorf("got %d stored instances, want %d sorted by id", len(snaps), n)
	}
	if err := eng.Close(); err != nil {
		t.Fatal(err)
	}
	// The bus was given with WithBus: the engine's Close leaves it open.
	note := &transport.Message{Type: transport.MessageNotification, From: "customer", To: "seller", Content: map[string]any{"action": "ping"}}
	if err := b.Send(ctx, note); err != nil {
		t.Errorf("Send on the caller's bus after the engine's Close: got %v, want nil", err)
	}
	if msgs, err := b.Receive("seller", 0); err != nil || len(msgs) != 1 {
		t.Errorf("Receive: got %d messages (%v), want the one sent", len(msgs), err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if m := b.Metrics(); !m.Balanced() || m.Queued != 0 {
		t.Errorf("got bus accepted %d delivered %d dead-lettered %d queued %d, want balanced and empty", m.Accepted, m.Delivered, m.DeadLettered, m.Queued)
	}
}
