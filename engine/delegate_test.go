package engine_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/clock"
	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/handoff"
	"github.com/batonhq/baton/record"
	"github.com/batonhq/baton/registry"
)

// delegateTo asks for a dynamic hand-off of the current step, reporting
// result as the delegating agent's result.
func delegateTo(d registry.Delegation, result map[string]any) reply {
	return func(context.Context, *clock.Sim, *registry.Task) (registry.Outcome, error) {
		req := d
		return registry.Outcome{Result: result, Handoff: &req}, nil
	}
}

// handoffPairs lists the hand-offs sent as "from->to", in order.
func handoffPairs(h []record.Entry) []string {
	var out []string
	for _, e := range entries(h, record.KindHandoff) {
		out = append(out, e.From+"->"+e.To)
	}
	return out
}

// outcomes lists the outcomes matched against the rules as "agent:trigger".
func outcomes(h []record.Entry) []string {
	var out []string
	for _, e := range entries(h, record.KindOutcome) {
		out = append(out, e.Agent+":"+e.Trigger)
	}
	return out
}

func TestDelegate_Accepted_OutcomeMatchedAsTheDelegators(t *testing.T) {
	r := newSimRun(t, "delegate.yaml", map[string][]reply{
		"desk": {delegateTo(registry.Delegation{
			To: "expert", Reason: "clarification", Explanation: "needs a diagnosis",
			Task: "diagnose order 7", Payload: map[string]any{"order": 7},
		}, map[string]any{"seen": true})},
		"expert": {ok("done", map[string]any{"answer": 42})},
	})
	res, h := r.finish(nil)
	wantCompleted(t, res, "DONE")
	if res.Context["answer"] != 42 {
		t.Errorf("got answer %v, want 42 from the delegate's result", res.Context["answer"])
	}
	if got, want := path(h), []string{"TRIAGE", "DONE"}; !slices.Equal(got, want) {
		t.Errorf("got path %v, want %v: a delegation does not change state", got, want)
	}
	if res.Steps != 2 {
		t.Errorf("got %d steps, want 2", res.Steps)
	}
	if got, want := handoffPairs(h), []string{"desk->expert"}; !slices.Equal(got, want) {
		t.Errorf("got hand-offs %v, want %v", got, want)
	}
	if got, want := outcomes(h), []string{"desk:done"}; !slices.Equal(got, want) {
		t.Errorf("got outcomes %v, want %v", got, want)
	}
	if got, want := fired(h), []string{"done"}; !slices.Equal(got, want) {
		t.Errorf("got rules %v, want %v", got, want)
	}
	runs := entries(h, record.KindAgentRun)
	if len(runs) != 2 || runs[0].Agent != "desk" || runs[0].To != "expert" || runs[0].Detail != "hand-off (clarification)" {
		t.Errorf("got runs %+v, want desk's run asking for a hand-off to expert first", runs)
	}

	task := r.script.runsOf("expert")[0].Task
	if task.From != "desk" || task.State != "TRIAGE" || task.Step != 2 || task.Description != "diagnose order 7" || task.Reason != "needs a diagnosis" {
		t.Errorf("got expert's task %+v, want from desk in TRIAGE step 2 \"diagnose order 7\" because \"needs a diagnosis\"", task)
	}
	if task.PreviousResult["seen"] != true {
		t.Errorf("got previous result %v, want desk's result", task.PreviousResult)
	}

	recs := handoffHistory(t, r.eng, res.ID)
	if len(recs) != 1 {
		t.Fatalf("got %d hand-off records, want 1", len(recs))
	}
	if rec := recs[0]; rec.From != "desk" || rec.To != "expert" || rec.Reason != handoff.ReasonClarification ||
		rec.Status != handoff.StatusAccepted || rec.Payload["order"] != 7 || rec.Step != 2 {
		t.Errorf("got record %+v, want desk->expert clarification accepted at step 2 with the payload", rec)
	}
}

