package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/batonhq/baton/clock"
	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/record"
	"github.com/batonhq/baton/registry"
	"github.com/batonhq/baton/wire"
)

// review answers with the item it was given, so that results show order.
func review() reply {
	return func(_ context.Context, _ *clock.Sim, t *registry.Task) (registry.Outcome, error) {
		if !t.HasItem {
			return registry.Outcome{}, errors.New("test: an item run without an item")
		}
		return registry.Outcome{Trigger: "reviewed", Result: map[string]any{"doc": t.Item, "index": t.Index}}, nil
	}
}

// badDoc fails the run with kind bad_doc, which foreach.yaml never retries.
func badDoc(msg string) reply {
	return func(context.Context, *clock.Sim, *registry.Task) (registry.Outcome, error) {
		return registry.Outcome{}, registry.Kind(errors.New(msg), "bad_doc")
	}
}

func docs(n int) map[string]any {
	out := make([]any, n)
	for k := range out {
		out[k] = fmt.Sprintf("d%d", k)
	}
	return map[string]any{"docs": out}
}

func reviewed(k int) any { return map[string]any{"doc": fmt.Sprintf("d%d", k), "index": k} }

func TestEngine_Foreach_Outcomes(t *testing.T) {
	tests := []struct {
		name        string
		split       map[string]any
		reviewer    []reply
		wantOutcome string
		wantContext map[string]any
		wantSteps   int
	}{
		{
			name: "every item succeeds: joined, results in item order", split: docs(3),
			reviewer:    []reply{review(), review(), review()},
			wantOutcome: "DONE", wantSteps: 4,
			wantContext: map[string]any{"results": []any{reviewed(0), reviewed(1), reviewed(2)}},
		},
		{
			name: "a failure within tolerate: partial, null for the failed item", split: docs(3),
			reviewer:    []reply{review(), badDoc("unreadable"), review()},
			wantOutcome: "SOME", wantSteps: 4,
			wantContext: map[string]any{
				"results": []any{reviewed(0), nil, reviewed(2)},
				"errors":  []any{map[string]any{"index": 1, "message": "unreadable", "kind": "bad_doc"}},
			},
		},
		{
			name: "a failed item is retried with the state's policy, each run a step", split: docs(2),
			reviewer:    []reply{fail("flaky"), review(), review()},
			wantOutcome: "DONE", wantSteps: 4,
			wantContext: map[string]any{"results": []any{reviewed(0), reviewed(1)}},
		},
		{
			name: "an item run past the state's timeout fails with kind timeout", split: docs(2),
			reviewer:    []reply{takes(2*time.Minute, review()), review(), takes(2*time.Minute, review())},
			wantOutcome: "SOME", wantSteps: 4,
			wantContext: map[string]any{
				"results": []any{nil, reviewed(1)},
				"errors":  []any{map[string]any{"index": 0, "message": "engine: run timed out: reviewer did not finish within 1m0s", "kind": "timeout"}},
			},
		},
		{
			name: "more failures than tolerated: error, kind foreach_failed", split: docs(3),
			reviewer:    []reply{badDoc("a"), review(), reject("busy")},
			wantOutcome: "FAILED", wantSteps: 4,
			wantContext: map[string]any{
				"kind": "foreach_failed", "why": "foreach REVIEWS: 2 of 3 items failed, 1 tolerated",
				"errors": []any{
					map[string]any{"index": 0, "message": "a", "kind": "bad_doc"},
					map[string]any{"index": 2, "message": "reviewer rejected item 2: busy", "kind": "rejected"},
				},
			},
		},
		{
			name: "an empty list is joined with no runs", split: docs(0),
			wantOutcome: "DONE", wantSteps: 1, wantContext: map[string]any{"results": []any{}},
		},
		{
			name: "items that are not a list: error, kind invalid_items", split: map[string]any{"docs": "d0"},
			wantOutcome: "FAILED", wantSteps: 1,
			wantContext: map[string]any{"kind": "invalid_items", "errors": []any{}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newSimRun(t, "foreach.yaml", map[string][]reply{"splitter": {ok("split", tt.split)}, "reviewer": tt.reviewer})
			res, h := r.finish(nil)
			wantCompleted(t, res, tt.wantOutcome)
			if res.Steps != tt.wantSteps {
				t.Errorf("got %d steps, want %d", res.Steps, tt.wantSteps)
			}
			for k, want := range tt.wantContext {
				if got := res.Context[k]; !reflect.DeepEqual(got, want) {
					t.Errorf("context %s: got %#v, want %#v", k, got, want)
				}
			}
			if got := entries(h, record.KindForeach); len(got) != 1 || got[0].State != "REVIEWS" {
				t.Errorf("got foreach entries %+v, want one for REVIEWS", got)
			}
			for _, c := range r.script.runsOf("reviewer") {
				if want := fmt.Sprintf("d%d", c.Task.Index); c.Task.Item != want || c.Task.State != "REVIEWS" {
					t.Errorf("step %d: got item %v at index %d, want %s", c.Task.Step, c.Task.Item, c.Task.Index, want)
				}
			}
		})
	}
}

