package handoff_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/batonhq/baton/bus"
	"github.com/batonhq/baton/handoff"
	"github.com/batonhq/baton/registry"
)

func TestPRD040_AcceptsValidHandoff(t *testing.T) {
	e := newEnv(t)
	cmd := mustCommand(t, "seller", "rag", handoff.ReasonCapabilityMatch,
		handoff.WithTask("search the refund policy"),
		handoff.WithCapability("rag_search"),
		handoff.WithPayload(map[string]any{"search_query": "refund policy"}),
		handoff.WithReturnControl(),
		handoff.WithInstance("refund", "inst-1", 4))
	rec, err := e.mgr.Handoff(t.Context(), cmd)
	if err != nil {
		t.Fatalf("Handoff: %v", err)
	}
	if rec.Status != handoff.StatusPending || rec.ID == "" || rec.From != "seller" || rec.To != "rag" || rec.Step != 4 {
		t.Errorf("record = %+v, want a pending seller -> rag hand-off at step 4", rec)
	}
	if rec.ID != rec.MessageID {
		t.Errorf("hand-off id %q != message id %q, want the message id by default", rec.ID, rec.MessageID)
	}
	d := e.takeHandoff(t, "rag")
	if d.HandoffID != rec.ID || d.Task.Description != "search the refund policy" || !d.ReturnControl ||
		d.Payload["search_query"] != "refund policy" || d.Task.From != "seller" || d.Task.Reason != "capability_match" {
		t.Errorf("delivery = %+v, want the command's fields", d)
	}
	if got := e.mgr.Pending(); len(got) != 1 || got[0].ID != rec.ID {
		t.Errorf("Pending() = %v, want the one hand-off", got)
	}
	if err := e.mgr.Accept(t.Context(), d.HandoffID); err != nil {
		t.Fatalf("Accept: %v", err)
	}
	got, ok := e.mgr.Lookup(rec.ID)
	if !ok || got.Status != handoff.StatusAccepted || got.Settled.IsZero() {
		t.Errorf("after Accept, Lookup = %+v, %v, want accepted with a settle time", got, ok)
	}
	if p := e.mgr.Pending(); len(p) != 0 {
		t.Errorf("Pending() after Accept = %v, want none", p)
	}
	s := e.mgr.Stats()
	if s.Total != 1 || s.Accepted != 1 || s.Pending != 0 || s.SentBy["seller"] != 1 || s.ReceivedBy["rag"] != 1 {
		t.Errorf("Stats() = %+v, want 1 sent by seller, received by rag, accepted", s)
	}
	if h := e.mgr.History("inst-1"); len(h) != 1 || h[0].Status != handoff.StatusAccepted {
		t.Errorf("History = %+v, want the accepted hand-off", h)
	}
}

func TestPRD040_RejectsUnknownAgent(t *testing.T) {
	e := newEnv(t)
	_, err := e.mgr.Handoff(t.Context(), mustCommand(t, "seller", "pament", handoff.ReasonCapabilityMatch, handoff.WithTask("refund")))
	refusal(t, err, handoff.CheckTarget, handoff.ErrUnknownTarget)
	if !strings.Contains(err.Error(), `(did you mean "payment"?)`) {
		t.Errorf("error %q has no suggestion", err)
	}
	if s := e.mgr.Stats(); s.Refused != 1 || s.Total != 0 {
		t.Errorf("Stats() = %+v, want 1 refused, 0 sent", s)
	}
	if h := e.mgr.History(""); len(h) != 0 {
		t.Errorf("a refused hand-off was recorded: %+v", h)
	}
	if e.logs.FilterMessage("handoff refused").FilterField(fieldString("check", handoff.CheckTarget)).Len() != 1 {
		t.Errorf("refusal not logged with its check: %v", e.logs.All())
	}
}

func TestPRD040_RejectsHandoffToSelf(t *testing.T) {
	e := newEnv(t)
	_, err := e.mgr.Handoff(t.Context(), mustCommand(t, "seller", "seller", handoff.ReasonClarification, handoff.WithTask("ask myself")))
	refusal(t, err, handoff.CheckSelf, handoff.ErrSelfHandoff)
	e.empty(t, "seller")
}