func TestDelegate_Refused_IsOutcomeRejected(t *testing.T) {
	tests := []struct {
		name string
		d    registry.Delegation
		want string
	}{
		{"self", registry.Delegation{To: "desk", Reason: "clarification"}, "cannot hand off to self"},
		{"self without a reason", registry.Delegation{To: "desk"}, "cannot hand off to self"},
		{"unknown target", registry.Delegation{To: "expret", Reason: "clarification"}, `target agent "expret" not found (did you mean "expert"?)`},
		{"system agent", registry.Delegation{To: "vault", Reason: "error_recovery"}, `cannot hand off to system agent "vault"`},
		{"missing capability", registry.Delegation{To: "analyst", Reason: "capability_match", Payload: map[string]any{"required_capability": "diagnose"}}, `does not have capability "diagnose"`},
		{"unknown reason", registry.Delegation{To: "expert", Reason: "whim"}, `unknown reason "whim"`},
		{"reason rule", registry.Delegation{To: "expert", Reason: "rule"}, `reason "rule"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newSimRun(t, "delegate.yaml", map[string][]reply{"desk": {delegateTo(tt.d, nil)}})
			res, h := r.finish(nil)
			wantCompleted(t, res, "REJECTED")
			if msg, _ := res.Context["message"].(string); !strings.Contains(msg, tt.want) {
				t.Errorf("got error.message %q, want it to contain %q", msg, tt.want)
			}
			if res.Context["kind"] != "rejected" {
				t.Errorf("got error.kind %v, want rejected", res.Context["kind"])
			}
			if got, want := outcomes(h), []string{"desk:rejected"}; !slices.Equal(got, want) {
				t.Errorf("got outcomes %v, want %v", got, want)
			}
			if hs := handoffPairs(h); len(hs) != 0 {
				t.Errorf("got hand-offs %v, want none", hs)
			}
			if res.Steps != 1 {
				t.Errorf("got %d steps, want 1: a refused hand-off runs nobody", res.Steps)
			}
		})
	}
}

func TestDelegate_Refused_LoopWindow(t *testing.T) {
	// delegate.yaml lets an agent receive one of the last three hand-offs.
	ask := registry.Delegation{To: "expert", Reason: "clarification", ReturnControl: true}
	r := newSimRun(t, "delegate.yaml", map[string][]reply{
		"desk":   {delegateTo(ask, nil), delegateTo(ask, nil)},
		"expert": {ok("found", map[string]any{"facts": 1})},
	})
	res, h := r.finish(nil)
	wantCompleted(t, res, "REJECTED")
	if msg, _ := res.Context["message"].(string); !strings.Contains(msg, `potential hand-off loop: "expert" already received 1 of the last 3 hand-offs`) {
		t.Errorf("got error.message %q, want the loop refusal", msg)
	}
	if got, want := handoffPairs(h), []string{"desk->expert"}; !slices.Equal(got, want) {
		t.Errorf("got hand-offs %v, want %v", got, want)
	}
}

func TestDelegate_SystemAgentFromSupervisor(t *testing.T) {
	r := newSimRun(t, "delegate.yaml", map[string][]reply{
		"desk":       {ok("escalate", nil)},
		"supervisor": {delegateTo(registry.Delegation{To: "vault", Reason: "error_recovery", Task: "unlock"}, nil)},
		"vault":      {ok("done", map[string]any{"answer": "unlocked"})},
	})
	res, h := r.finish(nil)
	wantCompleted(t, res, "DONE")
	if res.Context["answer"] != "unlocked" {
		t.Errorf("got answer %v, want unlocked", res.Context["answer"])
	}
	if got, want := handoffPairs(h), []string{"desk->supervisor", "supervisor->vault"}; !slices.Equal(got, want) {
		t.Errorf("got hand-offs %v, want %v", got, want)
	}
	if got, want := outcomes(h), []string{"desk:escalate", "supervisor:done"}; !slices.Equal(got, want) {
		t.Errorf("got outcomes %v, want %v", got, want)
	}
}

func TestDelegate_ReturnControl_DelegatorRunsAgain(t *testing.T) {
	r := newSimRun(t, "delegate.yaml", map[string][]reply{
		"desk": {
			delegateTo(registry.Delegation{To: "expert", Reason: "clarification", Task: "look it up", ReturnControl: true}, map[string]any{"q": 1}),
			ok("done", map[string]any{"answer": "from desk"}),
		},
		"expert": {ok("ignored", map[string]any{"facts": 3})},
	})
	res, h := r.finish(nil)
	wantCompleted(t, res, "DONE")
	if res.Context["answer"] != "from desk" {
		t.Errorf("got answer %v, want desk's", res.Context["answer"])
	}
	if res.Steps != 3 {
		t.Errorf("got %d steps, want 3 (desk, expert, desk)", res.Steps)
	}
	if got, want := outcomes(h), []string{"desk:done"}; !slices.Equal(got, want) {
		t.Errorf("got outcomes %v, want %v: the delegate's trigger goes back, unmatched", got, want)
	}
	if got, want := handoffPairs(h), []string{"desk->expert"}; !slices.Equal(got, want) {
		t.Errorf("got hand-offs %v, want %v: returning control is no hand-off", got, want)
	}
	ret := entries(h, record.KindReturned)
	if len(ret) != 1 || ret[0].From != "expert" || ret[0].To != "desk" || ret[0].Result["facts"] != 3 {
		t.Errorf("got returned entries %+v, want one expert -> desk with the result", ret)
	}
	runs := r.script.runsOf("desk")
	if len(runs) != 2 {
		t.Fatalf("got %d runs of desk, want 2", len(runs))
	}
	again := runs[1].Task
	if again.Step != 3 || again.From != "" || again.Reason != "return_control" || again.PreviousResult["facts"] != 3 {
		t.Errorf("got desk's second task %+v, want step 3 dispatched by the engine with reason return_control and expert's result", again)
	}
	if !strings.Contains(again.Description, "look it up") {
		t.Errorf("got description %q, want it to name the delegated task", again.Description)
	}
}

func TestDelegate_DelegateFailures_AreTheStatesOutcomes(t *testing.T) {
	tests := []struct {
		name      string
		expert    reply
		wantState string
		wantKind  string
		wantMsg   string
	}{
		{"rejected", reject("not my job"), "REJECTED", "rejected", "not my job"},
		{"error not retried", fail("crashed"), "FAILED", "error", "crashed"},
		{"reserved trigger", ok("joined", nil), "FAILED", "error", `reported "joined"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newSimRun(t, "delegate.yaml", map[string][]reply{
				"desk":   {delegateTo(registry.Delegation{To: "expert", Reason: "clarification"}, nil)},
				"expert": {tt.expert},
			})
			res, h := r.finish(nil)
			wantCompleted(t, res, tt.wantState)
			if res.Context["kind"] != tt.wantKind {
				t.Errorf("got error.kind %v, want %s", res.Context["kind"], tt.wantKind)
			}
			if msg, _ := res.Context["message"].(string); !strings.Contains(msg, tt.wantMsg) {
				t.Errorf("got error.message %q, want it to contain %q", msg, tt.wantMsg)
			}
			// TRIAGE retries twice, but not a delegate's failure.
			if n, m := len(r.script.runsOf("desk")), len(r.script.runsOf("expert")); n != 1 || m != 1 {
				t.Errorf("got %d runs of desk and %d of expert, want 1 each", n, m)
			}
			if retries := entries(h, record.KindRetry); len(retries) != 0 {
				t.Errorf("got retries %+v, want none", retries)
			}
		})
	}
}