func TestEngine_Foreach_ItemsStartInOrderAtMostMaxConcurrency(t *testing.T) {
	ctx := context.Background()
	sim := clock.NewSim(epoch)
	eng := foreachEngine(t, record.NewMemStore(), sim)
	inst := startForeach(t, eng, sim, 5)
	// max_concurrency 2: items 0 and 1 are out, the others wait.
	if got := workIndexes(t, eng); !slices.Equal(got, []int{0, 1}) {
		t.Fatalf("got work for items %v, want [0 1]", got)
	}
	for k, step := range []int{3, 2, 4, 5, 6} {
		if err := eng.Report(ctx, inst.ID(), step, registry.Outcome{Trigger: "reviewed", Result: map[string]any{"n": step}}, nil); err != nil {
			t.Fatalf("report %d (step %d): %v", k, step, err)
		}
		if err := sim.RunReady(ctx); err != nil {
			t.Fatal(err)
		}
	}
	res := inst.Result()
	wantCompleted(t, res, "DONE")
	// Results are in item order, whatever order the runs ended in.
	want := []any{map[string]any{"n": 2}, map[string]any{"n": 3}, map[string]any{"n": 4}, map[string]any{"n": 5}, map[string]any{"n": 6}}
	if !reflect.DeepEqual(res.Context["results"], want) {
		t.Errorf("got results %v, want %v", res.Context["results"], want)
	}
}

func TestEngine_Foreach_MaxStepsCountsEveryItem(t *testing.T) {
	r := newSimRun(t, "foreach.yaml", map[string][]reply{"splitter": {ok("split", docs(12))}})
	res, h := r.finish(nil)
	wantFailed(t, res, "max_steps")
	if lim := entries(h, record.KindLimitHit); len(lim) != 1 || lim[0].Next != "REVIEWS" {
		t.Errorf("got limit hits %+v, want one entering REVIEWS", lim)
	}
	if res.State != "SPLIT" || res.Steps != 1 {
		t.Errorf("got state %s after %d steps, want SPLIT after 1: nothing of the items ran", res.State, res.Steps)
	}
}

func TestEngine_Foreach_CancelStopsTheItems(t *testing.T) {
	ctx := context.Background()
	sim := clock.NewSim(epoch)
	eng := foreachEngine(t, record.NewMemStore(), sim)
	inst := startForeach(t, eng, sim, 3)
	if err := inst.Cancel(ctx); err != nil {
		t.Fatal(err)
	}
	if err := eng.Report(ctx, inst.ID(), 2, registry.Outcome{Trigger: "reviewed"}, nil); !errors.Is(err, engine.ErrStaleReport) {
		t.Errorf("report after cancel: got %v, want ErrStaleReport", err)
	}
	if res := inst.Result(); res.Status != record.StatusCanceled {
		t.Errorf("got %s, want canceled", res.Status)
	}
}

// foreachEngine builds an engine of foreach.yaml on store and sim whose
// agents are external.
func foreachEngine(t *testing.T, store record.Store, sim *clock.Sim) *engine.Engine {
	t.Helper()
	w := loadWorkflow(t, "foreach.yaml")
	eng, err := newEngine(w, nil, engine.WithStore(store), engine.WithClock(sim), engine.WithExecutor(sim), engine.WithIDs(counter("f")))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = eng.Close() })
	return eng
}