func TestPRD040_RejectsHandoffLoop(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	bounce := func(from, to string) error {
		_, err := e.mgr.Handoff(ctx, mustCommand(t, from, to, handoff.ReasonClarification,
			handoff.WithTask("clarify"), handoff.WithInstance("refund", "inst-loop", 1)))
		return err
	}
	for _, hop := range [][2]string{{"seller", "payment"}, {"payment", "seller"}, {"seller", "payment"}, {"payment", "seller"}} {
		if err := bounce(hop[0], hop[1]); err != nil {
			t.Fatalf("hop %s -> %s: %v", hop[0], hop[1], err)
		}
	}
	refusal(t, bounce("seller", "payment"), handoff.CheckLoop, handoff.ErrLoopDetected)
	// Another instance has its own history.
	if _, err := e.mgr.Handoff(ctx, mustCommand(t, "seller", "payment", handoff.ReasonClarification,
		handoff.WithTask("clarify"), handoff.WithInstance("refund", "inst-other", 1))); err != nil {
		t.Errorf("hand-off in another instance refused: %v", err)
	}
	if got := len(e.mgr.History("inst-loop")); got != 4 {
		t.Errorf("inst-loop history has %d records, want 4", got)
	}
}

func TestPRD040_ProcessesUserAgentSelection(t *testing.T) {
	e := newEnv(t)
	rec, err := e.mgr.SelectAgent(t.Context(), handoff.Command{From: "seller", To: "notification",
		WorkflowID: "refund", InstanceID: "inst-2", Step: 3, Context: map[string]any{"order_id": "12345"}})
	if err != nil {
		t.Fatalf("SelectAgent: %v", err)
	}
	if rec.Reason != handoff.ReasonUserRequest || rec.Explanation != "user selected agent notification" || rec.Task != rec.Explanation {
		t.Errorf("record = %+v, want reason user_request with the default explanation as task", rec)
	}
	d := e.takeHandoff(t, "notification")
	if d.Task.Reason != "user_request" || d.Task.Context["order_id"] != "12345" || d.Task.Step != 3 {
		t.Errorf("delivery = %+v, want the user request with the context", d.Task)
	}
	// Even a command with another reason becomes a user request.
	rec, err = e.mgr.SelectAgent(t.Context(), handoff.Command{From: "notification", To: "rag", Reason: handoff.ReasonRule, Task: "look it up", InstanceID: "inst-2"})
	if err != nil || rec.Reason != handoff.ReasonUserRequest || rec.Task != "look it up" {
		t.Errorf("SelectAgent(rag) = %+v, %v, want a user request keeping its task", rec, err)
	}
}

func TestPRD040_RefusesNonSelectableAgent(t *testing.T) {
	e := newEnv(t)
	for _, to := range []string{"payment", "supervisor"} {
		_, err := e.mgr.SelectAgent(t.Context(), handoff.Command{From: "seller", To: to})
		r := refusal(t, err, handoff.CheckSelectable, handoff.ErrNotSelectable)
		if want := `agent "` + to + `" is not user-selectable`; r.Reason != want {
			t.Errorf("got %q, want %q", r.Reason, want)
		}
		e.empty(t, to)
	}
	_, err := e.mgr.SelectAgent(t.Context(), handoff.Command{From: "seller", To: "nobody"})
	refusal(t, err, handoff.CheckTarget, handoff.ErrUnknownTarget)
}

func TestPRD040_RefusesSystemAgentHandoff(t *testing.T) {
	e := newEnv(t)
	_, err := e.mgr.Handoff(t.Context(), mustCommand(t, "seller", "supervisor", handoff.ReasonErrorRecovery, handoff.WithTask("help")))
	refusal(t, err, handoff.CheckSystem, handoff.ErrSystemAgent)
	e.empty(t, "supervisor")
	if _, err := e.mgr.Handoff(t.Context(), mustCommand(t, "supervisor", "error_monitor", handoff.ReasonPlanStep, handoff.WithTask("watch"))); err != nil {
		t.Errorf("supervisor -> system agent refused: %v", err)
	}
}

func TestManager_SendFailure(t *testing.T) {
	e := newEnv(t)
	if err := e.bus.Unregister("payment"); err != nil {
		t.Fatal(err)
	}
	rec, err := e.mgr.Handoff(t.Context(), mustCommand(t, "seller", "payment", handoff.ReasonPlanStep,
		handoff.WithTask("t"), handoff.WithInstance("w", "i", 1)))
	var he *bus.HandoffError
	if !errors.As(err, &he) || he.From != "seller" || he.To != "payment" || !errors.Is(err, bus.ErrRouting) {
		t.Fatalf("Handoff = %v, want a *bus.HandoffError caused by routing", err)
	}
	if rec.Status != handoff.StatusFailed || rec.Detail == "" {
		t.Errorf("record = %+v, want failed with the bus error", rec)
	}
	s := e.mgr.Stats()
	if s.Failed != 1 || s.Total != 0 || s.Pending != 0 || len(s.SentBy) != 0 {
		t.Errorf("Stats() = %+v, want 1 failed and nothing sent", s)
	}
	// A failed hand-off does not count towards loop detection.
	if err := e.bus.Register("payment"); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := e.mgr.Handoff(t.Context(), mustCommand(t, "seller", "payment", handoff.ReasonPlanStep,
			handoff.WithTask("t"), handoff.WithInstance("w", "i", 1))); err != nil {
			t.Fatalf("retry after failure refused: %v", err)
		}
	}
}