func TestDelegate_Timeout(t *testing.T) {
	// expert is external and never answers; TRIAGE's timeout is 1m.
	r := newSimRun(t, "delegate.yaml", map[string][]reply{
		"desk": {delegateTo(registry.Delegation{To: "expert", Reason: "clarification"}, nil)},
	})
	inst := r.begin(nil)
	r.runUntil(finished(inst))
	res := inst.Result()
	wantCompleted(t, res, "FAILED")
	if res.Context["kind"] != "timeout" {
		t.Errorf("got error.kind %v, want timeout", res.Context["kind"])
	}
	if want := epoch.Add(time.Minute); !r.sim.Now().Equal(want) {
		t.Errorf("got the timeout at %v, want %v", r.sim.Now(), want)
	}
}

func TestDelegate_ExternalDelegateGetsTheHandoff(t *testing.T) {
	r := newSimRun(t, "delegate.yaml", map[string][]reply{
		"desk": {delegateTo(registry.Delegation{
			To: "expert", Reason: "capability_match", Explanation: "expert can diagnose",
			Task: "diagnose", Payload: map[string]any{"required_capability": "diagnose"},
		}, map[string]any{"q": 1})},
	})
	inst := r.begin(nil)
	m := r.take("expert")
	if m.From != "desk" || m.Content["task_description"] != "diagnose" || m.Content["reason"] != "capability_match" ||
		m.Content["explanation"] != "expert can diagnose" {
		t.Errorf("got hand-off from %s with content %v, want desk's capability_match \"diagnose\"", m.From, m.Content)
	}
	if p, _ := m.Content["payload"].(map[string]any); p["required_capability"] != "diagnose" {
		t.Errorf("got payload %v, want the delegation's", m.Content["payload"])
	}
	if prev, _ := m.Content["previous_result"].(map[string]any); prev["q"] != 1 {
		t.Errorf("got previous_result %v, want desk's result", m.Content["previous_result"])
	}
	if err := reportWork(context.Background(), r.eng, m, registry.Outcome{Trigger: "done", Result: map[string]any{"answer": "ok"}}, nil); err != nil {
		t.Fatalf("report: %v", err)
	}
	res := inst.Result()
	wantCompleted(t, res, "DONE")
	if res.Context["answer"] != "ok" {
		t.Errorf("got answer %v, want ok", res.Context["answer"])
	}
}

