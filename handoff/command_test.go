package handoff_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/batonhq/baton/handoff"
	"github.com/batonhq/baton/registry"
)

func TestPRD040_CreatesValidCommand(t *testing.T) {
	payload := map[string]any{"search_query": "refund policy", handoff.CapabilityKey: "rag_search"}
	cmd, err := handoff.NewCommand("seller", "rag", handoff.ReasonCapabilityMatch,
		"query requires document search which the seller cannot perform",
		handoff.WithPayload(payload),
		handoff.WithTask("find the refund policy"),
		handoff.WithReturnControl(),
		handoff.WithPriority(handoff.PriorityHigh),
		handoff.WithInstance("refund", "inst-1", 3),
		handoff.WithCommandTimeout(time.Minute),
	)
	if err != nil {
		t.Fatalf("NewCommand: %v", err)
	}
	want := handoff.Command{
		From: "seller", To: "rag", Reason: handoff.ReasonCapabilityMatch,
		Explanation: "query requires document search which the seller cannot perform",
		Task:        "find the refund policy", Payload: payload, ReturnControl: true,
		Priority: 2, WorkflowID: "refund", InstanceID: "inst-1", Step: 3,
		IdempotencyKey: "inst-1:3", Timeout: time.Minute,
	}
	if !reflect.DeepEqual(cmd, want) {
		t.Errorf("got %+v, want %+v", cmd, want)
	}
	if got := cmd.RequiredCapability(); got != "rag_search" {
		t.Errorf("RequiredCapability() = %q, want rag_search (from the payload)", got)
	}
	if !handoff.IsCommand(cmd) {
		t.Errorf("IsCommand(NewCommand(...)) = false, want true")
	}
}

func TestNewCommand_Defaults(t *testing.T) {
	cmd := mustCommand(t, "a", "b", handoff.ReasonClarification)
	if cmd.ReturnControl || cmd.Priority != 0 || cmd.Payload != nil || cmd.IdempotencyKey != "" {
		t.Errorf("got %+v, want no return control, default priority, no payload, no key", cmd)
	}
	if got := cmd.ToRecord("x", time.Now()).Priority; got != handoff.PriorityNormal {
		t.Errorf("default priority rank = %d, want %d", got, handoff.PriorityNormal)
	}
	cmd = mustCommand(t, "a", "b", handoff.ReasonCapabilityMatch, handoff.WithCapability("refund"),
		handoff.WithPayload(map[string]any{handoff.CapabilityKey: "ignored"}), handoff.WithIdempotencyKey("k"))
	if cmd.RequiredCapability() != "refund" || cmd.IdempotencyKey != "k" {
		t.Errorf("got capability %q key %q, want refund and k", cmd.RequiredCapability(), cmd.IdempotencyKey)
	}
}

func TestNewCommand_Invalid(t *testing.T) {
	tests := []struct {
		name     string
		from, to string
		reason   handoff.Reason
		opts     []handoff.CommandOption
		field    string
		msg      string
	}{
		{"no from", "", "b", handoff.ReasonRule, nil, "from", "handoff: command: from is required"},
		{"no to", "a", "", handoff.ReasonRule, nil, "to", "handoff: command: to is required"},
		{"no reason", "a", "b", "", nil, "reason", "handoff: command: reason is required"},
		{"unknown reason", "a", "b", "whim", nil, "reason", `handoff: command: reason is unknown: "whim"`},
		{"negative priority", "a", "b", handoff.ReasonRule, []handoff.CommandOption{handoff.WithPriority(-1)}, "priority", "handoff: command: priority must not be negative"},
		{"negative step", "a", "b", handoff.ReasonRule, []handoff.CommandOption{handoff.WithInstance("w", "i", -2)}, "step", "handoff: command: step must not be negative"},
		{"negative timeout", "a", "b", handoff.ReasonRule, []handoff.CommandOption{handoff.WithCommandTimeout(-time.Second)}, "timeout", "handoff: command: timeout must not be negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := handoff.NewCommand(tt.from, tt.to, tt.reason, "x", tt.opts...)
			var ce *handoff.CommandError
			if !errors.As(err, &ce) || !errors.Is(err, handoff.ErrInvalidCommand) {
				t.Fatalf("error = %v, want *CommandError matching ErrInvalidCommand", err)
			}
			if ce.Field != tt.field || err.Error() != tt.msg {
				t.Errorf("got field %q message %q, want %q and %q", ce.Field, err.Error(), tt.field, tt.msg)
			}
		})
	}
}

