package scenario_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

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
			if orig.Result.Status != engine.StatusCompleted && orig.Result.Status != engine.StatusFailed {
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
