package engine_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/record"
	"github.com/batonhq/baton/registry"
)

func TestParallel_FanOut_HandsOffToEachAgentInOrder(t *testing.T) {
	r := newSimRun(t, "fanout.yaml", map[string][]reply{
		"lead":  {ok("go", map[string]any{"what": "trip"})},
		"a":     {ok("found", map[string]any{"price": 1})},
		"b":     {ok("nothing", nil)}, // a branch's trigger is recorded, not matched
		"c":     {ok("found", map[string]any{"price": 3})},
		"payer": {ok("paid", nil)},
	})
	res, h := r.finish(nil)
	wantCompleted(t, res, "DONE")
	if got, want := path(h), []string{"START", "FAN", "PAY", "DONE"}; !slices.Equal(got, want) {
		t.Errorf("got path %v, want %v", got, want)
	}
	if res.Steps != 5 {
		t.Errorf("got %d steps, want 5 (lead, three branches, payer)", res.Steps)
	}

	type handoff struct {
		from, to, rule string
		step           int
	}
	var got []handoff
	for _, e := range entries(h, record.KindHandoff) {
		got = append(got, handoff{e.From, e.To, e.Rule, e.Step})
	}
	want := []handoff{{"lead", "a", "go", 2}, {"lead", "b", "go", 3}, {"lead", "c", "go", 4}, {"FAN", "payer", "pay", 5}}
	if !slices.Equal(got, want) {
		t.Errorf("got hand-offs %v, want %v", got, want)
	}

	for i, agent := range []string{"a", "b", "c"} {
		runs := r.script.runsOf(agent)
		if len(runs) != 1 {
			t.Fatalf("got %d runs of %s, want 1", len(runs), agent)
		}
		task := runs[0].Task
		if task.From != "lead" || task.State != "FAN" || task.Step != 2+i || task.Description != "search trip" {
			t.Errorf("%s: got task from %q in %s step %d %q, want from lead in FAN step %d \"search trip\"",
				agent, task.From, task.State, task.Step, task.Description, 2+i)
		}
		if task.Constraints["budget"] != 100 || task.Context["what"] != "trip" || task.PreviousResult["what"] != "trip" {
			t.Errorf("%s: got constraints %v context %v previous %v, want budget 100 and what trip",
				agent, task.Constraints, task.Context, task.PreviousResult)
		}
	}
	var triggers []string
	for _, e := range entries(h, record.KindAgentRun) {
		triggers = append(triggers, e.Agent+":"+e.Trigger)
	}
	if want := []string{"lead:go", "a:found", "b:nothing", "c:found", "payer:paid"}; !slices.Equal(triggers, want) {
		t.Errorf("got runs %v, want %v", triggers, want)
	}

	pay := r.script.runsOf("payer")[0].Task
	if pay.From != "FAN" || pay.Description != "pay for 3 finds" {
		t.Errorf("got payer's task from %q %q, want from FAN \"pay for 3 finds\"", pay.From, pay.Description)
	}
	results, _ := pay.PreviousResult["results"].(map[string]any)
	if got := mapKeys(t, results); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Fatalf("got previous results from %v, want [a b c]", got)
	}
	if a, _ := results["a"].(map[string]any); a["price"] != 1 {
		t.Errorf("got results.a = %v, want price 1", results["a"])
	}
	if _, ok := pay.PreviousResult["errors"]; ok {
		t.Errorf("got errors %v in a join where every branch answered, want none", pay.PreviousResult["errors"])
	}
	if got := mapKeys(t, res.Context["found"]); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Errorf("got context found from %v, want [a b c]", got)
	}
}

func TestParallel_Branch_FailuresAreMissingNotRetried(t *testing.T) {
	r := newSimRun(t, "fanout.yaml", map[string][]reply{
		"lead": {ok("go", map[string]any{"what": "trip"})},
		"a":    {ok("found", nil)},
		"b":    {fail("flaky supplier")}, // retryable, and FAN has retry max 2
		"c":    {reject("too busy")},
	})
	res, h := r.finish(nil)
	wantCompleted(t, res, "PARTIAL")
	if got := mapKeys(t, res.Context["results"]); !slices.Equal(got, []string{"a"}) {
		t.Errorf("got results from %v, want [a]", got)
	}
	errs, _ := res.Context["errors"].(map[string]any)
	for agent, want := range map[string]string{"b": "flaky supplier", "c": "too busy"} {
		if msg, _ := errs[agent].(string); !strings.Contains(msg, want) {
			t.Errorf("got errors.%s = %q, want it to contain %q", agent, msg, want)
		}
	}
	if n := len(r.script.runsOf("b")); n != 1 {
		t.Errorf("got %d runs of b, want 1: branches are not retried", n)
	}
	if retries := entries(h, record.KindRetry); len(retries) != 0 {
		t.Errorf("got retries %+v, want none", retries)
	}
	if res.Steps != 4 {
		t.Errorf("got %d steps, want 4", res.Steps)
	}
}