func TestManager_CanceledContext(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := e.mgr.Handoff(ctx, mustCommand(t, "seller", "payment", handoff.ReasonPlanStep, handoff.WithTask("t"))); !errors.Is(err, context.Canceled) {
		t.Errorf("Handoff = %v, want context.Canceled", err)
	}
	if err := e.mgr.Accept(ctx, "x"); !errors.Is(err, context.Canceled) {
		t.Errorf("Accept = %v, want context.Canceled", err)
	}
	if s := e.mgr.Stats(); s.Total+s.Refused+s.Failed != 0 {
		t.Errorf("Stats() = %+v, want nothing counted", s)
	}
}

func TestManager_UnknownHandoff(t *testing.T) {
	e := newEnv(t)
	for name, f := range map[string]func() error{
		"Accept": func() error { return e.mgr.Accept(t.Context(), "nope") },
		"Reject": func() error { return e.mgr.Reject(t.Context(), "nope", "x") },
	} {
		err := f()
		var ue *handoff.UnknownHandoffError
		if !errors.As(err, &ue) || ue.ID != "nope" || !errors.Is(err, handoff.ErrUnknownHandoff) {
			t.Errorf("%s = %v, want *UnknownHandoffError", name, err)
		}
	}
	if _, ok := e.mgr.Lookup("nope"); ok {
		t.Errorf("Lookup(nope) found a record")
	}
}

func TestManager_IDsAndForget(t *testing.T) {
	n := 0
	e := newEnv(t, handoff.WithIDs(func() string { n++; return fmt.Sprintf("H%d", n) }))
	ctx := t.Context()
	a, _ := e.mgr.Handoff(ctx, mustCommand(t, "seller", "payment", handoff.ReasonPlanStep, handoff.WithTask("t"), handoff.WithInstance("w", "i1", 1)))
	b, _ := e.mgr.Handoff(ctx, mustCommand(t, "payment", "notification", handoff.ReasonPlanStep, handoff.WithTask("t"), handoff.WithInstance("w", "i1", 2)))
	if a.ID != "H1" || b.ID != "H2" || a.MessageID == a.ID {
		t.Fatalf("ids %q %q (message %q), want H1 H2 and a separate message id", a.ID, b.ID, a.MessageID)
	}
	if d := e.takeHandoff(t, "payment"); d.HandoffID != "H1" || d.MessageID != a.MessageID {
		t.Errorf("delivery ids %q %q, want H1 and %q", d.HandoffID, d.MessageID, a.MessageID)
	}
	if err := e.mgr.Accept(ctx, "H1"); err != nil {
		t.Fatal(err)
	}
	e.mgr.Forget("i1")
	if h := e.mgr.History("i1"); len(h) != 0 {
		t.Errorf("History after Forget = %v, want none", h)
	}
	if _, ok := e.mgr.Lookup("H1"); ok {
		t.Errorf("settled H1 still known after Forget")
	}
	if err := e.mgr.Accept(ctx, "H2"); err != nil {
		t.Errorf("pending H2 lost by Forget: %v", err)
	}
}

func TestManager_PendingOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		var want []string
		for _, to := range []string{"payment", "notification", "rag"} {
			rec, err := e.mgr.Handoff(t.Context(), mustCommand(t, "seller", to, handoff.ReasonPlanStep, handoff.WithTask("t")))
			if err != nil {
				t.Fatal(err)
			}
			want = append(want, rec.ID)
			time.Sleep(time.Millisecond)
		}
		var got []string
		for _, r := range e.mgr.Pending() {
			got = append(got, r.ID)
		}
		if !slices.Equal(got, want) {
			t.Errorf("Pending() = %v, want %v (oldest first)", got, want)
		}
	})
}

func TestManager_StatsAreCopies(t *testing.T) {
	e := newEnv(t)
	if _, err := e.mgr.Handoff(t.Context(), mustCommand(t, "seller", "payment", handoff.ReasonPlanStep, handoff.WithTask("t"))); err != nil {
		t.Fatal(err)
	}
	s := e.mgr.Stats()
	s.SentBy["seller"] = 99
	if got := e.mgr.Stats().SentBy["seller"]; got != 1 {
		t.Errorf("SentBy[seller] = %d after mutating a snapshot, want 1", got)
	}
}

