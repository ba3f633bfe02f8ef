package handoff_test

import (
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/batonhq/baton/bus"
	"github.com/batonhq/baton/handoff"
)

func TestManager_Reject(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, handoff.WithEscalation("error_monitor"))
		ctx := t.Context()
		rec, err := e.mgr.Handoff(ctx, mustCommand(t, "seller", "payment", handoff.ReasonPlanStep,
			handoff.WithTask("refund order 12345"), handoff.WithPriority(handoff.PriorityHigh), handoff.WithInstance("refund", "inst-r", 3)))
		if err != nil {
			t.Fatal(err)
		}
		d := e.takeHandoff(t, "payment")
		time.Sleep(5 * time.Second)
		if err := e.mgr.Reject(ctx, d.HandoffID, "agent currently processing maximum concurrent tasks"); err != nil {
			t.Fatalf("Reject: %v", err)
		}
		msg := e.take(t, "seller")
		if msg.Type != bus.MessageError || msg.From != "payment" || msg.To != "seller" ||
			msg.CorrelationID != rec.MessageID || msg.InReplyTo != rec.MessageID || msg.Priority != bus.PriorityHigh {
			t.Errorf("notice = %+v, want an ERROR payment -> seller threaded to the hand-off at HIGH", msg)
		}
		if msg.Action() != "handoff_rejected" || msg.Content["reason"] != "agent currently processing maximum concurrent tasks" ||
			msg.Content["handoff_id"] != rec.ID || msg.Metadata["instance_id"] != "inst-r" {
			t.Errorf("notice content %v metadata %v, want the rejection and its ids", msg.Content, msg.Metadata)
		}
		got, _ := e.mgr.Lookup(rec.ID)
		if got.Status != handoff.StatusRejected || got.Detail != "agent currently processing maximum concurrent tasks" ||
			got.Settled.Sub(got.Timestamp) != 5*time.Second {
			t.Errorf("record = %+v, want rejected 5s after it was made", got)
		}
		// The time-out was stopped: nothing escalates later.
		time.Sleep(time.Minute)
		synctest.Wait()
		e.empty(t, "error_monitor")
		s := e.mgr.Stats()
		if s.Rejected != 1 || s.TimedOut != 0 || s.Escalated != 0 || s.Pending != 0 {
			t.Errorf("Stats() = %+v, want 1 rejected and nothing timed out", s)
		}
		if err := e.mgr.Reject(ctx, rec.ID, "again"); !errors.Is(err, handoff.ErrNotPending) {
			t.Errorf("second Reject = %v, want ErrNotPending", err)
		}
		if e.logs.FilterMessage("handoff rejected").Len() != 1 {
			t.Errorf("rejection not logged")
		}
	})
}

func TestManager_RejectNoticeUndeliverable(t *testing.T) {
	e := newEnv(t)
	if err := e.bus.Unregister("seller"); err != nil {
		t.Fatal(err)
	}
	rec, err := e.mgr.Handoff(t.Context(), mustCommand(t, "seller", "payment", handoff.ReasonPlanStep, handoff.WithTask("t")))
	if err != nil {
		t.Fatal(err)
	}
	err = e.mgr.Reject(t.Context(), rec.ID, "busy")
	if !errors.Is(err, bus.ErrHandoff) || !errors.Is(err, bus.ErrRouting) {
		t.Errorf("Reject = %v, want a hand-off error caused by routing", err)
	}
	if got, _ := e.mgr.Lookup(rec.ID); got.Status != handoff.StatusRejected {
		t.Errorf("status = %s, want rejected even though the notice was lost", got.Status)
	}
}