func TestParallel_Branch_RunTimeoutIsMissing(t *testing.T) {
	// c is external and never answers: its run times out after FAN's 5s,
	// and then no branch is left, well before the join's 10s.
	r := newSimRun(t, "fanout.yaml", map[string][]reply{
		"lead": {ok("go", map[string]any{"what": "trip"})},
		"a":    {ok("found", nil)},
		"b":    {ok("found", nil)},
	})
	inst := r.begin(nil)
	wantRunning(t, inst, "FAN")
	r.runUntil(finished(inst))
	res := inst.Result()
	wantCompleted(t, res, "PARTIAL")
	if want := epoch.Add(5 * time.Second); !r.sim.Now().Equal(want) {
		t.Errorf("got the join ending at %v, want when c's run timed out (%v)", r.sim.Now(), want)
	}
	if got := mapKeys(t, res.Context["results"]); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("got results from %v, want [a b]", got)
	}
	errs, _ := res.Context["errors"].(map[string]any)
	if msg, _ := errs["c"].(string); !strings.Contains(msg, "did not finish within 5s") {
		t.Errorf("got errors.c = %q, want a run timeout", msg)
	}
	if err := r.answer("c", found(1), nil); !errors.Is(err, engine.ErrStaleReport) {
		t.Errorf("c's answer after its timeout: got %v, want ErrStaleReport", err)
	}
}

func TestParallel_Branch_CannotDelegate(t *testing.T) {
	r := newSimRun(t, "fanout.yaml", map[string][]reply{
		"lead": {ok("go", map[string]any{"what": "trip"})},
		"a":    {ok("found", nil)},
		"b":    {delegateTo(registry.Delegation{To: "payer", Reason: "capability_match", Task: "pay now"}, map[string]any{"option": "x"})},
		"c":    {ok("found", nil)},
	})
	res, h := r.finish(nil)
	wantCompleted(t, res, "PARTIAL")
	if got := mapKeys(t, res.Context["results"]); !slices.Equal(got, []string{"a", "c"}) {
		t.Errorf("got results from %v, want [a c]", got)
	}
	errs, _ := res.Context["errors"].(map[string]any)
	if msg, _ := errs["b"].(string); !strings.Contains(msg, "cannot delegate") {
		t.Errorf("got errors.b = %q, want it to say a branch cannot delegate", msg)
	}
	for _, e := range entries(h, record.KindHandoff) {
		if e.To == "payer" {
			t.Errorf("got a hand-off to payer %+v, want none", e)
		}
	}
}

func TestParallel_MaxStepsCountsEveryBranch(t *testing.T) {
	// steps.yaml allows 2 steps: desk's run and FAN's two branches make 3.
	r := newSimRun(t, "steps.yaml", map[string][]reply{"desk": {ok("fan", nil)}})
	res, h := r.finish(nil)
	wantFailed(t, res, "entering FAN would make step 3 (max 2)")
	var lim *engine.LimitError
	if !errors.As(res.Err, &lim) || lim.Limit != "max_steps" || lim.State != "FAN" || lim.Count != 3 {
		t.Errorf("got %v, want a max_steps LimitError for FAN at 3", res.Err)
	}
	if hs := entries(h, record.KindHandoff); len(hs) != 0 {
		t.Errorf("got hand-offs %+v, want none", hs)
	}
	if res.Steps != 1 {
		t.Errorf("got %d steps, want 1", res.Steps)
	}
}

// On the worker pool, an `any` join completes with the first reply and
// cancels the branches still working; their replies are recorded late.
func TestParallel_Pool_AnyJoinCancelsSlowBranches(t *testing.T) {
	defer goleak.VerifyNone(t)
	slow := map[string]*blocker{"b": newBlocker(), "c": newBlocker(), "d": newBlocker()}
	quick := registry.HandlerFunc(func(ctx context.Context, _ *registry.Task) (registry.Outcome, error) {
		for _, agent := range []string{"b", "c", "d"} { // answer once the others are working
			select {
			case <-slow[agent].started:
			case <-ctx.Done():
				return registry.Outcome{}, ctx.Err()
			}
		}
		return registry.Outcome{Trigger: "found", Result: map[string]any{"n": 1}}, nil
	})
	eng := poolEngine(t, "join.yaml", map[string]registry.Handler{
		"lead": answer("any_fail", nil), "a": quick, "b": slow["b"], "c": slow["c"], "d": slow["d"],
	}, engine.WithWorkers(6))
	defer eng.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	inst, err := eng.Start(ctx, nil)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	res, err := inst.Wait(ctx)
	if err != nil {
		t.Fatalf("Wait: %v", err)
	}
	wantCompleted(t, res, "JOINED")
	if got := mapKeys(t, res.Context["results"]); !slices.Equal(got, []string{"a"}) {
		t.Errorf("got results from %v, want [a]", got)
	}
	for agent, b := range slow {
		select {
		case err := <-b.seen:
			if !errors.Is(err, context.Canceled) {
				t.Errorf("%s: got %v, want context.Canceled", agent, err)
			}
		case <-ctx.Done():
			t.Fatalf("%s was not cancelled", agent)
		}
	}
	// A handler returns after it saw the cancellation, and its late reply is
	// recorded after that: wait for the three (Close would drop those still
	// on their way, leaving the instance as it was).
	var late []record.Entry
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		late = entries(history(t, inst), record.KindLateReply)
		if len(late) >= 3 || time.Now().After(deadline) {
			break
		}
	}
	_ = eng.Close()
	var steps []int
	for _, e := range late {
		steps = append(steps, e.Step)
		if !strings.Contains(e.Error, "context canceled") {
			t.Errorf("got late reply error %q, want context canceled", e.Error)
		}
	}
	slices.Sort(steps)
	if want := []int{3, 4, 5}; !slices.Equal(steps, want) {
		t.Errorf("got late replies for steps %v, want %v", steps, want)
	}
}
