package scenario_test

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/scenario"
)

// plain is a reply without its positions in a file, as JSON: a number is
// the same whether YAML read it as an integer or a float.
func plain(t *testing.T, r scenario.Reply) string {
	return asJSON(t, scenario.Reply{
		Trigger: r.Trigger, Result: r.Result, Error: r.Error, Retryable: r.Retryable, Kind: r.Kind,
		Reject: r.Reject, Handoff: r.Handoff, Select: r.Select, Delay: r.Delay, Usage: r.Usage,
	})
}

func asJSON(t *testing.T, v any) string {
	t.Helper()
	data, err := json.Marshal(v)
	require.NoError(t, err)
	return string(data)
}

// TestMarshal_ReadsBackEveryExample writes every example scenario with
// Marshal and parses it back: the same name, input, replies, signals and
// expectations.
func TestMarshal_ReadsBackEveryExample(t *testing.T) {
	paths, err := filepath.Glob("../examples/*/scenarios/*.yaml")
	require.NoError(t, err)
	require.NotEmpty(t, paths)
	for _, path := range paths {
		t.Run(path, func(t *testing.T) {
			want, err := scenario.Load(path)
			require.NoError(t, err)
			out := *want
			out.Workflow, err = filepath.Rel(filepath.Dir(path), want.Workflow)
			require.NoError(t, err)
			src, err := scenario.Marshal(&out)
			require.NoError(t, err)
			got, err := scenario.Parse(path, src)
			require.NoError(t, err, "%s", src)

			assert.Equal(t, want.Name, got.Name)
			assert.Equal(t, want.Workflow, got.Workflow)
			assert.JSONEq(t, asJSON(t, want.Input), asJSON(t, got.Input))
			require.Equal(t, len(want.Agents), len(got.Agents))
			for agent, replies := range want.Agents {
				require.Len(t, got.Agents[agent], len(replies), agent)
				for k, r := range replies {
					assert.JSONEq(t, plain(t, r), plain(t, got.Agents[agent][k]), "%s reply %d", agent, k)
				}
			}
			require.Len(t, got.Signals, len(want.Signals))
			for k, sig := range want.Signals {
				g := got.Signals[k]
				assert.JSONEq(t, asJSON(t, []any{sig.Name, sig.Data, sig.Delay}), asJSON(t, []any{g.Name, g.Data, g.Delay}))
			}
			we, ge := want.Expect, got.Expect
			assert.Equal(t, []any{we.Status, we.Outcome, we.States, we.Handoffs, we.Error, we.Steps, we.ConditionErrors, we.Property, we.Usage},
				[]any{ge.Status, ge.Outcome, ge.States, ge.Handoffs, ge.Error, ge.Steps, ge.ConditionErrors, ge.Property, ge.Usage})
			assert.JSONEq(t, asJSON(t, we.Context), asJSON(t, ge.Context))
		})
	}
}

// TestMarshal_EmptyTrigger: an agent that reported no trigger is scripted
// with `trigger: ""`, so that its replay reports none either.
func TestMarshal_EmptyTrigger(t *testing.T) {
	s := &scenario.Scenario{Name: "n", Workflow: "w.yaml", Agents: map[string][]scenario.Reply{"a": {{Retryable: true}}}, Expect: scenario.Expect{Status: "completed"}}
	src, err := scenario.Marshal(s)
	require.NoError(t, err)
	assert.Contains(t, string(src), `trigger: ""`)
	got, err := scenario.Parse("f.yaml", src)
	require.NoError(t, err, "%s", src)
	assert.Equal(t, "", got.Agents["a"][0].Trigger)
}
