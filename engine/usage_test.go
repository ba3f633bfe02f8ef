package engine_test

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/batonhq/baton/clock"
	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/record"
	"github.com/batonhq/baton/registry"
	"github.com/batonhq/baton/replay"
	"github.com/batonhq/baton/transport"
	"github.com/batonhq/baton/wire"
)

// used reports trigger with usage u.
func used(trigger string, u registry.Usage) reply {
	return func(context.Context, *clock.Sim, *registry.Task) (registry.Outcome, error) {
		return registry.Outcome{Trigger: trigger, Usage: u}, nil
	}
}

func TestEngine_Usage_GoHandlerBadUsageFailsTheRun(t *testing.T) {
	for name, u := range map[string]registry.Usage{
		"negative tokens": {InputTokens: -1},
		"negative cost":   {Cost: -0.5},
		"NaN cost":        {Cost: math.NaN()},
		"infinite cost":   {Cost: math.Inf(1)},
	} {
		t.Run(name, func(t *testing.T) {
			// DRAFT retries twice: each bad report is a failed run, the
			// third ends the retries and fails the instance (no rule reads
			// error).
			r := newSimRun(t, "usage.yaml", map[string][]reply{"writer": repeat(3, used("drafted", u))})
			res, h := r.finish(nil)
			wantFailed(t, res, "no rule")
			runs := entries(h, "agent_run")
			if len(runs) != 3 {
				t.Fatalf("got %d agent_run entries, want 3 (history %s)", len(runs), kinds(h))
			}
			for _, e := range runs {
				if e.ErrorKind != "invalid_result" || e.Trigger != "" {
					t.Errorf("got run kind %q trigger %q error %q, want kind invalid_result and no trigger", e.ErrorKind, e.Trigger, e.Error)
				}
			}
		})
	}
}

// usedFail fails the run (retryable) after using u.
func usedFail(msg string, u registry.Usage) reply {
	return func(context.Context, *clock.Sim, *registry.Task) (registry.Outcome, error) {
		return registry.Outcome{Usage: u}, errors.New(msg)
	}
}

// sumRuns adds up the usage the history's agent_run entries carry.
func sumRuns(h []record.Entry) registry.Ledger {
	var l registry.Ledger
	for _, e := range entries(h, record.KindAgentRun) {
		l = l.Add(e.Agent, e.Usage)
	}
	return l
}

