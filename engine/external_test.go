package engine_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/batonhq/baton/bus"
	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/handoff"
	"github.com/batonhq/baton/record"
	"github.com/batonhq/baton/registry"
	"github.com/batonhq/baton/transport"
	"github.com/batonhq/baton/wire"
)

func TestEngine_External_ReceivesFromTheBusAndReportsTheMessage(t *testing.T) {
	// gamma has no handler: it is external.
	r := newSimRun(t, "chain.yaml", map[string][]reply{
		"alpha": {ok("next", map[string]any{"n": 1})},
		"beta":  {ok("next", map[string]any{"b": true})},
		"watch": nil,
	})
	ctx := t.Context()
	inst, err := r.eng.Start(ctx, map[string]any{"who": "ext"})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	r.runUntil(r.queued("gamma"))
	m, err := busOf(r.eng).ReceiveWait(ctx, "gamma")
	if err != nil {
		t.Fatalf("ReceiveWait: %v", err)
	}
	if m.Type != transport.MessageHandoff || m.From != "beta" || m.Metadata["step"] != 3 || m.Metadata["instance_id"] != inst.ID() {
		t.Fatalf("got %s from %s metadata %v, want the HANDOFF from beta for step 3 of %s", m.Type, m.From, m.Metadata, inst.ID())
	}
	d, err := wire.Decode(m)
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	if d.Context["n"] != 1 || d.PreviousResult["b"] != true {
		t.Errorf("got context %v previous %v, want n=1 and b=true", d.Context, d.PreviousResult)
	}

	if rec, ok := lookupHandoff(t, r.eng, d.HandoffID); !ok || rec.Status != handoff.StatusPending || rec.To != "gamma" {
		t.Errorf("got record %+v, want the hand-off to gamma pending until its report", rec)
	}
	if err := reportWork(ctx, r.eng, m, registry.Outcome{Trigger: "next", Result: map[string]any{"g": 3}}, nil); err != nil {
		t.Fatalf("report: %v", err)
	}
	r.settle()
	res := inst.Result()
	wantCompleted(t, res, "DONE")
	if st := handoffStats(t, r.eng); st.Accepted != 3 || st.Pending != 0 {
		t.Errorf("got hand-off stats %+v, want beta, gamma and watch accepted", st)
	}

	// A second report of the same run is stale and recorded.
	err = reportWork(ctx, r.eng, m, registry.Outcome{Trigger: "next"}, nil)
	if !errors.Is(err, engine.ErrStaleReport) {
		t.Fatalf("second report: got %v, want ErrStaleReport", err)
	}
	late := entries(history(t, inst), record.KindLateReply)
	if len(late) != 1 || late[0].Step != 3 || late[0].Trigger != "next" {
		t.Errorf("got late replies %+v, want one for step 3", late)
	}
	if got := inst.Result(); got.Steps != res.Steps || got.Outcome != "DONE" {
		t.Errorf("got %+v after the stale report, want it unchanged", got)
	}
}

func TestEngine_External_ReportErrors(t *testing.T) {
	r := newSimRun(t, "chain.yaml", map[string][]reply{"alpha": {ok("next", nil)}})
	ctx := t.Context()
	inst, err := r.eng.Start(ctx, nil)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	r.runUntil(r.queued("beta")) // before SECOND's time-out
	tests := []struct {
		name string
		call func() error
		want error
	}{
		{"unknown instance", func() error { return r.eng.Report(ctx, "nope", 1, registry.Outcome{Trigger: "next"}, nil) }, engine.ErrUnknownInstance},
		{"a step that is not current", func() error { return r.eng.Report(ctx, inst.ID(), 1, registry.Outcome{Trigger: "next"}, nil) }, engine.ErrStaleReport},
		{"a step not run yet", func() error { return r.eng.Report(ctx, inst.ID(), 7, registry.Outcome{Trigger: "next"}, nil) }, engine.ErrFutureStep},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.call(); !errors.Is(err, tt.want) {
				t.Errorf("got %v, want %v", err, tt.want)
			}
		})
	}
	if got := inst.Result(); got.Status != record.StatusRunning || got.State != "SECOND" {
		t.Errorf("got %s in %s, want the instance still running in SECOND", got.Status, got.State)
	}
	history, err := inst.History(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, en := range history {
		if en.Step == 7 {
			t.Errorf("got %+v, want nothing recorded of a report for a step not reached", en)
		}
	}
}

