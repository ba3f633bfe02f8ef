package scenario_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/record"
	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/scenario"
)

// TestRun_BudgetScenarios runs a scenario per budget kind: each passes, and
// its history shows the hit of the budget its file names, right after the
// outcome whose usage crossed it (max_duration: on the clock).
func TestRun_BudgetScenarios(t *testing.T) {
	files, err := filepath.Glob("testdata/budget/scenarios/*.yaml")
	require.NoError(t, err)
	require.Len(t, files, 8)
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			s, err := scenario.Load(f)
			require.NoError(t, err)
			rep, err := scenario.Run(context.Background(), s, rules.LoadBeside)
			require.NoError(t, err)
			require.True(t, rep.Passed(), "%v", rep.Failures)
			base := filepath.Base(f)
			limit := "max_" + strings.Split(strings.TrimPrefix(base, "state_"), "_")[0]
			var hits []int
			for k, e := range rep.History {
				if e.Kind == record.KindLimitHit {
					hits = append(hits, k)
				}
			}
			require.Len(t, hits, 1, "limit hits")
			hit := rep.History[hits[0]]
			assert.Equal(t, limit, hit.Limit)
			if strings.HasSuffix(base, "_fails.yaml") {
				assert.Equal(t, "failed", string(rep.Result.Status))
			} else {
				assert.Equal(t, "SUMMARY", rep.States[len(rep.States)-2], "on_limit routes to SUMMARY")
			}
			if limit != "max_duration" {
				prev := rep.History[hits[0]-1]
				assert.Equal(t, record.KindRuleFired, prev.Kind, "the hit replaces the rule the crossing report chose")
			}
		})
	}
}

// play is a scenario of testdata/budget/workflow.yaml.
func playBudget(t *testing.T, src string) *scenario.Report {
	t.Helper()
	s, err := scenario.Parse("testdata/budget/scenarios/s.yaml", []byte("scenario: budget\nworkflow: ../workflow.yaml\n"+src))
	require.NoError(t, err)
	rep, err := scenario.Run(context.Background(), s, nil)
	require.NoError(t, err)
	return rep
}

func TestRun_ExpectUsage(t *testing.T) {
	const agents = "agents:\n  writer:\n    - {trigger: drafted, usage: {input_tokens: 10, output_tokens: 5, cost: 0.1}}\n" +
		"  critic:\n    - {error: flaky, usage: {input_tokens: 3, cost: 0.2}, retryable: false}\n"
	tests := []struct {
		name, expect string
		failures     []string
	}{
		{"equal", "{tokens: 18, cost: 0.3}", nil},
		{"cost within 1e-9", "{cost: 0.3000000005}", nil},
		{"tokens only", "{tokens: 18}", nil},
		{"tokens differ", "{tokens: 15, cost: 0.3}", []string{"usage.tokens: got 18, want 15"}},
		{"cost differs", "{cost: 0.31}", []string{"usage.cost: got 0.30000000000000004, want 0.31"}},
		{"cost off by more than 1e-9", "{cost: 0.300000002}", []string{"usage.cost: got"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// The critic's failed run counts: no rule reads its error, so the
			// instance fails.
			rep := playBudget(t, agents+"expect: {status: failed, usage: "+tt.expect+"}\n")
			require.Len(t, rep.Failures, len(tt.failures), "%v", rep.Failures)
			for k, f := range tt.failures {
				assert.Contains(t, rep.Failures[k], f)
			}
		})
	}
}

func TestParse_UsageErrors(t *testing.T) {
	tests := []struct{ src, want string }{
		{"agents:\n  writer:\n    - {trigger: drafted, usage: {input_tokens: -1}}\n", `5:48: input_tokens must be a count of tokens (an integer, 0 or more), got "-1"`},
		{"agents:\n  writer:\n    - {trigger: drafted, usage: {output_tokens: 1.5}}\n", `5:49: output_tokens must be a count of tokens`},
		{"agents:\n  writer:\n    - {trigger: drafted, usage: {cost: -0.5}}\n", `5:40: cost must be a number, 0 or more, got "-0.5"`},
		{"agents:\n  writer:\n    - {trigger: drafted, usage: {cost: lots}}\n", `5:40: cost must be a number, 0 or more, got "lots"`},
		{"agents:\n  writer:\n    - {trigger: drafted, usage: {cost: .inf}}\n", `5:40: cost must be a number`},
		{"agents:\n  writer:\n    - {trigger: drafted, usage: {tokens: 5}}\n", `5:34: unknown key "tokens" in usage of writer`},
		{"agents:\n  writer:\n    - {trigger: drafted, usage: {input_token: 5}}\n", `(did you mean "input_tokens"?)`},
		{"agents:\n  writer:\n    - {trigger: drafted, usage: 5}\n", `5:33: usage of writer must be a mapping`},
		{"expect: {usage: {tokens: -1}}\n", `3:26: tokens must be a count of tokens`},
		{"expect: {usage: {cost: x}}\n", `3:24: cost must be a number`},
		{"expect: {usage: {input_tokens: 5}}\n", `3:18: unknown key "input_tokens" in expect.usage`},
	}
	for _, tt := range tests {
		_, err := scenario.Parse("testdata/budget/scenarios/s.yaml", []byte("scenario: budget\nworkflow: ../workflow.yaml\n"+tt.src))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: got %v, want an error containing %q", tt.src, err, tt.want)
		}
	}
}
