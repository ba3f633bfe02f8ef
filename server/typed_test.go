package server_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/replay"
	"github.com/batonhq/baton/server"
)

// typedFlow declares its input and its HTTP agent's result.
const typedFlow = `workflow: typed
initial: COUNTING
input: {text: string, limit: number}
agents:
  counter:
    url: "AGENTS/counter"
    result: {words: int}
states:
  COUNTING: {agent: counter, retry: {max: 1, on: [invalid_result]}}
  DONE: {terminal: true}
rules:
  - {id: counted, from: counter, trigger: counted, next: DONE, context: {words: result.words}}
`

// A start input that breaks the workflow's declaration is a 400 naming the
// field, and nothing starts; an HTTP agent whose answer breaks its result
// declaration has failed its run (kind invalid_result), which is retried.
func TestServer_TypedData(t *testing.T) {
	var calls atomic.Int64
	agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var work struct {
			Metadata struct {
				InstanceID string `json:"instance_id"`
				Step       int    `json:"step"`
			} `json:"metadata"`
		}
		require.NoError(t, json.NewDecoder(r.Body).Decode(&work))
		words := any("many")
		if calls.Add(1) > 1 {
			words = 3
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"instance_id": work.Metadata.InstanceID, "step": work.Metadata.Step,
			"agent": "counter", "trigger": "counted", "result": map[string]any{"words": words}})
	}))
	t.Cleanup(agent.Close)
	f := newFixture(t, func(c *server.Config) {
		c.WorkflowsDir = workflowsDir(t, agent.URL, map[string]string{"typed.yaml": typedFlow})
	})

	code, body := f.do("POST", "/v1/workflows/typed/instances", map[string]any{"input": map[string]any{"text": "a b c", "limit": "ten"}})
	require.Equal(t, 400, code, "%v", body)
	e := errorOf(t, body)
	assert.Equal(t, "invalid_field", e["code"])
	assert.Equal(t, "input.limit", e["field"])
	assert.Contains(t, e["message"], `must be a number, got the string "ten"`)
	assert.Equal(t, 0, f.count(), "a refused start changes nothing")
	assert.Zero(t, calls.Load(), "no agent ran")

	code, body = f.do("POST", "/v1/workflows/typed/instances", map[string]any{"input": map[string]any{"text": "a b c", "limit": 10}})
	require.Equal(t, 201, code, "%v", body)
	id := body["id"].(string)
	got := f.waitStatus(id, "completed")
	assert.Equal(t, map[string]any{"words": 3.0}, got["context"])
	resp, err := http.Get(f.http.URL + "/v1/instances/" + id + "/history")
	require.NoError(t, err)
	defer resp.Body.Close()
	var buf bytes.Buffer
	_, _ = buf.ReadFrom(resp.Body)
	entries, err := replay.ReadHistory(&buf)
	require.NoError(t, err)
	var kinds []string
	for _, en := range entries {
		if en.Kind == "agent_run" {
			kinds = append(kinds, en.ErrorKind)
		}
	}
	assert.Equal(t, []string{"invalid_result", ""}, kinds, "the first answer failed its run, the second ended it")
}