func TestEngine_External_RetriesAreDispatchedToIt(t *testing.T) {
	// worker is external; WORK retries with backoff 1s, 5s, 30s.
	r := newSimRun(t, "retry.yaml", nil)
	ctx := t.Context()
	inst, err := r.eng.Start(ctx, nil)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	var steps []int
	var at []time.Duration
	take := func() *transport.Message {
		t.Helper()
		r.runUntil(r.queued("worker"))
		m, err := busOf(r.eng).ReceiveWait(ctx, "worker")
		if err != nil {
			t.Fatalf("ReceiveWait: %v", err)
		}
		steps = append(steps, m.Metadata["step"].(int))
		at = append(at, r.sim.Now().Sub(epoch))
		if m.From != "engine" {
			t.Errorf("got from %q, want the engine's own dispatch", m.From)
		}
		return m
	}
	m1 := take()
	if err := reportWork(ctx, r.eng, m1, registry.Outcome{}, errors.New("flaky")); err != nil {
		t.Fatalf("report a failure: %v", err)
	}
	m2 := take()
	if err := r.eng.Report(ctx, inst.ID(), 1, registry.Outcome{Trigger: "done"}, nil); !errors.Is(err, engine.ErrStaleReport) {
		t.Errorf("report for the failed run: got %v, want ErrStaleReport", err)
	}
	if err := reportWork(ctx, r.eng, m2, registry.Outcome{Trigger: "done"}, nil); err != nil {
		t.Fatalf("report success: %v", err)
	}
	r.settle()
	wantCompleted(t, inst.Result(), "DONE")
	if want := []int{1, 2}; !slices.Equal(steps, want) {
		t.Errorf("steps: got %v, want %v", steps, want)
	}
	if want := []time.Duration{0, time.Second}; !slices.Equal(at, want) {
		t.Errorf("virtual times: got %v, want %v", at, want)
	}
}

func TestEngine_External_TimeoutThenLateReport(t *testing.T) {
	// beta is external; SECOND times out after 30s and b_lost leads to FAILED.
	r := newSimRun(t, "chain.yaml", map[string][]reply{"alpha": {ok("next", nil)}})
	ctx := t.Context()
	inst := r.start(nil) // runs until the time-out has fired
	res := inst.Result()
	wantCompleted(t, res, "FAILED")
	if got := r.sim.Now().Sub(epoch); got != 30*time.Second {
		t.Errorf("got virtual time %s, want 30s", got)
	}
	m := receiveOne(t, busOf(r.eng), "beta")
	err := reportWork(ctx, r.eng, m, registry.Outcome{Trigger: "next"}, nil)
	if !errors.Is(err, engine.ErrStaleReport) {
		t.Fatalf("got %v, want ErrStaleReport", err)
	}
	h := history(t, inst)
	runs := entries(h, record.KindAgentRun)
	if len(runs) != 2 || runs[1].Error != "engine: run timed out: beta did not finish within 30s" {
		t.Errorf("got runs %+v, want beta's run timed out", runs)
	}
	if late := entries(h, record.KindLateReply); len(late) != 1 || late[0].Step != 2 {
		t.Errorf("got late replies %+v, want one for step 2", late)
	}
}

