package bus_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/zap"

	"github.com/batonhq/baton/bus"
	"github.com/batonhq/baton/transport"
)

// Scenarios about hand-offs carried by the bus: HANDOFF messages with
// their context, constraints and previous results, chains, branches, the
// hand-off log entry, and selective broadcast.

// handoff builds a HANDOFF message with the content fields a hand-off carries.
func handoff(from, to, task string, ctx map[string]any, previous any, constraints map[string]any) *transport.Message {
	if constraints == nil {
		constraints = map[string]any{}
	}
	return &transport.Message{
		Type: transport.MessageHandoff, From: from, To: to,
		Content: map[string]any{
			"action":           "execute_handoff",
			"task_description": task,
			"context":          ctx,
			"previous_result":  previous,
			"constraints":      constraints,
		},
	}
}

// viaJSON returns m after a JSON round trip, as a remote transport would
// deliver it.
func viaJSON(t *testing.T, m *transport.Message) *transport.Message {
	t.Helper()
	data, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	var out transport.Message
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	return &out
}

func TestHandoffBetweenAgents(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBus(t, []string{"CustomerAgent", "SellerAgent"})
		result := map[string]any{"order_id": "12345", "refund_eligible": true}
		ctx := map[string]any{"order_id": "12345", "reason": "defective product", "amount": 50.0}
		m := handoff("CustomerAgent", "SellerAgent", "Approve refund for order 12345", ctx, result, nil)
		m.Metadata = map[string]any{"workflow_id": "wf_refund_123", "handoff_step": 2.0}
		mustSend(t, b, m)
		time.Sleep(15 * time.Millisecond)
		got := receiveAll(t, b, "SellerAgent")
		if len(got) != 1 || got[0].Type != transport.MessageHandoff {
			t.Fatalf("got %v, want one HANDOFF", got)
		}
		for _, f := range []string{"task_description", "context", "previous_result", "constraints"} {
			if _, ok := got[0].Content[f]; !ok {
				t.Errorf("got content %v, want field %s", got[0].Content, f)
			}
		}
		if got[0].Metadata["handoff_step"] != 2.0 {
			t.Errorf("got metadata %v, want handoff_step 2", got[0].Metadata)
		}
		s := assertBalanced(t, b)
		if s.Handoffs != 1 || s.Handoff.Count != 1 || s.Handoff.P95 < 15*time.Millisecond || s.Handoff.P95 >= 200*time.Millisecond {
			t.Errorf("got hand-offs %d latency %+v, want 1 of about 15ms (under 200ms)", s.Handoffs, s.Handoff)
		}
	})
}

func TestHandoffWithContextTransfer(t *testing.T) {
	b := newBus(t, []string{"FlightAgent", "PaymentAgent"})
	ctx := map[string]any{
		"user_preferences": map[string]any{"prefer_morning": true, "notes": strings.Repeat("n", 4900)},
		"travel_dates":     map[string]any{"departure": "Dec 15", "return": "Dec 20"},
		"selected_flight":  "Flight A",
	}
	raw, _ := json.Marshal(ctx)
	if kb := len(raw) / 1024; kb != 4 && kb != 5 {
		t.Fatalf("got a context of %d bytes, want about 5 KB", len(raw))
	}
	mustSend(t, b, handoff("FlightAgent", "PaymentAgent", "Charge the booking", ctx, nil, nil))
	got := receiveAll(t, b, "PaymentAgent")
	if len(got) != 1 {
		t.Fatalf("got %d messages, want 1", len(got))
	}
	for _, m := range []*transport.Message{got[0], viaJSON(t, got[0])} {
		recv := m.Content["context"].(map[string]any)
		if len(recv) != 3 || !reflect.DeepEqual(recv, ctx) {
			t.Errorf("got context %v, want all 3 fields intact", recv)
		}
		if recv["user_preferences"].(map[string]any)["prefer_morning"] != true {
			t.Errorf("got %v, want user_preferences.prefer_morning true", recv["user_preferences"])
		}
	}
}