func TestNewManager_Invalid(t *testing.T) {
	reg := newRegistry(t)
	b := bus.New()
	defer b.Close()
	tests := []struct {
		name string
		reg  *registry.Registry
		tr   handoff.Transport
		opts []handoff.Option
		msg  string
	}{
		{"nil registry", nil, b, nil, "handoff: NewManager: registry is nil"},
		{"nil transport", reg, nil, nil, "handoff: NewManager: transport is nil"},
		{"zero timeout", reg, b, []handoff.Option{handoff.WithTimeout(0)}, "handoff: WithTimeout: must be positive"},
		{"nil logger", reg, b, []handoff.Option{handoff.WithLogger(nil)}, "handoff: WithLogger: logger is nil"},
		{"nil clock", reg, b, []handoff.Option{handoff.WithClock(nil)}, "handoff: WithClock: clock is nil"},
		{"nil ids", reg, b, []handoff.Option{handoff.WithIDs(nil)}, "handoff: WithIDs: generator is nil"},
		{"two problems", reg, b, []handoff.Option{handoff.WithTimeout(-1), handoff.WithLoopWindow(0, 0)},
			"handoff: WithTimeout: must be positive\nhandoff: WithLoopWindow: window and repeats must be at least 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := handoff.NewManager(tt.reg, tt.tr, tt.opts...)
			if m != nil || !errors.Is(err, handoff.ErrInvalidOption) || err.Error() != tt.msg {
				t.Errorf("got %v, %v, want nil and %q", m, err, tt.msg)
			}
		})
	}
}

// TestManager_Concurrent runs many instances' hand-offs, accepts and

// rejects at once under -race and checks that the counts add up.

func TestManager_Concurrent(t *testing.T) {
	e := newEnv(t)
	const instances, hops = 20, 10
	agents := []string{"customer", "seller", "payment", "notification"}
	expect := map[string]int{}
	for h := range hops {
		expect[agents[(h+1)%len(agents)]] += instances
	}
	var wg sync.WaitGroup
	for i := range instances {
		wg.Go(func() {
			for h := range hops {
				from, to := agents[h%len(agents)], agents[(h+1)%len(agents)]
				_, err := e.mgr.Handoff(t.Context(), handoff.Command{From: from, To: to, Reason: handoff.ReasonRule,
					Task: "t", InstanceID: fmt.Sprint("inst-", i), Step: h + 1})
				if err != nil {
					t.Errorf("Handoff: %v", err)
				}
			}
		})
	}
	var notices atomic.Int64
	for _, a := range agents {
		wg.Go(func() {
			for n := 0; n < expect[a]; {
				m, err := e.bus.ReceiveWait(t.Context(), a)
				if err != nil {
					t.Errorf("ReceiveWait(%s): %v", a, err)
					return
				}
				if m.Type == bus.MessageError {
					notices.Add(1)
					continue
				}
				d, err := handoff.Unpack(m)
				if err != nil {
					t.Errorf("Unpack: %v", err)
					return
				}
				if d.Task.Step%3 == 0 {
					err = e.mgr.Reject(t.Context(), d.HandoffID, "busy")
				} else {
					err = e.mgr.Accept(t.Context(), d.HandoffID)
				}
				if err != nil {
					t.Errorf("settle: %v", err)
				}
				n++
				_ = e.mgr.Stats()
				_ = e.mgr.Pending()
			}
		})
	}
	wg.Wait()
	for _, a := range agents {
		ms, _ := e.bus.Receive(a, 0)
		notices.Add(int64(len(ms)))
	}
	s := e.mgr.Stats()
	if s.Total != instances*hops || s.Accepted+s.Rejected != s.Total || s.Pending != 0 || s.Rejected != instances*3 {
		t.Errorf("Stats() = %+v, want %d sent, all settled, %d rejected", s, instances*hops, instances*3)
	}
	if got := notices.Load(); got != int64(s.Rejected) {
		t.Errorf("senders got %d rejection notices, want %d", got, s.Rejected)
	}
	for _, a := range agents {
		if s.ReceivedBy[a] != expect[a] {
			t.Errorf("ReceivedBy[%s] = %d, want %d", a, s.ReceivedBy[a], expect[a])
		}
	}
	var sent int
	for n := range maps.Values(s.SentBy) {
		sent += n
	}
	if sent != s.Total {
		t.Errorf("SentBy sums to %d, want %d", sent, s.Total)
	}
}
