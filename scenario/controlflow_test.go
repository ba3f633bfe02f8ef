package scenario_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/scenario"
)

// play parses a scenario of testdata/cf/workflow.yaml and runs it.
func play(t *testing.T, src string) *scenario.Report {
	t.Helper()
	s, err := scenario.Parse("testdata/cf/s.yaml", []byte("scenario: cf\nworkflow: workflow.yaml\n"+src))
	require.NoError(t, err)
	rep, err := scenario.Run(context.Background(), s, nil)
	require.NoError(t, err)
	return rep
}

func TestRun_ControlFlow(t *testing.T) {
	const checked = "agents:\n  checker:\n    - {trigger: checked, result: {number: 7}}\n"
	tests := []struct {
		name     string
		src      string
		failures []string // substrings, one per expected failure; none: the scenario passes
		outcome  string
	}{
		{
			name:    "a signal is sent when the instance waits for it",
			src:     checked + "signals:\n  - {signal: go, data: {by: ana}, delay: 10m}\nexpect: {outcome: DONE, steps: 1, context: {by: ana, number: 7}}\n",
			outcome: "DONE",
		},
		{
			name:    "no signal: the wait times out",
			src:     checked + "expect: {outcome: EXPIRED}\n",
			outcome: "EXPIRED",
		},
		{
			name:     "a signal delayed past the timeout is left unsent",
			src:      checked + "signals:\n  - {signal: go, delay: 2h}\nexpect: {outcome: EXPIRED}\n",
			failures: []string{"signal go at line 7 left unsent"},
			outcome:  "EXPIRED",
		},
		{
			name:     "a signal no wait state lists, with a suggestion",
			src:      checked + "signals:\n  - {signal: goo}\nexpect: {outcome: EXPIRED}\n",
			failures: []string{`no wait state of workflow cf lists signal "goo" (did you mean "go"?)`, "signal goo at line 7 left unsent"},
			outcome:  "EXPIRED",
		},
		{
			name:     "expect.context and expect.steps are checked",
			src:      checked + "signals:\n  - {signal: stop}\nexpect: {outcome: STOPPED, steps: 2, context: {number: 8, by: ana}}\n",
			failures: []string{"steps: got 1, want 2", "context.by: missing", "context.number: got 7, want 8"},
			outcome:  "STOPPED",
		},
		{
			name:     "a condition error fails the scenario",
			src:      "agents:\n  checker:\n    - {trigger: checked, result: {number: ABC-1}}\nsignals:\n  - {signal: stop}\nexpect: {outcome: STOPPED}\n",
			failures: []string{"condition failed at run time at step 1 (counted as false): rule big: `result.number > 100000`"},
			outcome:  "STOPPED",
		},
		{
			name:    "unless the scenario allows it",
			src:     "agents:\n  checker:\n    - {trigger: checked, result: {number: ABC-1}}\nsignals:\n  - {signal: stop}\nexpect: {outcome: STOPPED, condition_errors: true}\n",
			outcome: "STOPPED",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep := play(t, tt.src)
			assert.Equal(t, tt.outcome, rep.Result.Outcome)
			require.Len(t, rep.Failures, len(tt.failures), "failures: %q", rep.Failures)
			for k, want := range tt.failures {
				assert.Contains(t, rep.Failures[k], want)
			}
		})
	}
}

func TestRun_ConditionErrorMarksItsStep(t *testing.T) {
	rep := play(t, "agents:\n  checker:\n    - {trigger: checked, result: {number: ABC-1}}\nsignals:\n  - {signal: go, data: {by: bo}}\nexpect: {condition_errors: true}\n")
	require.True(t, rep.Passed(), "%q", rep.Failures)
	require.NotEmpty(t, rep.Steps)
	row := rep.Steps[0]
	require.Len(t, row.ConditionErrors, 1)
	assert.True(t, strings.HasPrefix(row.ConditionErrors[0], "rule big: `result.number > 100000`: "), row.ConditionErrors[0])
	wait := rep.Steps[1]
	assert.Equal(t, scenario.Row{Step: 1, State: "WAIT", Agent: "(wait)", Trigger: "signal go", Rule: "go", Next: "DONE"}, wait)
}

func TestRun_ReplyKind(t *testing.T) {
	s, err := scenario.Parse("testdata/s.yaml", []byte("scenario: x\nworkflow: f\nagents:\n  a:\n    - {error: slow down, kind: rate_limited}\n    - {trigger: t, kind: x}\n"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "testdata/s.yaml:6:26: kind goes with error")
	assert.Nil(t, s)
	s, err = scenario.Parse("testdata/s.yaml", []byte("scenario: x\nworkflow: f\nagents:\n  a:\n    - {error: slow down, kind: rate_limited}\nsignals:\n  - {signal: go, data: {by: ana}, delay: 2h}\nexpect: {steps: 3, condition_errors: true, context: {a: 1}}\n"))
	require.NoError(t, err)
	assert.Equal(t, "rate_limited", s.Agents["a"][0].Kind)
	require.Len(t, s.Signals, 1)
	assert.Equal(t, "go", s.Signals[0].Name)
	assert.Equal(t, map[string]any{"by": "ana"}, s.Signals[0].Data)
	assert.Equal(t, 3, *s.Expect.Steps)
	assert.True(t, s.Expect.ConditionErrors)
	assert.Equal(t, map[string]any{"a": 1}, s.Expect.Context)
}
