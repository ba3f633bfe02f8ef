package scenario_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/record"
	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/scenario"
)

// recordRun replays the scenario at path with a store and returns the
// report and every instance the store kept, the root first.
func recordRun(t *testing.T, path string) (*scenario.Report, scenario.Recording, []scenario.Recording) {
	t.Helper()
	ctx := context.Background()
	s, err := scenario.Load(path)
	require.NoError(t, err)
	st := record.NewMemStore()
	rep, err := scenario.Run(ctx, s, rules.LoadBeside, engine.WithStore(st))
	require.NoError(t, err)
	snaps, err := st.Instances(ctx)
	require.NoError(t, err)
	var root scenario.Recording
	var children []scenario.Recording
	for _, snap := range snaps {
		h, err := st.History(ctx, snap.ID)
		require.NoError(t, err)
		rec := scenario.Recording{Snapshot: snap, History: h}
		if snap.ID == rep.Result.ID {
			root = rec
		} else {
			children = append(children, rec)
		}
	}
	require.NotEmpty(t, root.Snapshot.ID)
	return rep, root, children
}

// TestFromHistory_RoundTripsEveryExample records every example scenario's
// run, turns it into a scenario, writes and reads that back, and replays
// it: it passes, takes the same path, and also passes the original
// scenario's expectations.
func TestFromHistory_RoundTripsEveryExample(t *testing.T) {
	paths, err := filepath.Glob("../examples/*/scenarios/*.yaml")
	require.NoError(t, err)
	require.NotEmpty(t, paths)
	for _, path := range paths {
		t.Run(path, func(t *testing.T) {
			orig, root, children := recordRun(t, path)
			if orig.Result.Status != record.StatusCompleted && orig.Result.Status != record.StatusFailed {
				t.Fatalf("the example ended %s", orig.Result.Status)
			}
			sc, err := scenario.FromHistory(root, children...)
			require.NoError(t, err)
			sc.Workflow, err = filepath.Rel(filepath.Dir(path), orig.Scenario.Workflow)
			require.NoError(t, err)
			src, err := scenario.Marshal(sc)
			require.NoError(t, err)
			back, err := scenario.Parse(filepath.Join(filepath.Dir(path), "recorded.yaml"), src)
			require.NoError(t, err, "%s", src)

			rep, err := scenario.Run(context.Background(), back, rules.LoadBeside)
			require.NoError(t, err)
			assert.Empty(t, rep.Failures, "%s", src)
			assert.Equal(t, orig.States, rep.States)
			assert.Equal(t, orig.Handoffs, rep.Handoffs)
			assert.Equal(t, orig.Result.Status, rep.Result.Status)
			assert.Equal(t, orig.Result.Outcome, rep.Result.Outcome)
			assert.Equal(t, orig.Result.Steps, rep.Result.Steps)
			assert.Equal(t, orig.Result.Usage.Totals, rep.Result.Usage.Totals)

			// Same verdict: the original's expectations hold for the replay.
			again := *back
			again.Expect = orig.Scenario.Expect
			rep, err = scenario.Run(context.Background(), &again, rules.LoadBeside)
			require.NoError(t, err)
			assert.Equal(t, orig.Passed(), rep.Passed(), "%v", rep.Failures)
		})
	}
}

func TestFromHistory_RefusesUnfinished(t *testing.T) {
	for _, st := range []record.Status{record.StatusRunning, record.StatusCanceled} {
		_, err := scenario.FromHistory(scenario.Recording{Snapshot: record.Snapshot{ID: "i-1", Status: st}})
		assert.True(t, errors.Is(err, scenario.ErrNotFinished), "%s: got %v", st, err)
	}
}

