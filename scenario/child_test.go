package scenario_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/scenario"
)

func TestRun_ChildWorkflow(t *testing.T) {
	const signed = "agents:\n  signup:\n    - {trigger: signed, result: {customer: c-1}}\n"
	tests := []struct {
		name     string
		src      string
		failures []string
		outcome  string
	}{
		{
			name: "the child's agents are scripted in the same agents map",
			src: signed + "  checker:\n    - {trigger: ok, result: {level: high}}\n  welcomer:\n    - {trigger: welcomed}\n" +
				"expect: {outcome: DONE, steps: 2, states: [SIGNUP, KYC, WELCOME, DONE], context: {level: high, checked: c-1}}\n",
			outcome: "DONE",
		},
		{
			name:    "a child that fails",
			src:     signed + "  checker:\n    - {error: registry down}\nexpect: {outcome: BROKEN, context: {kind: child_failed}}\n",
			outcome: "BROKEN",
		},
		{
			name:    "a child that takes too long",
			src:     signed + "  checker:\n    - {trigger: ok, delay: 2h}\nexpect: {outcome: LATE, context: {kind: timeout}}\n",
			outcome: "LATE",
		},
		{
			name:     "a typo in a child's agent is caught",
			src:      signed + "  chekcer:\n    - {trigger: ok}\nexpect: {outcome: DONE}\n",
			failures: []string{`agent "chekcer" is not in workflow onboarding (did you mean "checker"?)`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := scenario.Parse("testdata/child/scenarios/s.yaml", []byte("scenario: child\nworkflow: ../onboarding.yaml\n"+tt.src))
			require.NoError(t, err)
			rep, err := scenario.Run(context.Background(), s, rules.LoadBeside)
			if tt.outcome == "" {
				require.Error(t, err)
				for _, f := range tt.failures {
					assert.Contains(t, err.Error(), f)
				}
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.outcome, rep.Result.Outcome)
			require.Len(t, rep.Failures, len(tt.failures), "failures: %s", strings.Join(rep.Failures, "\n"))
		})
	}
}

func TestRun_SignalsReachAWaitingChild(t *testing.T) {
	tests := []struct{ name, src, outcome string }{
		{"the child waits for the signal", "signals:\n  - {signal: checked, data: {by: ana}, delay: 1h}\nexpect: {outcome: DONE, context: {by: ana}}\n", "DONE"},
		{"the parent's timeout comes first", "expect: {outcome: LATE}\n", "LATE"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := scenario.Parse("testdata/childwait/scenarios/s.yaml", []byte("scenario: child wait\nworkflow: ../parent.yaml\n"+tt.src))
			require.NoError(t, err)
			rep, err := scenario.Run(context.Background(), s, nil)
			require.NoError(t, err)
			assert.Equal(t, tt.outcome, rep.Result.Outcome)
			assert.Empty(t, rep.Failures)
		})
	}
}