func TestEngine_External_RejectsTheHandoff(t *testing.T) {
	// reviewer is external and refuses its hand-off.
	r := newSimRun(t, "reject.yaml", map[string][]reply{"asker": {ok("ask", nil)}})
	ctx := t.Context()
	inst, err := r.eng.Start(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	r.runUntil(r.queued("reviewer"))
	m, err := busOf(r.eng).ReceiveWait(ctx, "reviewer")
	if err != nil {
		t.Fatal(err)
	}
	if err := reportWork(ctx, r.eng, m, registry.Outcome{}, registry.Reject("not my job")); err != nil {
		t.Fatalf("report: %v", err)
	}
	r.settle()
	res := inst.Result()
	wantCompleted(t, res, "BOUNCED")
	if res.Context["why"] != "not my job" || res.Context["state"] != "REVIEW" {
		t.Errorf("got context %v, want the reason in REVIEW", res.Context)
	}
	if st := handoffStats(t, r.eng); st.Rejected != 1 {
		t.Errorf("got hand-off stats %+v, want one rejected", st)
	}
	if n := len(entries(history(t, inst), record.KindRetry)); n != 0 {
		t.Errorf("got %d retries, want none", n)
	}
	// The sender learns of it from the instance's history: its hand-off's
	// record is rejected, with the reason.
	if recs := handoffHistory(t, r.eng, inst.ID()); len(recs) != 1 || recs[0].From != "asker" || recs[0].Status != handoff.StatusRejected || recs[0].Detail != "not my job" {
		t.Errorf("got records %+v, want asker's hand-off rejected with the reason", recs)
	}
}

// A handler that defers its outcome (an HTTP agent that answered 202, say)
// leaves its run under way until the outcome is reported.
func TestEngine_DeferredOutcomeIsReportedLater(t *testing.T) {
	taken := make(chan struct{})
	deferred := registry.HandlerFunc(func(context.Context, *registry.Task) (registry.Outcome, error) {
		close(taken)
		return registry.Outcome{}, registry.Deferred()
	})
	eng := poolEngine(t, "chain.yaml", map[string]registry.Handler{
		"alpha": deferred, "beta": answer("next", nil), "gamma": answer("next", nil), "watch": answer("seen", nil),
	})
	defer eng.Close()
	inst, err := eng.Start(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	<-taken
	if res := inst.Result(); res.Status != record.StatusRunning || res.State != "FIRST" {
		t.Fatalf("got %s in %s, want the run still under way in FIRST", res.Status, res.State)
	}
	if err := eng.Report(t.Context(), inst.ID(), 1, registry.Outcome{Trigger: "next"}, nil); err != nil {
		t.Fatalf("the deferred report: %v", err)
	}
	res, err := inst.Wait(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	wantCompleted(t, res, "DONE")
}

// unavailableTransport is a bus whose SendWork fails the way a transport
// whose server does not answer does (transport.ErrUnavailable), as many times
// as it is told to.
type unavailableTransport struct {
	*bus.Bus
	fails atomic.Int64
	sends atomic.Int64
}

func (u *unavailableTransport) SendWork(ctx context.Context, m *transport.Message) error {
	u.sends.Add(1)
	if u.fails.Add(-1) >= 0 {
		return fmt.Errorf("natsbus: send %s: %w: context deadline exceeded", m.MessageID, transport.ErrUnavailable)
	}
	return u.Bus.SendWork(ctx, m)
}

// Work the transport cannot take for now is sent again, with a growing
// pause, until it can: the run waits as if its work had gone out, and
// fails for no refusal but a lasting one.
func TestEngine_External_WorkTheTransportCannotTakeIsSentAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := bus.New(bus.WithAckMessages(false))
		defer b.Close()
		tr := &unavailableTransport{Bus: b}
		tr.fails.Store(3)
		eng := poolEngine(t, "chain.yaml", map[string]registry.Handler{
			"alpha": answer("next", nil), "beta": answer("next", nil), "watch": answer("seen", nil),
		}, engine.WithTransport(tr))
		defer eng.Close()
		inst, err := eng.Start(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if n := tr.sends.Load(); n != 1 {
			t.Fatalf("got %d sends to gamma, want 1 so far", n)
		}
		time.Sleep(10 * time.Second) // past three pauses: 0.5s, 1s, 2s
		synctest.Wait()
		if n := tr.sends.Load(); n != 4 {
			t.Fatalf("got %d sends to gamma, want 4: three refused, then one taken", n)
		}
		wantCompleted(t, answerGamma(t, eng, b, inst), "DONE")
		for _, e := range entries(history(t, inst), record.KindAgentRun) {
			if e.Error != "" {
				t.Errorf("got a failed run %+v, want none: the refusals were for now", e)
			}
		}
	})
}

// stallingTransport refuses its first send of work for now, then holds
// every later send until released: a transport whose server answers late.
type stallingTransport struct {
	*bus.Bus
	sends   atomic.Int64
	release chan struct{}
}

func (s *stallingTransport) SendWork(ctx context.Context, m *transport.Message) error {
	if s.sends.Add(1) == 1 {
		return fmt.Errorf("natsbus: send %s: %w", m.MessageID, transport.ErrUnavailable)
	}
	select {
	case <-s.release:
	case <-ctx.Done():
		return ctx.Err()
	}
	return s.Bus.SendWork(ctx, m)
}

// A send tried again waits on the transport away from the worker pool:
// another instance's timeout still fires while it waits.
func TestEngine_External_ASendTriedAgainDoesNotHoldThePool(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := bus.New(bus.WithAckMessages(false))
		defer b.Close()
		tr := &stallingTransport{Bus: b, release: make(chan struct{})}
		beta := registry.HandlerFunc(func(ctx context.Context, task *registry.Task) (registry.Outcome, error) {
			if task.Input["stall"] == true {
				<-ctx.Done() // until its timeout
				return registry.Outcome{}, ctx.Err()
			}
			return registry.Outcome{Trigger: "next"}, nil
		})
		eng := poolEngine(t, "chain.yaml", map[string]registry.Handler{
			"alpha": answer("next", nil), "beta": beta, "watch": answer("seen", nil),
		}, engine.WithTransport(tr), engine.WithWorkers(1))
		defer eng.Close()
		a, err := eng.Start(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second) // gamma's work refused, then sent again and held
		synctest.Wait()
		if n := tr.sends.Load(); n != 2 {
			t.Fatalf("got %d sends, want the second one held", n)
		}
		stalled, err := eng.Start(t.Context(), map[string]any{"stall": true})
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(31 * time.Second) // past beta's timeout of 30s
		synctest.Wait()
		if res := stalled.Result(); res.Status != record.StatusCompleted || res.Outcome != "FAILED" {
			t.Fatalf("got %s %s, want the stalled instance ended in FAILED by its timeout while the send waits", res.Status, res.Outcome)
		}
		close(tr.release)
		wantCompleted(t, answerGamma(t, eng, b, a), "DONE")
	})
}

// answerGamma takes gamma's work from b, reports it done and waits for
// the instance's end.
func answerGamma(t *testing.T, eng *engine.Engine, b *bus.Bus, inst *engine.Instance) engine.Result {
	t.Helper()
	m, err := b.ReceiveWait(t.Context(), "gamma")
	if err != nil {
		t.Fatal(err)
	}
	if err := reportWork(t.Context(), eng, m, registry.Outcome{Trigger: "next"}, nil); err != nil {
		t.Fatal(err)
	}
	res, err := inst.Wait(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return res
}
