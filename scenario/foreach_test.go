package scenario_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/scenario"
)

func TestRun_Foreach(t *testing.T) {
	const split = "agents:\n  splitter:\n    - {trigger: split, result: {docs: [a, b, c]}}\n"
	tests := []struct {
		name     string
		src      string
		failures []string
		outcome  string
	}{
		{
			name: "item runs take the agent's replies in the order they start",
			src: split + "  reviewer:\n    - {trigger: reviewed, result: {n: 1}}\n    - {trigger: reviewed, result: {n: 2}, delay: 5s}\n    - {trigger: reviewed, result: {n: 3}}\n" +
				"expect: {outcome: DONE, steps: 4, handoffs: [], context: {results: [{n: 1}, {n: 2}, {n: 3}]}}\n",
			outcome: "DONE",
		},
		{
			name: "a tolerated failure is partial",
			src: split + "  reviewer:\n    - {trigger: reviewed, result: {n: 1}}\n    - {error: unreadable, kind: bad_doc}\n    - {trigger: reviewed, result: {n: 3}}\n" +
				"expect: {outcome: SOME, context: {results: [{n: 1}, null, {n: 3}], errors: [{index: 1, message: unreadable, kind: bad_doc}]}}\n",
			outcome: "SOME",
		},
		{
			name: "too many failures: error with kind foreach_failed",
			src: split + "  reviewer:\n    - {error: a, kind: bad_doc}\n    - {error: b, kind: bad_doc}\n    - {trigger: reviewed}\n" +
				"expect: {outcome: FAILED, context: {kind: foreach_failed}}\n",
			outcome: "FAILED",
		},
		{
			name:     "an item with no reply left fails the scenario",
			src:      split + "  reviewer:\n    - {trigger: reviewed}\n    - {trigger: reviewed}\nexpect: {outcome: SOME}\n",
			failures: []string{"agent reviewer has no reply left for step 4 (state REVIEWS)"},
			outcome:  "SOME",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := scenario.Parse("testdata/foreach/s.yaml", []byte("scenario: foreach\nworkflow: workflow.yaml\n"+tt.src))
			require.NoError(t, err)
			rep, err := scenario.Run(context.Background(), s, nil)
			require.NoError(t, err)
			assert.Equal(t, tt.outcome, rep.Result.Outcome)
			require.Len(t, rep.Failures, len(tt.failures), "failures: %s", strings.Join(rep.Failures, "\n"))
			for i, f := range tt.failures {
				assert.Contains(t, rep.Failures[i], f)
			}
		})
	}
}

func TestTrace_Foreach(t *testing.T) {
	s, err := scenario.Parse("testdata/foreach/s.yaml", []byte(`scenario: foreach
workflow: workflow.yaml
agents:
  splitter:
    - {trigger: split, result: {docs: [a, b]}}
  reviewer:
    - {error: flaky, retryable: true}
    - {trigger: reviewed}
    - {trigger: reviewed}
expect: {outcome: DONE, steps: 4}
`))
	require.NoError(t, err)
	rep, err := scenario.Run(context.Background(), s, nil)
	require.NoError(t, err)
	require.Empty(t, rep.Failures)
	var got []string
	for _, r := range rep.Steps {
		got = append(got, strings.Join([]string{r.State, r.Agent, r.Trigger, r.Rule, r.Next}, "|"))
	}
	assert.Equal(t, []string{
		"SPLIT|splitter|split|split|REVIEWS",
		"REVIEWS|reviewer|error: flaky||retry in 1s",
		"REVIEWS|reviewer|reviewed||",
		"REVIEWS|reviewer|reviewed||",
		"REVIEWS|REVIEWS|joined|all|DONE",
	}, got)
}