func TestManager_TimeoutEscalates(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, handoff.WithEscalation("error_monitor"))
		ctx := t.Context()
		cmd := mustCommand(t, "flight", "payment", handoff.ReasonPlanStep,
			handoff.WithTask("charge the charter"),
			handoff.WithContextData(map[string]any{"rfp_id": "rfp-9"}),
			handoff.WithPreviousResult(map[string]any{"quotes": 3}),
			handoff.WithConstraints(map[string]any{"currency": "USD"}),
			handoff.WithPriority(handoff.PriorityNormal),
			handoff.WithInstance("jetvision", "inst-t", 5))
		cmd.From = "seller"
		rec, err := e.mgr.Handoff(ctx, cmd)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		time.Sleep(handoff.DefaultTimeout - time.Nanosecond)
		synctest.Wait()
		e.empty(t, "error_monitor")

		time.Sleep(time.Nanosecond)
		synctest.Wait()
		got, _ := e.mgr.Lookup(rec.ID)
		if got.Status != handoff.StatusTimedOut || got.Detail != "not accepted within 30s" || got.Settled.Sub(start) != handoff.DefaultTimeout {
			t.Errorf("record = %+v, want timed out after 30s", got)
		}
		d := e.takeHandoff(t, "error_monitor")
		if got.Escalation != d.HandoffID {
			t.Errorf("record escalation = %q, want the escalation's id %q", got.Escalation, d.HandoffID)
		}
		if d.Task.Reason != "error_recovery" || d.Task.From != "seller" || d.Priority != bus.PriorityHigh ||
			d.Task.Context["rfp_id"] != "rfp-9" || d.Task.PreviousResult["quotes"] != 3 || d.Task.Constraints["currency"] != "USD" ||
			d.Payload["handoff_id"] != rec.ID || d.Payload["target"] != "payment" || d.Payload["timeout"] != "30s" ||
			d.Task.IdempotencyKey != "inst-t:5:escalation" || d.Task.Step != 5 || d.Task.InstanceID != "inst-t" ||
			d.Task.Description != "recover timed-out hand-off to payment: charge the charter" {
			t.Errorf("escalation = %+v, want an error_recovery hand-off carrying the original", d)
		}
		esc, _ := e.mgr.Lookup(d.HandoffID)
		if esc.Parent != rec.ID || esc.Reason != handoff.ReasonErrorRecovery || esc.Status != handoff.StatusPending {
			t.Errorf("escalation record = %+v, want a pending child of %s", esc, rec.ID)
		}
		if h := e.mgr.History("inst-t"); len(h) != 2 || h[0].ID != rec.ID || h[1].ID != esc.ID {
			t.Errorf("history = %+v, want the hand-off then its escalation", h)
		}
		if err := e.mgr.Accept(ctx, rec.ID); !errors.Is(err, handoff.ErrNotPending) {
			t.Errorf("Accept after time-out = %v, want ErrNotPending", err)
		}
		s := e.mgr.Stats()
		if s.Total != 2 || s.TimedOut != 1 || s.Escalated != 1 || s.Pending != 1 || s.ReceivedBy["error_monitor"] != 1 {
			t.Errorf("Stats() = %+v, want 2 sent, 1 timed out, 1 escalated pending", s)
		}
		if e.logs.FilterMessage("handoff timed out").Len() != 1 {
			t.Errorf("time-out not logged")
		}
		e.empty(t, "seller")

		// An escalation that times out is not escalated again: the sender hears of it.
		time.Sleep(handoff.DefaultTimeout)
		synctest.Wait()
		e.empty(t, "error_monitor")
		notice := e.take(t, "seller")
		if notice.Type != bus.MessageError || notice.Action() != "handoff_timed_out" || notice.From != "error_monitor" ||
			notice.Content["handoff_id"] != esc.ID {
			t.Errorf("notice = %+v, want a handoff_timed_out ERROR from error_monitor", notice)
		}
		if s := e.mgr.Stats(); s.TimedOut != 2 || s.Escalated != 1 || s.Pending != 0 {
			t.Errorf("Stats() = %+v, want 2 timed out, still 1 escalation", s)
		}
	})
}

