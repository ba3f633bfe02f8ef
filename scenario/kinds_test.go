package scenario_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/scenario"
)

// TestRun_AgentKindsAreScripted: A2A, MCP and LLM agents are scripted by
// id like any agent, with their kinds' triggers and error kinds, and never
// called (the workflow's endpoints, programs and variables do not exist);
// a scripted LLM reply with tokens and no cost costs what the agent's
// price says.
func TestRun_AgentKindsAreScripted(t *testing.T) {
	files, err := filepath.Glob("testdata/kinds/scenarios/*.yaml")
	require.NoError(t, err)
	require.Len(t, files, 2)
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			s, err := scenario.Load(f)
			require.NoError(t, err)
			rep, err := scenario.Run(context.Background(), s, rules.LoadBeside)
			require.NoError(t, err)
			require.True(t, rep.Passed(), "%v", rep.Failures)
		})
	}
}