// startForeach starts an instance whose splitter reports n docs.
func startForeach(t *testing.T, eng *engine.Engine, sim *clock.Sim, n int) *engine.Instance {
	t.Helper()
	ctx := context.Background()
	inst, err := eng.Start(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := eng.Report(ctx, inst.ID(), 1, registry.Outcome{Trigger: "split", Result: docs(n)}, nil); err != nil {
		t.Fatal(err)
	}
	if err := sim.RunReady(ctx); err != nil {
		t.Fatal(err)
	}
	return inst
}

// workIndexes drains the reviewer's mailbox and returns the item indexes
// of the work it held, in delivery order.
func workIndexes(t *testing.T, eng *engine.Engine) []int {
	t.Helper()
	var out []int
	for _, task := range takeReviews(t, eng) {
		if !task.HasItem {
			t.Fatalf("step %d: work without an item", task.Step)
		}
		out = append(out, task.Index)
	}
	return out
}

// takeReviews drains the reviewer's mailbox.
func takeReviews(t *testing.T, eng *engine.Engine) []*registry.Task {
	t.Helper()
	msgs, err := busOf(eng).TakeWork(context.Background(), "reviewer", 100)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]*registry.Task, 0, len(msgs))
	for _, m := range msgs {
		task, err := wire.Decode(m)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, task)
	}
	return out
}

// jsonEqual compares two values as JSON (a durable store gives numbers
// back as float64).
func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

func TestEngine_Foreach_ResumedWithoutRerunningEndedItems(t *testing.T) {
	for _, name := range storeNames {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			store := openStore(t, name)
			sim := clock.NewSim(epoch)
			first := foreachEngine(t, store, sim)
			inst := startForeach(t, first, sim, 4) // items 0, 1 at steps 2, 3
			report := func(eng *engine.Engine, step int, err error) {
				t.Helper()
				out := registry.Outcome{}
				if err == nil {
					out = registry.Outcome{Trigger: "reviewed", Result: map[string]any{"step": step}}
				}
				if rerr := eng.Report(ctx, inst.ID(), step, out, err); rerr != nil {
					t.Fatalf("report step %d: %v", step, rerr)
				}
				if rerr := sim.RunReady(ctx); rerr != nil {
					t.Fatal(rerr)
				}
			}
			report(first, 2, nil)                                                // item 0 done; item 2 starts at step 4
			report(first, 3, errors.New("flaky"))                                // item 1 waits 1s for its retry
			report(first, 4, registry.Kind(errors.New("unreadable"), "bad_doc")) // item 2 failed for good; item 3 at step 5
			_ = first.Close()                                                    // the process dies: item 3 is out, item 1 waits for its retry

			second := foreachEngine(t, store, sim)
			rep, err := second.Resume(ctx)
			if err != nil || !slices.Equal(rep.Resumed, []string{inst.ID()}) {
				t.Fatalf("Resume: got %+v, %v; want %s resumed", rep, err, inst.ID())
			}
			if got := workSteps(t, second); !slices.Equal(got, []int{5}) {
				t.Fatalf("resumed: got work for steps %v, want only [5] (item 3; items 0 and 2 ended)", got)
			}
			if !sim.FireNext() { // item 1's backoff is over (the earliest timer): its retry is step 6
				t.Fatal("no timer armed for item 1's retry")
			}
			if now := sim.Now(); !now.Equal(epoch.Add(time.Second)) {
				t.Errorf("the retry fired at %s, want the backoff's end %s", now, epoch.Add(time.Second))
			}
			if err := sim.RunReady(ctx); err != nil {
				t.Fatal(err)
			}
			if got := workSteps(t, second); !slices.Equal(got, []int{6}) {
				t.Fatalf("after the backoff: got work for steps %v, want [6] (item 1's retry)", got)
			}
			report(second, 5, nil)
			report(second, 6, nil)
			again, err := second.Instance(inst.ID())
			if err != nil {
				t.Fatal(err)
			}
			res := again.Result()
			wantCompleted(t, res, "SOME")
			want := []any{map[string]any{"step": 2}, map[string]any{"step": 6}, nil, map[string]any{"step": 5}}
			if !jsonEqual(res.Context["results"], want) {
				t.Errorf("got results %v, want %v", res.Context["results"], want)
			}
			if res.Steps != 6 {
				t.Errorf("got %d steps, want 6", res.Steps)
			}
		})
	}
}

// workSteps drains the reviewer's mailbox and returns the steps of the work
// it held.
func workSteps(t *testing.T, eng *engine.Engine) []int {
	t.Helper()
	var out []int
	for _, task := range takeReviews(t, eng) {
		out = append(out, task.Step)
	}
	return out
}