func TestDelegate_DelegateDelegates(t *testing.T) {
	r := newSimRun(t, "delegate.yaml", map[string][]reply{
		"desk":    {delegateTo(registry.Delegation{To: "expert", Reason: "clarification"}, nil)},
		"expert":  {delegateTo(registry.Delegation{To: "analyst", Reason: "plan_step", Task: "analyse"}, map[string]any{"hint": "x"})},
		"analyst": {ok("done", map[string]any{"answer": "analysed"})},
	})
	res, h := r.finish(nil)
	wantCompleted(t, res, "DONE")
	if res.Context["answer"] != "analysed" {
		t.Errorf("got answer %v, want analysed", res.Context["answer"])
	}
	if got, want := handoffPairs(h), []string{"desk->expert", "expert->analyst"}; !slices.Equal(got, want) {
		t.Errorf("got hand-offs %v, want %v", got, want)
	}
	if got, want := outcomes(h), []string{"desk:done"}; !slices.Equal(got, want) {
		t.Errorf("got outcomes %v, want %v", got, want)
	}
	if task := r.script.runsOf("analyst")[0].Task; task.From != "expert" || task.PreviousResult["hint"] != "x" {
		t.Errorf("got analyst's task from %q with previous %v, want from expert with its result", task.From, task.PreviousResult)
	}
}

func TestDelegate_MaxStepsCountsDelegateRuns(t *testing.T) {
	// steps.yaml allows 2 steps.
	tests := []struct {
		name   string
		agents map[string][]reply
	}{
		{"delegate of a delegate", map[string][]reply{
			"desk":   {delegateTo(registry.Delegation{To: "expert", Reason: "clarification"}, nil)},
			"expert": {delegateTo(registry.Delegation{To: "desk", Reason: "clarification"}, nil)},
		}},
		{"return control", map[string][]reply{
			"desk":   {delegateTo(registry.Delegation{To: "expert", Reason: "clarification", ReturnControl: true}, nil)},
			"expert": {ok("found", nil)},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newSimRun(t, "steps.yaml", tt.agents)
			res, h := r.finish(nil)
			wantFailed(t, res, "entering TRIAGE would make step 3 (max 2)")
			if !errors.Is(res.Err, engine.ErrLimit) {
				t.Errorf("got %v, want ErrLimit", res.Err)
			}
			if hits := entries(h, record.KindLimitHit); len(hits) != 1 {
				t.Errorf("got limit hits %+v, want 1", hits)
			}
			if res.Steps != 2 {
				t.Errorf("got %d steps, want 2", res.Steps)
			}
		})
	}
}

// The loop window reads the instance's own history: an engine that resumes
// the instance after a restart refuses the hand-off the window forbids, as
// the first engine would have.
func TestDelegate_LoopWindowSurvivesResume(t *testing.T) {
	store := record.NewMemStore()
	ask := registry.Delegation{To: "expert", Reason: "clarification", ReturnControl: true}
	deskRuns := 0
	blocked := make(chan struct{})
	first := poolEngine(t, "delegate.yaml", map[string]registry.Handler{
		"desk": registry.HandlerFunc(func(ctx context.Context, _ *registry.Task) (registry.Outcome, error) {
			deskRuns++
			if deskRuns == 1 {
				return registry.Outcome{Handoff: &ask}, nil
			}
			close(blocked) // the expert's answer came back: stop here, as a crash would
			<-ctx.Done()
			return registry.Outcome{}, ctx.Err()
		}),
		"expert": answer("found", map[string]any{"facts": 1}),
	}, engine.WithStore(store))
	inst, err := first.Start(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	<-blocked
	_ = first.Close()

	second := poolEngine(t, "delegate.yaml", map[string]registry.Handler{
		"desk": registry.HandlerFunc(func(context.Context, *registry.Task) (registry.Outcome, error) {
			return registry.Outcome{Handoff: &ask}, nil // expert again: the window forbids it
		}),
		"expert": registry.HandlerFunc(func(context.Context, *registry.Task) (registry.Outcome, error) {
			t.Error("expert ran again: the loop window forgot the hand-off before the restart")
			return registry.Outcome{Trigger: "found"}, nil
		}),
	}, engine.WithStore(store))
	defer second.Close()
	if rep, err := second.Resume(t.Context()); err != nil || len(rep.Resumed) != 1 {
		t.Fatalf("Resume: %+v %v", rep, err)
	}
	h, err := second.Instance(inst.ID())
	if err != nil {
		t.Fatal(err)
	}
	res, err := h.Wait(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	wantCompleted(t, res, "REJECTED")
	if msg, _ := res.Context["message"].(string); !strings.Contains(msg, `potential hand-off loop: "expert" already received 1 of the last 3 hand-offs`) {
		t.Errorf("got error.message %q, want the loop refusal", msg)
	}
}
