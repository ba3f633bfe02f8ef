package scenario_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/scenario"
)

// A scripted result that breaks its agent's declaration fails that run with
// kind invalid_result: the retry policy, error.kind and the step table see
// it as they would a real agent's.
func TestRun_TypedResults(t *testing.T) {
	const input = "input: {order_id: \"1\", amount: 50}\n"
	tests := []struct {
		name, src, outcome string
	}{
		{"a bad result is retried", "agents:\n  reviewer:\n    - {trigger: reviewed, result: {approval: yes, score: high}}\n    - {trigger: reviewed, result: {approval: yes, score: 4}}\nexpect: {outcome: APPROVED, steps: 2}\n", "APPROVED"},
		{"no retry left: error.kind", "agents:\n  reviewer:\n    - {trigger: reviewed, result: {approval: yes}}\n    - {trigger: reviewed, result: {approval: true, score: 4}}\nexpect: {outcome: INVALID, steps: 2}\n", "INVALID"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := scenario.Parse("testdata/typed/s.yaml", []byte("scenario: typed\nworkflow: workflow.yaml\n"+input+tt.src))
			require.NoError(t, err)
			rep, err := scenario.Run(context.Background(), s, nil)
			require.NoError(t, err)
			assert.Empty(t, rep.Failures)
			assert.Equal(t, tt.outcome, rep.Result.Outcome)
			require.NotEmpty(t, rep.Steps)
			assert.Contains(t, rep.Steps[0].Trigger, "result.score")
		})
	}
}
