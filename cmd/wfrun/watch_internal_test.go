package main

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/registry"
)

// wfrun watch prints what a run under way says and what a run used.
func TestPrintEvent_ProgressAndUsage(t *testing.T) {
	c := &client{output: "table"}
	at := time.Date(2026, 11, 27, 10, 2, 11, 0, time.UTC)
	var out bytes.Buffer
	require.NoError(t, c.printEvent(&out, event{Type: "agent_progress", Step: 3, Agent: "writer", Time: at,
		Progress: &registry.Progress{Message: "drafting", Delta: "Dear customer,"}}))
	require.NoError(t, c.printEvent(&out, event{Type: "agent_reported", Step: 3, Agent: "writer", Time: at, Trigger: "drafted",
		Usage: &registry.Usage{InputTokens: 1200, OutputTokens: 300, Cost: 0.25}}))
	got := out.String()
	assert.Contains(t, got, `agent_progress  writer: drafting "Dear customer,"`)
	assert.Contains(t, got, "agent_reported  writer trigger drafted (1200+300 tokens, cost 0.25)")
}

// The step table has a usage column when some run reported usage, and none
// otherwise.
func TestRun_StepTableUsageColumn(t *testing.T) {
	out, errOut, code := wfrun(t, "run", "../../scenario/testdata/budget/scenarios/cost_fails.yaml")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "HANDOFF         USAGE")
	assert.Contains(t, out, "0+0 tokens, cost 0.25")
	out, errOut, code = wfrun(t, "run", "../../examples/refund/scenarios/approved.yaml")
	require.Equal(t, 0, code, errOut)
	assert.NotContains(t, out, "USAGE")
}
