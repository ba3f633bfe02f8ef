package handoff_test

import (
	"errors"
	"testing"

	"github.com/batonhq/baton/bus"
	"github.com/batonhq/baton/handoff"
	"github.com/batonhq/baton/registry"
)

// TestManager_PrepareThenSend checks the two halves of a hand-off whose
// sender commits it first: Prepare validates and records it without sending,
// Send puts it on the bus once, and a refused command is neither recorded
// nor sent.
func TestManager_PrepareThenSend(t *testing.T) {
	e := newEnv(t)
	cmd := mustCommand(t, "seller", "payment", handoff.ReasonRule, handoff.WithTask("refund 42"), handoff.WithInstance("refund", "inst-1", 3))
	rec, err := e.mgr.Prepare(t.Context(), cmd)
	if err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	if rec.Status != handoff.StatusPending || rec.ID == "" {
		t.Fatalf("prepared record = %+v, want a pending hand-off with an id", rec)
	}
	if msgs, _ := e.bus.Receive("payment", 10); len(msgs) != 0 {
		t.Fatalf("Prepare sent %d messages, want none", len(msgs))
	}
	if got := e.mgr.Stats(); got.Total != 0 || got.Pending != 1 {
		t.Errorf("stats after Prepare = %+v, want nothing sent and one pending", got)
	}
	if _, err := e.mgr.Send(t.Context(), rec.ID); err != nil {
		t.Fatalf("Send: %v", err)
	}
	d := e.takeHandoff(t, "payment")
	if d.HandoffID != rec.ID || d.Task.Description != "refund 42" {
		t.Errorf("delivery = %+v, want the prepared hand-off", d)
	}
	var se *handoff.StatusError
	if _, err := e.mgr.Send(t.Context(), rec.ID); !errors.As(err, &se) {
		t.Errorf("second Send: got %v, want a *StatusError", err)
	}
	var ue *handoff.UnknownHandoffError
	if _, err := e.mgr.Send(t.Context(), "nope"); !errors.As(err, &ue) {
		t.Errorf("Send of an unknown id: got %v, want an *UnknownHandoffError", err)
	}
	if got := e.mgr.Stats(); got.Total != 1 {
		t.Errorf("stats after Send = %+v, want one sent", got)
	}

	self := mustCommand(t, "seller", "seller", handoff.ReasonPlanStep, handoff.WithTask("loop"), handoff.WithInstance("refund", "inst-1", 4))
	var re *handoff.RefusalError
	if _, err := e.mgr.Prepare(t.Context(), self); !errors.As(err, &re) {
		t.Fatalf("Prepare of a hand-off to self: got %v, want a *RefusalError", err)
	}
	if n := len(e.mgr.History("inst-1")); n != 1 {
		t.Errorf("history holds %d hand-offs, want the refused one left out", n)
	}
}

// TestManager_SendFailureMarksTheRecordFailed checks that a prepared
// hand-off the bus refuses ends failed with a *bus.HandoffError.
func TestManager_SendFailureMarksTheRecordFailed(t *testing.T) {
	reg, err := registry.FromSpecs(testAgents())
	if err != nil {
		t.Fatal(err)
	}
	b := bus.New()
	t.Cleanup(func() { _ = b.Close() })
	if err := b.Register("payment", bus.WithMailboxCapacity(1)); err != nil {
		t.Fatal(err)
	}
	mgr, err := handoff.NewManager(reg, b)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mgr.Close() })
	if err := b.Send(t.Context(), &bus.Message{Type: bus.MessageNotification, From: "seller", To: "payment", Content: map[string]any{"action": "fill"}}); err != nil {
		t.Fatal(err)
	}
	rec, err := mgr.Prepare(t.Context(), mustCommand(t, "seller", "payment", handoff.ReasonRule, handoff.WithTask("refund")))
	if err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	var he *bus.HandoffError
	if _, err := mgr.Send(t.Context(), rec.ID); !errors.As(err, &he) {
		t.Fatalf("Send into a full mailbox: got %v, want a *bus.HandoffError", err)
	}
	if got, _ := mgr.Lookup(rec.ID); got.Status != handoff.StatusFailed {
		t.Errorf("record status %s, want failed", got.Status)
	}
}

// TestManager_RestoreKeepsTheID checks that a hand-off prepared before a
// restart is recorded again under its id, is not validated against a
// history the new manager lacks, and is sent once.
func TestManager_RestoreKeepsTheID(t *testing.T) {
	e := newEnv(t)
	cmd := mustCommand(t, "seller", "payment", handoff.ReasonRule, handoff.WithTask("refund 42"), handoff.WithInstance("refund", "inst-9", 5))
	rec, err := e.mgr.Restore(t.Context(), "h-41", cmd)
	if err != nil {
		t.Fatalf("Restore: %v", err)
	}
	if rec.ID != "h-41" || rec.Status != handoff.StatusPending {
		t.Fatalf("restored record = %+v, want pending h-41", rec)
	}
	if again, err := e.mgr.Restore(t.Context(), "h-41", cmd); err != nil || again.ID != "h-41" {
		t.Errorf("Restore of a restored, unsent hand-off: got %+v, %v; want it as it was", again, err)
	}
	if _, err := e.mgr.Send(t.Context(), "h-41"); err != nil {
		t.Fatalf("Send: %v", err)
	}
	if d := e.takeHandoff(t, "payment"); d.HandoffID != "h-41" {
		t.Errorf("delivered hand-off %q, want h-41", d.HandoffID)
	}
	var se *handoff.StatusError
	if _, err := e.mgr.Restore(t.Context(), "h-41", cmd); !errors.As(err, &se) {
		t.Errorf("Restore of a sent hand-off: got %v, want a *StatusError", err)
	}
	var ue *handoff.UnknownHandoffError
	if _, err := e.mgr.Restore(t.Context(), "", cmd); !errors.As(err, &ue) {
		t.Errorf("Restore without an id: got %v, want an *UnknownHandoffError", err)
	}
	gone := mustCommand(t, "seller", "ghost", handoff.ReasonRule, handoff.WithTask("x"))
	if _, err := e.mgr.Restore(t.Context(), "h-42", gone); err == nil {
		t.Error("Restore to an unknown agent succeeded")
	}
}
