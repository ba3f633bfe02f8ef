package replay_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/replay"
	"github.com/batonhq/baton/rules"
)

const approval = "../examples/approval/workflow.yaml"

func TestCheck_Signals(t *testing.T) {
	tests := []struct {
		name     string
		scenario string
		workflow func(t *testing.T) *rules.Workflow
		wantDiff string // "" when the replay agrees throughout
		wantAt   string // the trigger of the divergent step
	}{
		{
			name:     "signals replay as the outcomes of their wait",
			scenario: "../examples/approval/scenarios/changes_requested.yaml",
			workflow: func(t *testing.T) *rules.Workflow { w, err := rules.Load(approval); require.NoError(t, err); return w },
		},
		{
			name:     "the wait's timeout replays too",
			scenario: "../examples/approval/scenarios/expired.yaml",
			workflow: func(t *testing.T) *rules.Workflow { w, err := rules.Load(approval); require.NoError(t, err); return w },
		},
		{
			name:     "a signal's rule edited: the replay diverges at the signal",
			scenario: "../examples/approval/scenarios/approved.yaml",
			workflow: func(t *testing.T) *rules.Workflow {
				return edited(t, approval, "    trigger: approved\n    next: SENDING", "    trigger: approved\n    next: REJECTED")
			},
			wantDiff: "next state", wantAt: "approved",
		},
		{
			name:     "a signal's data is the result rules read",
			scenario: "../examples/approval/scenarios/rejected.yaml",
			workflow: func(t *testing.T) *rules.Workflow {
				return edited(t, approval, "trigger: rejected, next: REJECTED,", `trigger: rejected, condition: 'result.by == "ana"', next: REJECTED,`)
			},
			wantDiff: "failure", wantAt: "rejected",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			history := recordedHistory(t, tt.scenario)
			rep, err := replay.Check(tt.workflow(t), history)
			require.NoError(t, err)
			if tt.wantDiff == "" {
				assert.Nil(t, rep.Divergence, "%+v", rep.Divergence)
				var waits int
				for _, s := range rep.Steps {
					if s.State == "APPROVAL" {
						waits++
					}
				}
				assert.Positive(t, waits, "the wait's outcomes are compared")
				return
			}
			require.NotNil(t, rep.Divergence)
			assert.Equal(t, tt.wantDiff, rep.Divergence.Diff)
			assert.Equal(t, "APPROVAL", rep.Divergence.State)
			assert.Equal(t, tt.wantAt, rep.Divergence.Trigger)
		})
	}
}
