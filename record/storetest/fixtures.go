package storetest

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/batonhq/baton/record"
	"github.com/batonhq/baton/registry"
)

// base has nanoseconds that a store keeping microseconds or milliseconds
// would lose.
var base = time.Date(2025, 3, 14, 15, 9, 26, 535897932, time.UTC)

// fullSnapshot sets every field of a snapshot, with nested values in its maps.
func fullSnapshot(id string, step int) record.Snapshot {
	return record.Snapshot{
		ID:       id,
		Workflow: "refund",
		Version:  3,
		Hash:     "sha256:9f86d081884c7d65",
		Status:   record.StatusFailed,
		State:    "REVIEWING",
		Outcome:  "FAILED",
		Error:    "engine: instance failed in state REVIEWING: boom",
		// Not what a failed instance holds, but every field must round-trip.
		CancelReason: "the customer withdrew",
		Step:         step,
		Attempt:      2,
		Visits:       map[string]int{"VALIDATING": 1, "REVIEWING": step},
		Input:        map[string]any{"order_id": "1", "amount": 50, "items": []any{"a", 2, 3.5, nil}},
		Context: map[string]any{
			"order_id": "1",
			"nested":   map[string]any{"deep": map[string]any{"ok": true, "none": nil, "list": []any{}}},
		},
		Created: base,
		Updated: base.Add(time.Duration(step)*time.Millisecond + 7),
		Commits: step,
		Usage: registry.Ledger{
			Totals: registry.Totals{InputTokens: 1200, OutputTokens: 345, Tokens: 1545, Cost: 0.0123456789},
			Agents: registry.AgentTotals{
				{Agent: "customer", Totals: registry.Totals{InputTokens: 200, OutputTokens: 45, Tokens: 245, Cost: 0.0023456789}},
				{Agent: "seller", Totals: registry.Totals{InputTokens: 1000, OutputTokens: 300, Tokens: 1300, Cost: 0.01}},
			},
			Visit: registry.Totals{InputTokens: 200, OutputTokens: 45, Tokens: 245, Cost: 0.0023456789},
		},
	}
}

// fullEntry sets every field of an entry.
func fullEntry(seq, step int) record.Entry {
	return record.Entry{
		Seq:       seq,
		Time:      base.Add(time.Duration(seq)*time.Microsecond + 3),
		Kind:      record.KindRuleFired,
		Step:      step,
		Attempt:   1,
		State:     "REVIEWING",
		Agent:     "seller",
		Trigger:   "reviewed",
		Rule:      "approved",
		Priority:  100,
		Condition: `result.approval == "APPROVED"`,
		From:      "REVIEWING",
		To:        "payment",
		Next:      "REFUNDING",
		HandoffID: fmt.Sprintf("h-%d", seq),
		Result: map[string]any{
			"approval": "APPROVED",
			"score":    0.75,
			"count":    3,
			"tags":     []any{"fast", map[string]any{"by": "seller"}},
		},
		Error:     "registry: rejected",
		Retryable: true,
		ErrorKind: "rate_limited",
		Limit:     "max_visits",
		Reason:    "capability_match",
		Detail:    "détail ✓ \"quoted\" <b>&</b>\nsecond line\ttab \u2028",
		Delay:     1500*time.Millisecond + 1,
		Index:     3,
		Usage:     registry.Usage{InputTokens: 1 << 40, OutputTokens: 7, Cost: 1e-9, Model: "model-ü 1"},
	}
}

var kinds = []record.Kind{
	record.KindAgentRun, record.KindOutcome, record.KindRuleFired, record.KindTransition, record.KindHandoff,
}

// stepEntries returns n entries of one step, numbered from *seq on.
func stepEntries(seq *int, step, n int) []record.Entry {
	out := make([]record.Entry, n)
	for i := range out {
		*seq++
		out[i] = record.Entry{
			Seq:    *seq,
			Time:   base.Add(time.Duration(*seq) * time.Nanosecond),
			Kind:   kinds[i%len(kinds)],
			Step:   step,
			Agent:  "seller",
			Result: map[string]any{"seq": *seq},
		}
	}
	return out
}

