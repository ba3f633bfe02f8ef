package engine_test

import (
	"cmp"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/clock"
	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/record"
	"github.com/batonhq/baton/registry"
	"github.com/batonhq/baton/replay"
	"github.com/batonhq/baton/rules"
)

// budgetWorkflow loads testdata/budget.yaml with the edits applied (old,
// new, old, new, ...).
func budgetWorkflow(t testing.TB, edits ...string) *rules.Workflow {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("testdata", "budget.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(src)
	for k := 0; k+1 < len(edits); k += 2 {
		if !strings.Contains(s, edits[k]) {
			t.Fatalf("edit %q does not apply", edits[k])
		}
		s = strings.Replace(s, edits[k], edits[k+1], 1)
	}
	w, err := rules.Parse(filepath.Join("testdata", "budget.yaml"), []byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return w
}

var noOnLimit = []string{"  on_limit: SUMMARY\n", ""}

func cost(c float64) registry.Usage       { return registry.Usage{Cost: c} }
func tokens(in, out int64) registry.Usage { return registry.Usage{InputTokens: in, OutputTokens: out} }

func TestEngine_Budgets(t *testing.T) {
	loop := func(w, c registry.Usage, n int) map[string][]reply {
		return map[string][]reply{"writer": repeat(n, used("drafted", w)), "critic": repeat(n, used("revise", c))}
	}
	withCloser := func(agents map[string][]reply) map[string][]reply {
		agents["closer"] = []reply{ok("done", nil)}
		return agents
	}
	tests := []struct {
		name      string
		edits     []string
		agents    map[string][]reply
		wantPath  []string
		wantState string // the outcome when completed, the state when failed
		wantErr   string // "" when the instance must complete
		wantLimit engine.LimitError
		wantRuns  int // agent runs, the crossing one included
	}{
		{
			// 0.25 + 0.125 per round: the critic's third report makes 1.125.
			name: "max_cost enters on_limit", agents: withCloser(loop(cost(0.25), cost(0.125), 3)),
			wantPath:  []string{"DRAFT", "CRITIQUE", "DRAFT", "CRITIQUE", "DRAFT", "CRITIQUE", "SUMMARY", "STOPPED"},
			wantState: "STOPPED",
			wantLimit: engine.LimitError{Limit: "max_cost", State: "DRAFT", Total: 1.125, Budget: 1},
			wantRuns:  7,
		},
		{
			name: "max_cost fails without on_limit", edits: noOnLimit, agents: loop(cost(0.25), cost(0.125), 3),
			wantPath: []string{"DRAFT", "CRITIQUE", "DRAFT", "CRITIQUE", "DRAFT", "CRITIQUE"}, wantState: "CRITIQUE",
			wantErr:   "engine: limit max_cost exceeded: the instance's runs cost 1.125 (max 1)",
			wantLimit: engine.LimitError{Limit: "max_cost", State: "DRAFT", Total: 1.125, Budget: 1},
			wantRuns:  6,
		},
		{
			// 400 tokens per draft: the third draft makes 1200.
			name: "max_tokens enters on_limit", agents: withCloser(map[string][]reply{"writer": repeat(3, used("drafted", tokens(300, 100))), "critic": repeat(2, used("revise", tokens(0, 0)))}),
			wantPath:  []string{"DRAFT", "CRITIQUE", "DRAFT", "CRITIQUE", "DRAFT", "SUMMARY", "STOPPED"},
			wantState: "STOPPED",
			wantLimit: engine.LimitError{Limit: "max_tokens", State: "CRITIQUE", Count: 1200, Max: 1000, Total: 1200, Budget: 1000},
			wantRuns:  6,
		},
		{
			name: "max_tokens fails without on_limit", edits: noOnLimit,
			agents:   map[string][]reply{"writer": repeat(3, used("drafted", tokens(300, 100))), "critic": repeat(2, used("revise", tokens(0, 0)))},
			wantPath: []string{"DRAFT", "CRITIQUE", "DRAFT", "CRITIQUE", "DRAFT"}, wantState: "DRAFT",
			wantErr:   "engine: limit max_tokens exceeded: the instance's runs used 1200 tokens (max 1000)",
			wantLimit: engine.LimitError{Limit: "max_tokens", State: "CRITIQUE", Count: 1200, Max: 1000, Total: 1200, Budget: 1000},
			wantRuns:  5,
		},
		{
			name: "a state's own max_cost per visit", edits: noOnLimit,
			agents:   map[string][]reply{"writer": {used("drafted", cost(0.25))}, "critic": {used("revise", cost(0.625))}},
			wantPath: []string{"DRAFT", "CRITIQUE"}, wantState: "CRITIQUE",
			wantErr:   "engine: limit max_cost exceeded: the runs of this visit of state CRITIQUE cost 0.625 (max 0.5)",
			wantLimit: engine.LimitError{Limit: "max_cost", State: "CRITIQUE", Total: 0.625, Budget: 0.5, Visit: true},
			wantRuns:  2,
		},
		{
			// 0.375 per visit of CRITIQUE: 0.75 in all, but never 0.5 in one.
			name: "a state's budget starts again with each visit", edits: noOnLimit,
			agents: map[string][]reply{
				"writer": repeat(2, used("drafted", cost(0))),
				"critic": {used("revise", cost(0.375)), used("accepted", cost(0.375))},
			},
			wantPath: []string{"DRAFT", "CRITIQUE", "DRAFT", "CRITIQUE", "DONE"}, wantState: "DONE",
			wantRuns: 4,
		},
		{
			name: "entering a terminal state is never refused", edits: noOnLimit,
			agents:   map[string][]reply{"writer": {used("drafted", cost(0.25))}, "critic": {used("accepted", cost(5))}},
			wantPath: []string{"DRAFT", "CRITIQUE", "DONE"}, wantState: "DONE",
			wantRuns: 2,
		},
		{
			// The failed run's usage counts, and no retry spends more.
			name: "a failed run over budget is not retried", agents: withCloser(map[string][]reply{"writer": {usedFail("model overloaded", cost(1.5))}}),
			wantPath:  []string{"DRAFT", "SUMMARY", "STOPPED"},
			wantState: "STOPPED",
			wantLimit: engine.LimitError{Limit: "max_cost", State: "DRAFT", Total: 1.5, Budget: 1},
			wantRuns:  2,
		},
		{
			name: "a hit while in the on_limit state fails", edits: []string{"trigger: done,     next: STOPPED", "trigger: done,     next: DRAFT"},
			agents:   withCloser(loop(cost(0.25), cost(0.125), 3)),
			wantPath: []string{"DRAFT", "CRITIQUE", "DRAFT", "CRITIQUE", "DRAFT", "CRITIQUE", "SUMMARY"}, wantState: "SUMMARY",
			wantErr:   "engine: limit max_cost exceeded: the instance's runs cost 1.125 (max 1)",
			wantLimit: engine.LimitError{Limit: "max_cost", State: "DRAFT", Total: 1.125, Budget: 1},
			wantRuns:  7,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newSimRunOf(t, budgetWorkflow(t, tt.edits...), tt.agents)
			res, h := r.finish(nil)
			if tt.wantErr == "" {
				wantCompleted(t, res, tt.wantState)
			} else {
				wantFailed(t, res, tt.wantErr)
				var le *engine.LimitError
				if !errors.As(res.Err, &le) || !errors.Is(res.Err, engine.ErrLimit) || *le != tt.wantLimit {
					t.Fatalf("got %#v, want %#v matching ErrLimit", res.Err, tt.wantLimit)
				}
				if res.State != tt.wantState {
					t.Errorf("got state %s, want %s", res.State, tt.wantState)
				}
				if fails := entries(h, record.KindFailed); len(fails) != 1 || fails[0].ErrorKind != tt.wantLimit.Limit {
					t.Errorf("got failed entries %+v, want one of kind %s", fails, tt.wantLimit.Limit)
				}
			}
			if got := path(h); !slices.Equal(got, tt.wantPath) {
				t.Errorf("path: got %v, want %v", got, tt.wantPath)
			}
			runs := entries(h, record.KindAgentRun)
			if len(runs) != tt.wantRuns {
				t.Errorf("got %d runs, want %d (history %s)", len(runs), tt.wantRuns, kinds(h))
			}
			if sum := sumRuns(h); sum.Totals != res.Usage.Totals {
				t.Errorf("got runs summing to %+v, want the totals %+v: the crossing run counts", sum.Totals, res.Usage.Totals)
			}
			hits := entries(h, record.KindLimitHit)
			if tt.wantLimit.Limit == "" {
				if len(hits) != 0 {
					t.Errorf("got limit hits %+v, want none", hits)
				}
				return
			}
			if len(hits) == 0 {
				t.Fatalf("got no limit_hit entry (history %s)", kinds(h))
			}
			if hit := hits[0]; hit.Limit != tt.wantLimit.Limit || hit.Next != tt.wantLimit.State || hit.Error != tt.wantLimit.Error() {
				t.Errorf("got limit hit %+v, want limit %s, next %s, error %q", hit, tt.wantLimit.Limit, tt.wantLimit.State, tt.wantLimit.Error())
			}
			var ev *engine.Event
			for k := range r.events {
				if r.events[k].Type == engine.EventLimitHit {
					ev = &r.events[k]
					break
				}
			}
			if ev == nil || ev.Limit != tt.wantLimit.Limit || ev.Total != tt.wantLimit.Total || ev.Budget != tt.wantLimit.Budget {
				t.Errorf("got limit_hit event %+v, want limit %s, total %v, budget %v", ev, tt.wantLimit.Limit, tt.wantLimit.Total, tt.wantLimit.Budget)
			}
		})
	}
}

// The crossing report is applied: its run and outcome are recorded and its
// rule is chosen, then the limit takes the rule's place, and the rule's
// hand-off is dropped.
func TestEngine_Budgets_TheCrossingReportIsApplied(t *testing.T) {
	r := newSimRunOf(t, budgetWorkflow(t), map[string][]reply{
		"writer": {used("drafted", cost(1.5))},
		"closer": {ok("done", nil)},
	})
	res, h := r.finish(nil)
	wantCompleted(t, res, "STOPPED")
	var seen []string
	for _, e := range h {
		switch e.Kind {
		case record.KindAgentRun, record.KindOutcome, record.KindRuleFired, record.KindLimitHit, record.KindTransition:
			seen = append(seen, string(e.Kind)+":"+e.Agent+e.Rule+e.Next)
		}
	}
	want := []string{"agent_run:writer", "outcome:writer", "rule_fired:writerdraftedCRITIQUE", "limit_hit:CRITIQUE", "transition:@on_limitSUMMARY", "agent_run:closer", "outcome:closer", "rule_fired:closersummedSTOPPED", "transition:summedSTOPPED"}
	if !slices.Equal(seen, want) {
		t.Errorf("got %v, want %v", seen, want)
	}
	if runs := r.script.runsOf("closer"); len(runs) != 1 || runs[0].Task.Reason != "on_limit" || !strings.Contains(runs[0].Task.Description, "max_cost") {
		t.Errorf("got closer runs %+v, want one on_limit run naming max_cost", runs)
	}
}

// max_duration fires on the engine's clock while the instance waits for a
// signal, an hour after it started.
func TestEngine_Budgets_MaxDurationFiresDuringAWait(t *testing.T) {
	for _, onLimit := range []bool{true, false} {
		t.Run(map[bool]string{true: "on_limit", false: "fails"}[onLimit], func(t *testing.T) {
			var edits []string
			if !onLimit {
				edits = noOnLimit
			}
			agents := map[string][]reply{"writer": {takes(10*time.Minute, used("drafted", cost(0.25)))}, "critic": {used("sign", cost(0))}}
			if onLimit {
				agents["closer"] = []reply{ok("done", nil)}
			}
			r := newSimRunOf(t, budgetWorkflow(t, edits...), agents)
			res, h := r.finish(nil)
			want := engine.LimitError{Limit: "max_duration", State: "SIGN", Total: 3600, Budget: 3600}
			if onLimit {
				wantCompleted(t, res, "STOPPED")
			} else {
				wantFailed(t, res, "engine: limit max_duration exceeded: the instance has run for 1h0m0s (max 1h0m0s), in state SIGN")
			}
			hits := entries(h, record.KindLimitHit)
			if len(hits) != 1 || hits[0].Limit != "max_duration" || hits[0].Error != want.Error() || !hits[0].Time.Equal(epoch.Add(time.Hour)) {
				t.Fatalf("got limit hits %+v, want one max_duration hit at %v", hits, epoch.Add(time.Hour))
			}
		})
	}
}

// A run under way when max_duration passes is abandoned: its late report is
// stale and changes nothing.
func TestEngine_Budgets_MaxDurationAbandonsTheRunUnderWay(t *testing.T) {
	r := newSimRunOf(t, budgetWorkflow(t, noOnLimit...), nil) // the writer is external, and never answers in time
	inst, err := r.eng.Start(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	r.runUntil(r.queued("writer"))
	m, err := busOf(r.eng).ReceiveWait(t.Context(), "writer")
	if err != nil {
		t.Fatal(err)
	}
	r.settle()
	wantFailed(t, inst.Result(), "limit max_duration exceeded: the instance has run for 1h0m0s (max 1h0m0s), in state DRAFT")
	if ans := reportUsage(t, r.eng, m, "drafted", cost(0.25)); ans.Code != "stale" {
		t.Errorf("got %+v for the abandoned run's report, want stale", ans)
	}
	if res := inst.Result(); res.State != "DRAFT" || res.Usage.Cost != 0 || res.Steps != 1 {
		t.Errorf("got state %s usage %+v steps %d, want DRAFT, nothing counted, one step", res.State, res.Usage, res.Steps)
	}
}

// After a restart, max_duration is armed again from the instance's
// creation time: the hour counts from the start, not from the restart, and
// a deadline that passed while the engine was down hits at once.
func TestEngine_Budgets_MaxDurationAfterARestart(t *testing.T) {
	tests := []struct {
		restart time.Duration // after the start
		hitAt   time.Duration
		ran     string
	}{
		{50 * time.Minute, time.Hour, "1h0m0s"},
		{3 * time.Hour, 3 * time.Hour, "3h0m0s"},
	}
	for _, tt := range tests {
		t.Run(tt.restart.String(), func(t *testing.T) {
			ctx := context.Background()
			w := budgetWorkflow(t, noOnLimit...)
			store := record.NewMemStore()
			newEngine := func(sim *clock.Sim) *engine.Engine {
				reg, err := engine.NewRegistry(w, map[string]registry.Handler{
					"writer": registry.HandlerFunc(func(context.Context, *registry.Task) (registry.Outcome, error) {
						return registry.Outcome{Trigger: "drafted"}, nil
					}),
					"critic": registry.HandlerFunc(func(context.Context, *registry.Task) (registry.Outcome, error) {
						return registry.Outcome{Trigger: "sign"}, nil
					}),
				})
				if err != nil {
					t.Fatal(err)
				}
				eng, err := newEngine(w, reg, engine.WithStore(store), engine.WithClock(sim), engine.WithExecutor(sim), engine.WithIDs(counter("inst")))
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = eng.Close() })
				return eng
			}
			sim1 := clock.NewSim(epoch)
			first := newEngine(sim1)
			inst, err := first.Start(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := sim1.Run(ctx, func() bool { return inst.Result().Waiting == "SIGN" }); err != nil {
				t.Fatal(err)
			}
			if err := first.Close(); err != nil {
				t.Fatal(err)
			}

			sim2 := clock.NewSim(epoch.Add(tt.restart))
			second := newEngine(sim2)
			if _, err := second.Resume(ctx); err != nil {
				t.Fatal(err)
			}
			if err := sim2.Run(ctx, nil); err != nil {
				t.Fatal(err)
			}
			h, err := second.Instance(inst.ID())
			if err != nil {
				t.Fatal(err)
			}
			wantFailed(t, h.Result(), "engine: limit max_duration exceeded: the instance has run for "+tt.ran+" (max 1h0m0s), in state SIGN")
			hits := entries(history(t, h), record.KindLimitHit)
			if len(hits) != 1 || !hits[0].Time.Equal(epoch.Add(tt.hitAt)) {
				t.Errorf("got limit hits %+v, want one at %v", hits, epoch.Add(tt.hitAt))
			}
		})
	}
}

// A foreach state's item that takes the usage over a budget stops the
// state at once: the items not yet run never run.
func TestEngine_Budgets_ForeachStopsAtTheCrossingItem(t *testing.T) {
	w, err := rules.Parse("each.yaml", []byte(`
workflow: each
initial: SPLIT
agents: {splitter: {}, reviewer: {}}
limits: {max_cost: 1}
states:
  SPLIT: {agent: splitter}
  REVIEWS:
    foreach: {items: result.docs, agent: reviewer, max_concurrency: 1}
  DONE: {terminal: true}
rules:
  - {id: split, from: splitter, trigger: split, next: REVIEWS}
  - {id: all, from: REVIEWS, trigger: joined, next: DONE}
`))
	if err != nil {
		t.Fatal(err)
	}
	r := newSimRunOf(t, w, map[string][]reply{
		"splitter": {ok("split", map[string]any{"docs": []any{1, 2, 3, 4, 5}})},
		"reviewer": repeat(3, used("reviewed", cost(0.5))),
	})
	res, h := r.finish(nil)
	wantFailed(t, res, "engine: limit max_cost exceeded: the instance's runs cost 1.5 (max 1)")
	if runs := entries(h, record.KindAgentRun); len(runs) != 4 {
		t.Errorf("got %d runs, want the splitter's and three items' (history %s)", len(runs), kinds(h))
	}
	if res.Usage.Cost != 1.5 || res.State != "REVIEWS" {
		t.Errorf("got cost %v in %s, want 1.5 in REVIEWS", res.Usage.Cost, res.State)
	}
}

// A parallel branch that takes the usage over a budget stops the state at
// once: the other branches are abandoned, their reports stale.
func TestEngine_Budgets_ParallelStopsAtTheCrossingBranch(t *testing.T) {
	w, err := rules.Parse("fan.yaml", []byte(`
workflow: fan
initial: FAN
agents: {cheap: {}, dear: {}, slow: {}}
limits: {max_tokens: 100}
states:
  FAN: {agents: [cheap, dear, slow]}
  DONE: {terminal: true}
rules:
  - {id: joined, from: FAN, trigger: joined, next: DONE}
`))
	if err != nil {
		t.Fatal(err)
	}
	r := newSimRunOf(t, w, map[string][]reply{ // slow is external and never answers
		"cheap": {used("done", tokens(10, 10))},
		"dear":  {used("done", tokens(90, 10))},
	})
	inst, err := r.eng.Start(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	r.runUntil(r.queued("slow"))
	m, err := busOf(r.eng).ReceiveWait(t.Context(), "slow")
	if err != nil {
		t.Fatal(err)
	}
	r.settle()
	wantFailed(t, inst.Result(), "engine: limit max_tokens exceeded: the instance's runs used 120 tokens (max 100)")
	if ans := reportUsage(t, r.eng, m, "done", tokens(1, 1)); ans.Code != "stale" {
		t.Errorf("got %+v for the abandoned branch's report, want stale", ans)
	}
	if got := inst.Result().Usage.Tokens; got != 120 {
		t.Errorf("got %d tokens, want 120: an abandoned branch's report counts nothing", got)
	}
}

// newChildBudgetRun builds an engine of testdata/childbudget's research
// workflow, whose RESEARCH state runs the loop workflow as a child, with
// scripted agents; edits change research.yaml (old, new, ...).
func newChildBudgetRun(t *testing.T, agents map[string][]reply, edits ...string) *simRun {
	t.Helper()
	dir := t.TempDir()
	for _, f := range []string{"research.yaml", "middle.yaml", "loop.yaml", "each.yaml"} {
		src, err := os.ReadFile(filepath.Join("testdata", "childbudget", f))
		if err != nil {
			t.Fatal(err)
		}
		s := string(src)
		if f == "research.yaml" {
			for k := 0; k+1 < len(edits); k += 2 {
				if !strings.Contains(s, edits[k]) {
					t.Fatalf("edit %q does not apply", edits[k])
				}
				s = strings.Replace(s, edits[k], edits[k+1], 1)
			}
		}
		if err := os.WriteFile(filepath.Join(dir, f), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	set, err := rules.LoadSet(dir)
	if err != nil {
		t.Fatal(err)
	}
	w, _ := set.Workflow("research")
	sim := clock.NewSim(epoch)
	sc := &script{t: t, sim: sim, replies: map[string][]reply{}}
	reg := registry.New()
	for _, name := range []string{"research", "middle", "loop", "each"} {
		wf, ok := set.Workflow(name)
		if !ok {
			continue
		}
		for _, a := range wf.Agents {
			if rs, ok := agents[a.ID]; ok {
				sc.replies[a.ID] = slices.Clone(rs)
				if err := reg.Add(engine.AgentOf(a, sc.handler(a.ID))); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	r := &simRun{t: t, sim: sim, script: sc}
	eng, err := newEngine(w, reg, engine.WithClock(sim), engine.WithExecutor(sim), engine.WithIDs(counter("p")))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = eng.Close() })
	r.eng = eng
	return r
}

// A child workflow's runs count against its parent's budget as they end: a
// runaway loop in a child is stopped by the parent's max_cost on the run
// that crosses it, not when the child ends (this one never would). The
// parent cancels the child, counts what it used, and enters on_limit (or
// fails without one); the limit_hit entry carries the child's usage, and a
// replay of the parent's history decides the same.
func TestEngine_Budgets_ChildRunsCountAsTheyEnd(t *testing.T) {
	tests := []struct {
		name      string
		edits     []string
		agents    map[string][]reply
		wantErr   string // "" when the parent must complete in STOPPED
		wantLimit string // max_cost when empty
		runs      int    // the runs of the child's agent that crosses (the thinker's 5 when 0)
		cost      float64
	}{
		{
			name:   "on_limit",
			agents: map[string][]reply{"thinker": repeat(20, used("again", cost(0.25))), "closer": {ok("done", nil)}},
		},
		{
			name: "fails without on_limit", edits: []string{"limits: {max_cost: 1, on_limit: SUMMARY}", "limits: {max_cost: 1}"},
			agents:  map[string][]reply{"thinker": repeat(20, used("again", cost(0.25)))},
			wantErr: "engine: instance p-1 failed in state RESEARCH: engine: limit max_cost exceeded: the instance's runs cost 1.25 (max 1)",
		},
		{
			// The grandchild's runs stop at the research's budget: the
			// middle instance has none, and passes the room on.
			name: "a grandchild", edits: []string{"RESEARCH: {workflow: loop", "RESEARCH: {workflow: middle"},
			agents: map[string][]reply{"thinker": repeat(20, used("again", cost(0.25))), "closer": {ok("done", nil)}},
		},
		{
			// The workflow state's own budget for this visit.
			name: "the workflow state's max_cost", edits: []string{"limits: {max_cost: 1, on_limit: SUMMARY}", "limits: {max_cost: 10, on_limit: SUMMARY}", "timeout: 1h}", "timeout: 1h, max_cost: 1}"},
			agents: map[string][]reply{"thinker": repeat(20, used("again", cost(0.25))), "closer": {ok("done", nil)}},
		},
		{
			// A foreach state's item in the child crosses the parent's
			// budget: the items not yet run never run.
			name: "a foreach item", edits: []string{"RESEARCH: {workflow: loop", "RESEARCH: {workflow: each"},
			agents: map[string][]reply{
				"splitter": {ok("split", map[string]any{"docs": []any{1, 2, 3, 4, 5}})},
				"reviewer": repeat(3, used("reviewed", cost(0.5))), "closer": {ok("done", nil)},
			},
			runs: 3, cost: 1.5,
		},
		{
			name: "tokens", wantLimit: "max_tokens", edits: []string{"limits: {max_cost: 1, on_limit: SUMMARY}", "limits: {max_tokens: 1000, on_limit: SUMMARY}"},
			agents: map[string][]reply{"thinker": repeat(20, used("again", registry.Usage{InputTokens: 200, OutputTokens: 50, Cost: 0.25})), "closer": {ok("done", nil)}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := t.Context()
			r := newChildBudgetRun(t, tt.agents, tt.edits...)
			inst := r.start(nil)
			res := inst.Result()
			if tt.wantErr == "" {
				wantCompleted(t, res, "STOPPED")
			} else if res.Status != record.StatusFailed || res.Err == nil || res.Err.Error() != tt.wantErr {
				t.Fatalf("got %s (%v), want failed with %q", res.Status, res.Err, tt.wantErr)
			}
			agent, runs, want := "thinker", 5, 1.25
			if tt.runs > 0 {
				agent, runs, want = "reviewer", tt.runs, tt.cost
			}
			if got := len(r.script.runsOf(agent)); got != runs {
				t.Errorf("got %d runs of the child's %s, want %d: the last crosses the budget", got, agent, runs)
			}
			if res.Usage.Cost != want || res.Usage.Agents.Of(agent).Cost != want {
				t.Errorf("got the parent's usage %+v, want cost %v, all the %s's", res.Usage, want, agent)
			}
			for _, id := range []string{"p-1/RESEARCH/1", "p-1/RESEARCH/1/INNER/1"} {
				child, err := r.eng.Instance(id)
				if err != nil {
					if tt.name != "a grandchild" && errors.Is(err, engine.ErrUnknownInstance) {
						continue
					}
					t.Fatal(err)
				}
				if got := child.Result().Status; got != record.StatusCanceled {
					t.Errorf("child %s: got %s, want canceled", id, got)
				}
			}
			h, err := inst.History(ctx)
			if err != nil {
				t.Fatal(err)
			}
			hits := entries(h, record.KindLimitHit)
			if len(hits) != 1 || hits[0].Usage.Cost != want || hits[0].State != "RESEARCH" {
				t.Fatalf("got limit_hit entries %+v, want one in RESEARCH carrying the child's cost %v", hits, want)
			}
			if want := cmp.Or(tt.wantLimit, "max_cost"); hits[0].Limit != want {
				t.Errorf("got limit %s, want %s", hits[0].Limit, want)
			}
			rep, err := replay.Check(r.eng.Workflow(), h)
			if err != nil || rep.Divergence != nil {
				t.Errorf("replay: got %v, %+v, want no divergence", err, rep.Divergence)
			}
		})
	}
}

// childBudgetSet loads testdata/childbudget.
func childBudgetSet(t *testing.T) *rules.Workflow {
	t.Helper()
	set, err := rules.LoadSet(filepath.Join("testdata", "childbudget"))
	if err != nil {
		t.Fatal(err)
	}
	w, _ := set.Workflow("research")
	return w
}

// After a restart the parent leaves its child the same room: the child's
// runs before the restart and after it count against the parent's budget
// together, and the run that crosses it stops the child and the parent.
func TestEngine_Budgets_ChildRunsCountAfterARestart(t *testing.T) {
	for _, name := range storeNames {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			store := openStore(t, name)
			sim := clock.NewSim(epoch)
			build := func() *engine.Engine {
				eng, err := newEngine(childBudgetSet(t), nil, engine.WithStore(store), engine.WithClock(sim), engine.WithExecutor(sim), engine.WithIDs(counter("p")))
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = eng.Close() })
				return eng
			}
			first := build()
			inst, err := first.Start(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			child := inst.ID() + "/RESEARCH/1"
			think := func(eng *engine.Engine, step int) {
				t.Helper()
				if err := sim.RunReady(ctx); err != nil {
					t.Fatal(err)
				}
				if err := eng.Report(ctx, child, step, registry.Outcome{Trigger: "again", Usage: cost(0.25)}, nil); err != nil {
					t.Fatalf("report of the child's step %d: %v", step, err)
				}
				if err := sim.RunReady(ctx); err != nil {
					t.Fatal(err)
				}
			}
			for step := 1; step <= 3; step++ {
				think(first, step)
			}
			_ = first.Close()

			second := build()
			rep, err := second.Resume(ctx)
			if err != nil || len(rep.Failed) > 0 || !slices.Contains(rep.Resumed, child) {
				t.Fatalf("Resume: got %+v, %v; want the parent and its child resumed", rep, err)
			}
			think(second, 4) // 1.0: not over
			again, err := second.Instance(inst.ID())
			if err != nil {
				t.Fatal(err)
			}
			if res := again.Result(); res.State != "RESEARCH" {
				t.Fatalf("after a cost of 1: got state %s, want RESEARCH still", res.State)
			}
			think(second, 5) // 1.25: over
			res := again.Result()
			if res.State != "SUMMARY" || res.Usage.Cost != 1.25 {
				t.Fatalf("got state %s, cost %v; want SUMMARY (on_limit) at 1.25", res.State, res.Usage.Cost)
			}
			c, err := second.Instance(child)
			if err != nil {
				t.Fatal(err)
			}
			if got := c.Result().Status; got != record.StatusCanceled {
				t.Errorf("child: got %s, want canceled", got)
			}
		})
	}
}
