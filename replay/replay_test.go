package replay_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/record"
	"github.com/batonhq/baton/replay"
	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/scenario"
)

// recordedHistory replays a scenario and returns its history as it comes
// back from a JSON export (numbers as float64, as a file would give them).
func recordedHistory(t *testing.T, scenarioFile string) []record.Entry {
	t.Helper()
	s, err := scenario.Load(scenarioFile)
	require.NoError(t, err)
	rep, err := scenario.Run(context.Background(), s, rules.LoadBeside)
	require.NoError(t, err)
	require.True(t, rep.Passed(), "%v", rep.Failures)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for _, e := range rep.History {
		require.NoError(t, enc.Encode(e))
	}
	require.NoError(t, enc.Encode(map[string]any{"kind": "verdict", "passed": true}))
	history, err := replay.ReadHistory(&buf)
	require.NoError(t, err)
	return history
}

// edited loads a workflow file after replacing old with new in its source.
func edited(t *testing.T, file, old, new string) *rules.Workflow {
	t.Helper()
	src, err := os.ReadFile(file)
	require.NoError(t, err)
	require.Contains(t, string(src), old, "the edit must apply")
	w, err := rules.Parse(file, []byte(strings.Replace(string(src), old, new, 1)))
	require.NoError(t, err)
	return w
}

func TestCheck_UnchangedWorkflowsReplayClean(t *testing.T) {
	files, err := filepath.Glob("../examples/*/scenarios/*.yaml")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		t.Run(f, func(t *testing.T) {
			history := recordedHistory(t, f)
			s, err := scenario.Load(f)
			require.NoError(t, err)
			w, err := rules.Load(s.Workflow)
			require.NoError(t, err)
			rep, err := replay.Check(w, history)
			require.NoError(t, err)
			assert.Nil(t, rep.Divergence, "got a divergence %+v", rep.Divergence)
			outcomes := 0
			for _, e := range history {
				if e.Kind == record.KindOutcome {
					outcomes++
				}
			}
			assert.Len(t, rep.Steps, outcomes, "every outcome is compared")
		})
	}
}

func TestCheck_ReportsTheFirstDivergence(t *testing.T) {
	const refund, jetvision = "../examples/refund/workflow.yaml", "../examples/jetvision/workflow.yaml"
	tests := []struct {
		name     string
		scenario string
		workflow *rules.Workflow
		step     int
		diff     string
		recorded string
		replayed string
	}{
		{
			name:     "a changed priority",
			scenario: "../examples/jetvision/scenarios/with_client.yaml",
			workflow: edited(t, jetvision, "    trigger: analyzed\n    priority: normal\n    next: SEARCHING_FLIGHTS", "    trigger: analyzed\n    priority: urgent\n    next: SEARCHING_FLIGHTS"),
			step:     1, diff: "rule",
			recorded: "rule r1_1_fetch_client_data -> FETCHING_CLIENT_DATA (hand-off to client_data)",
			replayed: "rule r1_2_search_flights -> SEARCHING_FLIGHTS (hand-off to flight_search)",
		},
		{
			name:     "a changed condition",
			scenario: "../examples/refund/scenarios/approved.yaml",
			workflow: edited(t, refund, `condition: result.approval == "APPROVED"`, `condition: result.approval == "YES"`),
			step:     2, diff: "rule",
			recorded: "rule approved -> REFUNDING (hand-off to payment)",
			replayed: "rule undecided -> ESCALATED (hand-off to supervisor)",
		},
		{
			name:     "a changed target",
			scenario: "../examples/refund/scenarios/rejected.yaml",
			workflow: edited(t, refund, "    priority: high\n    to: notification\n    next: REJECTED", "    priority: high\n    to: supervisor\n    next: REJECTED"),
			step:     2, diff: "hand-off",
			recorded: "rule declined -> REJECTED (hand-off to notification)",
			replayed: "rule declined -> REJECTED (hand-off to supervisor)",
		},
		{
			name:     "a changed next state",
			scenario: "../examples/refund/scenarios/payment_fails.yaml",
			workflow: edited(t, refund, "    priority: urgent\n    next: ESCALATED\n    reason: Payment failed", "    priority: urgent\n    next: FAILED\n    reason: Payment failed"),
			step:     5, diff: "next state",
			recorded: "rule payment_failed -> ESCALATED (hand-off to supervisor)",
			replayed: "rule payment_failed -> FAILED",
		},
		{
			name:     "a tighter loop budget",
			scenario: "../examples/refund/scenarios/review_loop_limit.yaml",
			workflow: edited(t, refund, "max_visits: 3}", "max_visits: 2}"),
			step:     5, diff: "limit", // the third entry into REVIEWING
			recorded: "rule eligible -> REVIEWING (hand-off to seller)",
			replayed: "rule eligible -> REVIEWING refused by max_visits",
		},
		{
			name:     "a rule removed",
			scenario: "../examples/refund/scenarios/ineligible.yaml",
			workflow: edited(t, refund, "  - id: ineligible\n    from: customer\n    trigger: validated\n", "  - id: ineligible\n    from: customer\n    trigger: never\n"),
			step:     1, diff: "failure",
			recorded: "rule ineligible -> REJECTED (hand-off to notification)",
			replayed: "fail: no rule matched",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep, err := replay.Check(tt.workflow, recordedHistory(t, tt.scenario))
			require.NoError(t, err)
			require.NotNil(t, rep.Divergence, "the edit must be caught")
			d := rep.Divergence
			assert.Equal(t, tt.step, d.Step)
			assert.Equal(t, tt.diff, d.Diff)
			assert.Equal(t, tt.recorded, d.Recorded.String())
			assert.Equal(t, tt.replayed, d.Replayed.String())
			assert.Same(t, d, &rep.Steps[len(rep.Steps)-1], "the divergence is the last step compared")
		})
	}
}

func TestReadHistory_ArrayAndErrors(t *testing.T) {
	entries, err := replay.ReadHistory(strings.NewReader(`[{"seq":1,"kind":"started","state":"A"}]`))
	require.NoError(t, err)
	require.Len(t, entries, 1)
	assert.Equal(t, record.KindStarted, entries[0].Kind)

	_, err = replay.ReadHistory(strings.NewReader("{\"kind\":\"started\"}\nnot json\n"))
	assert.ErrorContains(t, err, "history line 2")

	w, err := rules.Load("../examples/refund/workflow.yaml")
	require.NoError(t, err)
	_, err = replay.Check(w, nil)
	assert.ErrorIs(t, err, replay.ErrNoHistory)
}