// elsewhere is a zone that is not UTC, with a half-hour offset.
var elsewhere = time.FixedZone("NPT", 5*3600+45*60)

// fullOutgoing sets every field of an outbox item of instance id, with nested
// values in its maps and a creation time with nanoseconds in a zone that is
// not UTC.
func fullOutgoing(id string, step int, key string) record.Outgoing {
	return record.Outgoing{
		Key:         key,
		Kind:        record.OutgoingHandoff,
		Run:         "delegate",
		Step:        step,
		Attempt:     2,
		State:       "REVIEWING",
		To:          "payment",
		From:        "seller",
		HandoffID:   fmt.Sprintf("h-%s-%d", id, step),
		Reason:      "plan_step",
		Explanation: "le paiement ✓ <b>&</b> \"quoted\"",
		Task:        "refund order 1",
		Priority:    100,
		Rule:        "approved",
		Previous:    map[string]any{"approval": "APPROVED", "scores": []any{1, 2.5, nil}},
		Constraints: map[string]any{"max": 50, "deep": map[string]any{"deeper": map[string]any{"ok": true}}},
		Payload: map[string]any{
			"order_id": "1",
			"items":    []any{map[string]any{"sku": "a", "qty": 2}},
			"none":     nil,
		},
		Delegator:     "manager",
		ReturnControl: true,
		Returned:      true,
		Index:         2,
		Created:       base.In(elsewhere).Add(time.Duration(step)*time.Millisecond + 11),
	}
}

// item is a small outbox item of instance id, sent by step under key.
func item(id string, step int, key string) record.Outgoing {
	return record.Outgoing{
		Key:     key,
		Kind:    record.OutgoingDispatch,
		Run:     "state",
		Step:    step,
		State:   "REVIEWING",
		To:      "seller",
		Payload: map[string]any{"instance": id, "step": step},
		Created: base.Add(time.Duration(step) * time.Microsecond),
	}
}

// fullDeadLetter sets every field of a dead letter, Seq included: the store
// must replace it with its own numbering.
func fullDeadLetter(n int) record.DeadLetter {
	return record.DeadLetter{
		Seq:       1000 + n,
		MessageID: fmt.Sprintf("msg-%d", n),
		Type:      "handoff",
		From:      "seller",
		To:        "payment",
		Reason:    "max attempts reached",
		Instance:  fmt.Sprintf("i-%d", n),
		Step:      n + 1,
		Key:       fmt.Sprintf("i-%d:%d", n, n+1),
		At:        base.In(elsewhere).Add(time.Duration(n)*time.Second + 13),
		Attempts:  5,
		LastError: "agent: timeout after 30s",
		Content:   map[string]any{"order_id": "1", "nested": map[string]any{"list": []any{"x", 1}}},
	}
}

// fullWorkflow sets every field of a workflow source.
func fullWorkflow(hash string) record.WorkflowSource {
	return record.WorkflowSource{
		Hash:    hash,
		Name:    "refund",
		Version: 3,
		File:    "workflows/refund.yaml",
		Source:  []byte("workflow: refund\nversion: 3\n\x00\xff binary too\n"),
		Saved:   base.In(elsewhere).Add(17),
	}
}

// requireAllFieldsSet fails when a field of v is zero, so that a field added
// to the engine's types later is not silently left out of the round trips.
func requireAllFieldsSet(t *testing.T, v any) {
	t.Helper()
	rv := reflect.ValueOf(v)
	for i := range rv.NumField() {
		if rv.Field(i).IsZero() {
			t.Fatalf("fixture %T leaves field %s zero: set it so the suite checks that it round-trips",
				v, rv.Type().Field(i).Name)
		}
	}
}
