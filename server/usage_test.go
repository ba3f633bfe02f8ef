package server_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An agent's progress reaches the event stream as agent_progress, and the
// usage its reports carry adds up on the instance, per agent too.
func TestServer_ProgressAndUsage(t *testing.T) {
	f := newFixture(t)
	code, body := f.do("POST", "/v1/workflows/review/instances", map[string]any{"input": map[string]any{"mode": "hold"}})
	require.Equal(t, 201, code, "%v", body)
	id := body["id"].(string)
	got := f.waitStatus(id, "running")
	assert.Equal(t, map[string]any{"input_tokens": 0.0, "output_tokens": 0.0, "tokens": 0.0, "cost": 0.0, "agents": map[string]any{}}, got["usage"],
		"usage is all zero before any run reported")
	stream := openEvents(t, f, "?instance="+id, "")

	// Progress: answered ok, streamed, never in the history.
	code, body = f.do("POST", "/v1/reports", map[string]any{"instance_id": id, "step": 1, "agent": "writer",
		"progress": map[string]any{"message": "drafting", "delta": "Dear customer,"}})
	require.Equal(t, 200, code)
	require.Equal(t, true, body["ok"], "%v", body)
	evs := stream.until(t, "agent_progress")
	p := evs[len(evs)-1]
	require.NotNil(t, p.Progress)
	assert.Equal(t, "drafting", p.Progress.Message)
	assert.Equal(t, "Dear customer,", p.Progress.Delta)
	for _, e := range f.history(id) {
		assert.NotEqual(t, "agent_progress", e["kind"], "progress is never in the history")
	}

	// Bad usage is answered invalid, naming the field, and changes nothing.
	code, body = f.do("POST", "/v1/reports", map[string]any{"instance_id": id, "step": 1, "agent": "writer", "trigger": "drafted",
		"usage": map[string]any{"input_tokens": -1}})
	require.Equal(t, 200, code, "%v", body)
	assert.Equal(t, "invalid", body["code"])
	assert.Contains(t, body["message"], "usage.input_tokens")
	assert.Equal(t, "running", f.waitStatus(id, "running")["status"], "the refused report changed nothing")

	// The run's report with usage: counted on the instance and its agent.
	code, body = f.do("POST", "/v1/reports", map[string]any{"instance_id": id, "step": 1, "agent": "writer", "trigger": "drafted",
		"usage": map[string]any{"input_tokens": 1200, "output_tokens": 300, "cost": 0.25, "model": "small"}})
	require.Equal(t, 200, code)
	require.Equal(t, true, body["ok"], "%v", body)
	evs = stream.until(t, "agent_reported")
	rep := evs[len(evs)-1]
	require.NotNil(t, rep.Usage)
	assert.EqualValues(t, 1200, rep.Usage.InputTokens)
	assert.Equal(t, "small", rep.Usage.Model)

	code, got = f.do("GET", "/v1/instances/"+id, nil)
	require.Equal(t, 200, code)
	usage := got["usage"].(map[string]any)
	assert.EqualValues(t, 1500, usage["tokens"])
	assert.EqualValues(t, 0.25, usage["cost"])
	writer := usage["agents"].(map[string]any)["writer"].(map[string]any)
	assert.EqualValues(t, 1200, writer["input_tokens"])
	assert.EqualValues(t, 300, writer["output_tokens"])
}