func TestPRD040_ConvertsCommandToRecord(t *testing.T) {
	ctx := map[string]any{"order_id": "12345", "amount": 50}
	cmd := mustCommand(t, "customer", "seller", handoff.ReasonPlanStep,
		handoff.WithTask("Approve refund for order 12345"),
		handoff.WithContextData(ctx),
		handoff.WithConstraints(map[string]any{"refund_method": "original_payment"}),
		handoff.WithPayload(map[string]any{"plan_step_id": "s2"}),
		handoff.WithPriority(handoff.PriorityLow),
		handoff.WithInstance("refund", "inst-7", 2))
	at := time.Date(2025, 11, 16, 11, 0, 0, 0, time.FixedZone("CET", 3600))
	rec := cmd.ToRecord("H-1", at)

	enc, _ := json.Marshal(ctx)
	want := handoff.Record{
		ID: "H-1", From: "customer", To: "seller", Reason: handoff.ReasonPlanStep,
		Explanation: "test hand-off", Task: "Approve refund for order 12345",
		Payload: cmd.Payload, Constraints: cmd.Constraints, Priority: 10,
		WorkflowID: "refund", InstanceID: "inst-7", Step: 2, IdempotencyKey: "inst-7:2",
		ContextBytes: len(enc), Timestamp: at.UTC(),
	}
	if !reflect.DeepEqual(rec, want) {
		t.Errorf("got %+v\nwant %+v", rec, want)
	}
	if rec.Timestamp.Location() != time.UTC {
		t.Errorf("timestamp location = %v, want UTC", rec.Timestamp.Location())
	}
	if got, want := rec.ContextKB(), float64(len(enc))/1024; got != want {
		t.Errorf("ContextKB() = %v, want %v", got, want)
	}
	if got := mustCommand(t, "a", "b", handoff.ReasonRule).ToRecord("x", at).ContextBytes; got != 4 {
		t.Errorf("ContextBytes of a nil context = %d, want 4 (null)", got)
	}
}

func TestPRD040_IdentifiesCommandObjects(t *testing.T) {
	cmd := mustCommand(t, "a", "b", handoff.ReasonClarification)
	tests := []struct {
		name string
		v    any
		want bool
	}{
		{"command", cmd, true},
		{"command pointer", &cmd, true},
		{"nil command pointer", (*handoff.Command)(nil), false},
		{"command without target", handoff.Command{From: "a"}, false},
		{"delegation", registry.Delegation{To: "rag", Reason: "capability_match"}, true},
		{"delegation pointer", &registry.Delegation{To: "rag"}, true},
		{"nil delegation pointer", (*registry.Delegation)(nil), false},
		{"delegation without target", registry.Delegation{Reason: "clarification"}, false},
		{"map", map[string]any{"type": "handoff", "to": "rag", "reason": "capability_match"}, true},
		{"map of another type", map[string]any{"type": "message", "to": "rag"}, false},
		{"map without target", map[string]any{"type": "handoff"}, false},
		{"map with non-string target", map[string]any{"type": "handoff", "to": 3}, false},
		{"record", cmd.ToRecord("x", time.Now()), false},
		{"string", "handoff", false},
		{"nil", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := handoff.IsCommand(tt.v); got != tt.want {
				t.Errorf("IsCommand(%#v) = %v, want %v", tt.v, got, tt.want)
			}
		})
	}
}

func TestFromDelegation(t *testing.T) {
	d := registry.Delegation{To: "rag", Reason: "capability_match", Explanation: "needs search",
		Task: "search", Payload: map[string]any{"q": "x"}, ReturnControl: true}
	got := handoff.FromDelegation("seller", d)
	want := handoff.Command{From: "seller", To: "rag", Reason: handoff.ReasonCapabilityMatch,
		Explanation: "needs search", Task: "search", Payload: d.Payload, ReturnControl: true}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

func TestReason(t *testing.T) {
	for _, r := range []handoff.Reason{handoff.ReasonRule, handoff.ReasonPlanStep, handoff.ReasonCapabilityMatch,
		handoff.ReasonUserRequest, handoff.ReasonErrorRecovery, handoff.ReasonClarification} {
		if !r.Valid() {
			t.Errorf("%q.Valid() = false, want true", r)
		}
		if got, want := r.Dynamic(), r != handoff.ReasonRule; got != want {
			t.Errorf("%q.Dynamic() = %v, want %v", r, got, want)
		}
	}
	if handoff.Reason("Rule").Valid() {
		t.Errorf(`Reason("Rule").Valid() = true, want false`)
	}
}