func TestEngine_Usage_TotalsPerInstanceAndAgent(t *testing.T) {
	w := registry.Usage{InputTokens: 100, OutputTokens: 40, Cost: 0.25, Model: "writer-1"}
	c := registry.Usage{InputTokens: 60, OutputTokens: 5, Cost: 0.125}
	r := newSimRun(t, "usage.yaml", map[string][]reply{
		// the first draft fails after using w: a failed run's usage counts
		"writer": {usedFail("model overloaded", w), used("drafted", w), used("drafted", w)},
		"critic": {used("revise", c), used("accepted", c)},
	})
	res, h := r.finish(nil)
	wantCompleted(t, res, "DONE")
	want := registry.Totals{InputTokens: 420, OutputTokens: 130, Tokens: 550, Cost: 1}
	if res.Usage.Totals != want {
		t.Errorf("got totals %+v, want %+v", res.Usage.Totals, want)
	}
	if got := res.Usage.Agents.Of("writer"); got != (registry.Totals{InputTokens: 300, OutputTokens: 120, Tokens: 420, Cost: 0.75}) {
		t.Errorf("got writer's totals %+v, want three runs' worth", got)
	}
	if got := res.Usage.Agents.Of("critic"); got != (registry.Totals{InputTokens: 120, OutputTokens: 10, Tokens: 130, Cost: 0.25}) {
		t.Errorf("got critic's totals %+v, want two runs' worth", got)
	}
	if sum := sumRuns(h); sum.Totals != res.Usage.Totals {
		t.Errorf("got agent_run entries summing to %+v, want the totals %+v", sum.Totals, res.Usage.Totals)
	}
	runs := entries(h, record.KindAgentRun)
	if runs[0].Usage != w || runs[0].Error == "" {
		t.Errorf("got first run %+v, want the failed run with its usage", runs[0])
	}
	snap, err := r.eng.Store().Instance(t.Context(), res.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(snap.Usage, res.Usage) {
		t.Errorf("got stored usage %+v, want %+v", snap.Usage, res.Usage)
	}
	var reported []registry.Usage
	for _, ev := range r.events {
		if ev.Type == engine.EventAgentReported {
			reported = append(reported, ev.Usage)
		}
	}
	if !slices.Equal(reported, []registry.Usage{w, w, c, w, c}) {
		t.Errorf("got agent_reported usage %v, want each run's", reported)
	}
}

func TestEngine_Usage_NothingReportedIsZero(t *testing.T) {
	r := newSimRun(t, "usage.yaml", map[string][]reply{
		"writer": {ok("drafted", nil)},
		"critic": {ok("accepted", nil)},
	})
	res, _ := r.finish(nil)
	wantCompleted(t, res, "DONE")
	if res.Usage.Totals != (registry.Totals{}) || res.Usage.Agents != nil {
		t.Errorf("got %+v, want zero usage", res.Usage)
	}
	if res.Context["seen"] != int64(0) {
		t.Errorf("got context seen %#v, want usage.tokens read as 0", res.Context["seen"])
	}
}

// Conditions, tasks and context values see the instance's totals with the
// reporting run's usage included.
func TestEngine_Usage_VisibleToExpressions(t *testing.T) {
	r := newSimRun(t, "usage.yaml", map[string][]reply{
		"writer": {used("drafted", registry.Usage{InputTokens: 7, OutputTokens: 3, Cost: 0.5}), used("drafted", registry.Usage{Cost: 0.25})},
		"critic": {used("revise", registry.Usage{OutputTokens: 2, Cost: 0.25}), used("revise", registry.Usage{Cost: 0.5})},
	})
	res, h := r.finish(nil)
	// critic's first revise: cost 0.75, not over 1: revise (task reads the
	// tokens, 12); its second: cost 1.5: pricey.
	wantCompleted(t, res, "PRICEY")
	if got := fired(h); !slices.Equal(got, []string{"drafted", "revise", "drafted", "pricey"}) {
		t.Errorf("got rules %v, want drafted, revise, drafted, pricey", got)
	}
	if runs := r.script.runsOf("writer"); len(runs) != 2 || runs[1].Task.Description != "revise, spent 12" {
		t.Errorf("got writer runs %+v, want the second with task %q", runs, "revise, spent 12")
	}
	if res.Context["seen"] != int64(12) {
		t.Errorf("got context seen %#v, want 12 (the second draft reported no tokens)", res.Context["seen"])
	}
}

// reportUsage answers the work m with trigger and usage through
// HandleReport, as an agent on a transport does.
func reportUsage(t *testing.T, eng *engine.Engine, m *transport.Message, trigger string, u registry.Usage) wire.Answer {
	t.Helper()
	task, err := wire.Decode(m)
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	return eng.HandleReport(t.Context(), &wire.Report{InstanceID: task.InstanceID, Step: task.Step, Agent: task.Agent, Trigger: trigger, Usage: u})
}

// A run's usage counts once: a report sent again (to the same engine, or
// to the engine that resumed the instance after a restart) is stale and
// changes no total.
func TestEngine_Usage_CountedOnceAcrossStaleReportsAndRestarts(t *testing.T) {
	ctx := t.Context()
	src, err := os.ReadFile(filepath.Join("testdata", "usage.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	store := record.NewMemStore()
	w := registry.Usage{InputTokens: 100, OutputTokens: 40, Cost: 0.25}
	c := registry.Usage{InputTokens: 60, OutputTokens: 5, Cost: 0.125}

	first := externalEngine(t, string(src), store)
	inst, err := first.Start(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	draft, err := busOf(first).ReceiveWait(ctx, "writer")
	if err != nil {
		t.Fatal(err)
	}
	if ans := reportUsage(t, first, draft, "drafted", w); !ans.OK {
		t.Fatalf("got %+v, want ok", ans)
	}
	if ans := reportUsage(t, first, draft, "drafted", w); ans.Code != wire.CodeStale {
		t.Fatalf("second report: got %+v, want stale", ans)
	}
	critique, err := busOf(first).ReceiveWait(ctx, "critic")
	if err != nil {
		t.Fatal(err)
	}
	if ans := reportUsage(t, first, critique, "revise", c); !ans.OK {
		t.Fatalf("got %+v, want ok", ans)
	}
	if got := inst.Result().Usage.Totals; got != (registry.Totals{}).Add(w).Add(c) {
		t.Fatalf("got totals %+v before the restart, want one draft and one critique", got)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}

	second := externalEngine(t, string(src), store)
	if _, err := second.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	// The critic, unsure its report arrived, sends it again.
	if ans := reportUsage(t, second, critique, "revise", c); ans.Code != wire.CodeStale {
		t.Fatalf("report after the restart: got %+v, want stale", ans)
	}
	redraft, err := busOf(second).ReceiveWait(ctx, "writer")
	if err != nil {
		t.Fatal(err)
	}
	if ans := reportUsage(t, second, redraft, "drafted", w); !ans.OK {
		t.Fatalf("got %+v, want ok", ans)
	}
	last, err := busOf(second).ReceiveWait(ctx, "critic")
	if err != nil {
		t.Fatal(err)
	}
	if ans := reportUsage(t, second, last, "accepted", c); !ans.OK {
		t.Fatalf("got %+v, want ok", ans)
	}
	h, err := second.Instance(inst.ID())
	if err != nil {
		t.Fatal(err)
	}
	res, err := h.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wantCompleted(t, res, "DONE")
	want := registry.Totals{}.Add(w).Add(c).Add(w).Add(c)
	if res.Usage.Totals != want {
		t.Errorf("got totals %+v, want %+v (each run once)", res.Usage.Totals, want)
	}
	hist := history(t, h)
	if sum := sumRuns(hist); !reflect.DeepEqual(sum.Agents, res.Usage.Agents) || sum.Totals != want {
		t.Errorf("got agent_run entries summing to %+v, want the totals %+v", sum, res.Usage)
	}
	for _, e := range entries(hist, record.KindLateReply) {
		if !e.Usage.IsZero() {
			t.Errorf("got late reply %+v with usage, want a stale report's usage left out", e)
		}
	}
}

// A parent's totals include its child's: the child's usage is counted as
// its workflow state's outcome, which carries it in the parent's history.
func TestEngine_Usage_ParentCountsItsChild(t *testing.T) {
	r := newChildRun(t, map[string][]reply{
		"signup":   {used("signed", registry.Usage{Cost: 0.25})},
		"checker":  {used("ok", registry.Usage{InputTokens: 80, OutputTokens: 20, Cost: 0.5})},
		"welcomer": {used("welcomed", registry.Usage{Cost: 0.125})},
	})
	res, h := r.finish(nil)
	wantCompleted(t, res, "DONE")
	if want := (registry.Totals{InputTokens: 80, OutputTokens: 20, Tokens: 100, Cost: 0.875}); res.Usage.Totals != want {
		t.Errorf("got parent totals %+v, want %+v", res.Usage.Totals, want)
	}
	if got := res.Usage.Agents.Of("checker"); got.Cost != 0.5 || got.Tokens != 100 {
		t.Errorf("got the child's agent's totals %+v in the parent, want cost 0.5 and 100 tokens", got)
	}
	var fromChild registry.Usage
	for _, e := range entries(h, record.KindOutcome) {
		if e.State == "KYC" {
			fromChild = e.Usage
		}
	}
	if fromChild != (registry.Usage{InputTokens: 80, OutputTokens: 20, Cost: 0.5}) {
		t.Errorf("got the KYC outcome's usage %+v, want the child's totals", fromChild)
	}
	rep, err := replay.Check(r.eng.Workflow(), h)
	if err != nil || rep.Divergence != nil {
		t.Errorf("replay: got %v, %+v, want no divergence", err, rep)
	}
}

// Report refuses bad usage at the door: the run is still under way.
func TestEngine_Usage_ReportRefusesBadUsage(t *testing.T) {
	ctx := t.Context()
	r := newSimRun(t, "usage.yaml", nil) // every agent external
	inst, err := r.eng.Start(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	r.settle()
	var ie *engine.InputError
	err = r.eng.Report(ctx, inst.ID(), 1, registry.Outcome{Trigger: "drafted", Usage: registry.Usage{Cost: math.Inf(1)}}, nil)
	if !errors.As(err, &ie) || ie.Field != "usage.cost" {
		t.Fatalf("got %v, want an *InputError naming usage.cost", err)
	}
	err = r.eng.Report(ctx, inst.ID(), 1, registry.Outcome{Usage: registry.Usage{OutputTokens: -2}}, errors.New("model down"))
	if !errors.As(err, &ie) || ie.Field != "usage.output_tokens" {
		t.Fatalf("failed run: got %v, want an *InputError naming usage.output_tokens", err)
	}
	if res := inst.Result(); res.Status != record.StatusRunning || res.Steps != 1 || res.Usage.Cost != 0 {
		t.Errorf("got %+v, want the run still under way and nothing counted", res)
	}
	if err := r.eng.Report(ctx, inst.ID(), 1, registry.Outcome{Trigger: "drafted", Usage: registry.Usage{Cost: 0.5}}, nil); err != nil {
		t.Fatalf("good report: %v", err)
	}
	if got := inst.Result().Usage.Cost; got != 0.5 {
		t.Errorf("got cost %v, want 0.5", got)
	}
}