// TestFromHistory_Recorded checks what FromHistory makes of entries the
// examples do not produce.
func TestFromHistory_Recorded(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	root := scenario.Recording{
		Snapshot: record.Snapshot{
			ID: "i-7", Workflow: "w", Version: 2, Status: record.StatusFailed,
			Error:   "engine: instance i-7 failed in state A: rules: no rule matched",
			Context: map[string]any{"seen": "i-7/KYC/1", "n": json.Number("3")},
		},
		History: []record.Entry{
			{Seq: 1, Time: at, Kind: record.KindStarted, State: "A", Result: map[string]any{"amount": json.Number("2.5")}},
			{Seq: 2, Time: at, Kind: record.KindDispatch, Step: 1, Attempt: 1, State: "A", Agent: "a"},
			{Seq: 3, Time: at.Add(1500 * time.Millisecond), Kind: record.KindAgentRun, Step: 1, Attempt: 1, State: "A", Agent: "a", Trigger: "done"},
			{Seq: 4, Time: at.Add(1500 * time.Millisecond), Kind: record.KindOutcome, Step: 1, State: "A", Agent: "a", Trigger: "done"},
			{Seq: 5, Time: at.Add(1500 * time.Millisecond), Kind: record.KindCondition, Step: 1, State: "A", Rule: "r", Condition: "result.x > 1", Error: "no x"},
			{Seq: 6, Time: at.Add(1500 * time.Millisecond), Kind: record.KindFailed, Step: 1, State: "A"},
		},
	}
	sc, err := scenario.FromHistory(root)
	require.NoError(t, err)
	replayID := "00000000-0000-4000-8000-000000000001"
	assert.Equal(t, "failed", sc.Expect.Status)
	assert.Equal(t, "engine: instance "+replayID+" failed in state A: rules: no rule matched", sc.Expect.Error, "the replay's id")
	assert.Equal(t, map[string]any{"seen": replayID + "/KYC/1", "n": int64(3)}, sc.Expect.Context)
	assert.Equal(t, map[string]any{"amount": 2.5}, sc.Input)
	assert.True(t, sc.Expect.ConditionErrors, "the recorded run's condition errors are expected")
	require.Len(t, sc.Agents["a"], 1)
	assert.Equal(t, "done", sc.Agents["a"][0].Trigger)
	assert.Equal(t, 1500*time.Millisecond, sc.Agents["a"][0].Delay)
}

// FuzzFromHistory: any history, however odd, gives a scenario that Marshal
// writes and Parse reads back, or an error; never a panic.
func FuzzFromHistory(f *testing.F) {
	f.Add([]byte(`[{"seq":1,"kind":"started","state":"A","result":{"x":1}},{"seq":2,"kind":"dispatch","step":1,"agent":"a"},{"seq":3,"kind":"agent_run","step":1,"agent":"a"}]`))
	f.Add([]byte(`[{"kind":"handoff","step":2,"agent":"b","from":"a","to":"b"},{"kind":"agent_run","step":2,"agent":"b","to":"c","detail":"hand-off (x"},{"kind":"handoff","step":3,"from":"b","to":"c"},{"kind":"returned","step":3}]`))
	f.Add([]byte(`[{"kind":"dispatch","step":1,"agent":"a"},{"kind":"agent_run","step":1,"agent":"a","error":"t","error_kind":"timeout"},{"kind":"late_reply","step":1,"error":"x"},{"kind":"waiting"},{"kind":"signal","trigger":"go"},{"kind":"selected","step":1,"to":"z"},{"kind":"child","detail":"c"}]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var history []record.Entry
		if json.Unmarshal(data, &history) != nil {
			return
		}
		root := scenario.Recording{Snapshot: record.Snapshot{ID: "i", Status: record.StatusCompleted}, History: history}
		child := scenario.Recording{Snapshot: record.Snapshot{ID: "c", Status: record.StatusCompleted}, History: history}
		sc, err := scenario.FromHistory(root, child)
		require.NoError(t, err)
		sc.Workflow = "w.yaml"
		src, err := scenario.Marshal(sc)
		require.NoError(t, err)
		_, _ = scenario.Parse("f.yaml", src)
	})
}
