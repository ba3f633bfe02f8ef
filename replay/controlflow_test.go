package replay_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/replay"
	"github.com/batonhq/baton/rules"
)

const documentReview = "../examples/document-review/workflow.yaml"

func TestCheck_ForeachAndChildWorkflows(t *testing.T) {
	load := func(t *testing.T) *rules.Workflow {
		w, err := rules.LoadBeside(documentReview)
		require.NoError(t, err)
		return w
	}
	tests := []struct {
		name     string
		scenario string
		workflow func(t *testing.T) *rules.Workflow
		wantDiff string
		wantAt   string // the state of the divergent step
	}{
		{name: "a foreach's outcome and a child's terminal state replay", scenario: "../examples/document-review/scenarios/approved.yaml", workflow: load},
		{name: "a partial foreach replays", scenario: "../examples/document-review/scenarios/one_unreadable.yaml", workflow: load},
		{name: "a failed child replays", scenario: "../examples/document-review/scenarios/kyc_failed.yaml", workflow: load},
		{
			name:     "a rule leaving the foreach edited: the replay diverges there",
			scenario: "../examples/document-review/scenarios/sent_back.yaml",
			workflow: func(t *testing.T) *rules.Workflow {
				return editedBeside(t, "id: too_many_unreadable, from: REVIEWS, trigger: error, next: SENT_BACK", "id: too_many_unreadable, from: REVIEWS, trigger: error, next: FAILED")
			},
			wantDiff: "next state", wantAt: "REVIEWS",
		},
		{
			name:     "a rule leaving the workflow state edited: the replay diverges there",
			scenario: "../examples/document-review/scenarios/kyc_refused.yaml",
			workflow: func(t *testing.T) *rules.Workflow {
				return editedBeside(t, "id: kyc_refused, from: KYC, trigger: REFUSED, next: REJECTED", "id: kyc_refused, from: KYC, trigger: REFUSED, next: FAILED")
			},
			wantDiff: "next state", wantAt: "KYC",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep, err := replay.Check(tt.workflow(t), recordedHistory(t, tt.scenario))
			require.NoError(t, err)
			if tt.wantDiff == "" {
				assert.Nil(t, rep.Divergence, "%+v", rep.Divergence)
				return
			}
			require.NotNil(t, rep.Divergence)
			assert.Equal(t, tt.wantDiff, rep.Divergence.Diff)
			assert.Equal(t, tt.wantAt, rep.Divergence.State)
		})
	}
}

// editedBeside is the document-review workflow with old replaced by new
// (a single file is enough: replay decides the parent's outcomes only).
func editedBeside(t *testing.T, old, new string) *rules.Workflow {
	t.Helper()
	return edited(t, documentReview, old, new)
}