func TestManager_TimeoutWithoutEscalation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, handoff.WithTimeout(time.Second))
		rec, err := e.mgr.Handoff(t.Context(), mustCommand(t, "seller", "payment", handoff.ReasonPlanStep, handoff.WithTask("t")))
		if err != nil {
			t.Fatal(err)
		}
		slow, err := e.mgr.Handoff(t.Context(), mustCommand(t, "seller", "notification", handoff.ReasonPlanStep,
			handoff.WithTask("t"), handoff.WithCommandTimeout(time.Hour)))
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		notice := e.take(t, "seller")
		if notice.Action() != "handoff_timed_out" || notice.Content["handoff_id"] != rec.ID ||
			notice.Content["error"] != "hand-off to payment not accepted within 1s" {
			t.Errorf("notice content = %v, want the time-out of %s", notice.Content, rec.ID)
		}
		if got, _ := e.mgr.Lookup(slow.ID); got.Status != handoff.StatusPending {
			t.Errorf("hand-off with a 1h timeout is %s after 1s, want pending", got.Status)
		}
		if s := e.mgr.Stats(); s.TimedOut != 1 || s.Escalated != 0 || s.Pending != 1 {
			t.Errorf("Stats() = %+v, want 1 timed out, none escalated, 1 pending", s)
		}
	})
}

func TestManager_EscalationTargetMissing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, handoff.WithEscalation("ghost"))
		rec, err := e.mgr.Handoff(t.Context(), mustCommand(t, "seller", "payment", handoff.ReasonPlanStep, handoff.WithTask("t")))
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(handoff.DefaultTimeout)
		synctest.Wait()
		if got, _ := e.mgr.Lookup(rec.ID); got.Status != handoff.StatusTimedOut || got.Escalation != "" {
			t.Errorf("record = %+v, want timed out without escalation", got)
		}
		if notice := e.take(t, "seller"); notice.Action() != "handoff_timed_out" {
			t.Errorf("sender got %v, want the time-out notice", notice.Content)
		}
		if e.logs.FilterMessage("handoff escalation failed").Len() != 1 {
			t.Errorf("failed escalation not logged")
		}
	})
}

func TestManager_AcceptStopsTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, handoff.WithEscalation("error_monitor"))
		rec, err := e.mgr.Handoff(t.Context(), mustCommand(t, "seller", "payment", handoff.ReasonPlanStep, handoff.WithTask("t")))
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(29 * time.Second)
		if err := e.mgr.Accept(t.Context(), rec.ID); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Hour)
		synctest.Wait()
		e.empty(t, "error_monitor")
		e.empty(t, "seller")
		if s := e.mgr.Stats(); s.Accepted != 1 || s.TimedOut != 0 {
			t.Errorf("Stats() = %+v, want accepted, not timed out", s)
		}
	})
}

func TestManager_CloseStopsTimers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, handoff.WithEscalation("error_monitor"))
		for i := range 3 {
			if _, err := e.mgr.Handoff(t.Context(), mustCommand(t, "seller", "payment", handoff.ReasonPlanStep,
				handoff.WithTask("t"), handoff.WithInstance("w", fmt.Sprint(i), 1))); err != nil {
				t.Fatal(err)
			}
		}
		if err := e.mgr.Close(); err != nil {
			t.Fatal(err)
		}
		if err := e.mgr.Close(); err != nil {
			t.Errorf("second Close = %v, want nil", err)
		}
		time.Sleep(time.Hour)
		synctest.Wait()
		e.empty(t, "error_monitor")
		if s := e.mgr.Stats(); s.Pending != 3 || s.TimedOut != 0 {
			t.Errorf("Stats() after Close = %+v, want 3 still pending, none timed out", s)
		}
		if _, err := e.mgr.Handoff(t.Context(), mustCommand(t, "seller", "payment", handoff.ReasonPlanStep, handoff.WithTask("t"))); !errors.Is(err, handoff.ErrClosed) {
			t.Errorf("Handoff after Close = %v, want ErrClosed", err)
		}
	})
}