func TestSequentialHandoffChain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		chain := []string{"CustomerAgent", "SellerAgent", "PaymentAgent", "NotificationAgent"}
		b := newBus(t, chain)
		mustSend(t, b, handoff("Orchestrator", chain[0], "Validate refund", map[string]any{"order_id": "12345"}, nil, nil))
		var previous any
		for i, agent := range chain {
			time.Sleep(50 * time.Millisecond) // the agent is busy before it picks up its hand-off
			m, err := b.ReceiveWait(t.Context(), agent)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(m.Content["previous_result"], previous) {
				t.Errorf("%s got previous_result %v, want %v", agent, m.Content["previous_result"], previous)
			}
			result := map[string]any{"step": float64(i + 1), "by": agent}
			if i+1 < len(chain) {
				mustSend(t, b, handoff(agent, chain[i+1], "next step", m.Content["context"].(map[string]any), result, nil))
			}
			previous = result
		}
		s := assertBalanced(t, b)
		if s.Handoffs != 4 || s.Handoff.Count != 4 || s.Handoff.Sum != 4*50*time.Millisecond || s.Handoff.P95 >= 200*time.Millisecond {
			t.Errorf("got hand-offs %d latency %+v, want 4 of 50ms each (600ms budget for the 3 agent hand-offs)", s.Handoffs, s.Handoff)
		}
	})
}

func TestConditionalHandoff(t *testing.T) {
	for _, tc := range []struct{ approval, want, not string }{
		{"APPROVED", "PaymentAgent", "NotificationAgent"},
		{"REJECTED", "NotificationAgent", "PaymentAgent"},
	} {
		t.Run(tc.approval, func(t *testing.T) {
			log, logs := observed()
			b := newBus(t, []string{"SellerAgent", "PaymentAgent", "NotificationAgent"}, bus.WithLogger(log))
			next := "NotificationAgent"
			if tc.approval == "APPROVED" {
				next = "PaymentAgent"
			}
			mustSend(t, b, handoff("SellerAgent", next, "continue refund", map[string]any{"approval_result": tc.approval}, tc.approval, nil))
			if got := receiveAll(t, b, tc.want); len(got) != 1 || got[0].Content["previous_result"] != tc.approval {
				t.Errorf("%s got %v, want the hand-off", tc.want, got)
			}
			if got := receiveAll(t, b, tc.not); len(got) != 0 {
				t.Errorf("%s got %d messages, want none", tc.not, len(got))
			}
			sent := logs.FilterField(zap.String("category", "handoff")).All()
			if len(sent) != 1 || fieldsOf(sent[0])["to"] != tc.want {
				t.Errorf("got hand-off logs %v, want one to %s", sent, tc.want)
			}
		})
	}
}

func TestHandoffLogging(t *testing.T) {
	log, logs := observed()
	b := newBus(t, []string{"CustomerAgent", "SellerAgent"}, bus.WithLogger(log))
	m := handoff("CustomerAgent", "SellerAgent", "Approve refund", map[string]any{"order_id": "12345"}, nil, nil)
	m.Metadata = map[string]any{"workflow_id": "wf_refund_123", "step_number": 2}
	mustSend(t, b, m)
	entries := logs.FilterMessage("message sent").All()
	if len(entries) != 1 {
		t.Fatalf("got %d send log entries, want 1", len(entries))
	}
	f := fieldsOf(entries[0])
	want := map[string]any{"category": "handoff", "from": "CustomerAgent", "to": "SellerAgent", "message_id": m.MessageID, "type": "HANDOFF"}
	for k, v := range want {
		if f[k] != v {
			t.Errorf("got %s=%v, want %v", k, f[k], v)
		}
	}
	if _, ok := f["latency"]; !ok {
		t.Errorf("got fields %v, want a latency", f)
	}
}

func TestHandoffWithConstraints(t *testing.T) {
	b := newBus(t, []string{"SellerAgent", "PaymentAgent"})
	constraints := map[string]any{"refund_method": "original_payment", "processing_time": "within_3_days"}
	mustSend(t, b, handoff("SellerAgent", "PaymentAgent", "Refund", map[string]any{}, "APPROVED", constraints))
	got := receiveAll(t, b, "PaymentAgent")
	if len(got) != 1 {
		t.Fatalf("got %d messages, want 1", len(got))
	}
	for _, m := range []*transport.Message{got[0], viaJSON(t, got[0])} {
		if !reflect.DeepEqual(m.Content["constraints"], constraints) {
			t.Errorf("got constraints %v, want %v", m.Content["constraints"], constraints)
		}
	}
}
