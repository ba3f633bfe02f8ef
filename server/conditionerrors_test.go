package server_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/clustertest"
	"github.com/batonhq/baton/server"
)

// condFlow's condition fails at run time on the agent's answer (text
// compared with a number): the fallback fires, and the failure is counted.
const condFlow = `workflow: cond
initial: SCORING
agents:
  scorer: {url: "AGENTS/scorer"}
states:
  SCORING: {agent: scorer}
  HIGH: {terminal: true}
  LOW: {terminal: true}
rules:
  - {id: high, from: scorer, trigger: scored, condition: result.score > 3, next: HIGH}
  - {id: low, from: scorer, trigger: scored, next: LOW}
`

// Conditions that fail at run time are never silent: /metrics counts them
// as baton_condition_errors_total, by workflow and state.
func TestServer_Metrics_ConditionErrors(t *testing.T) {
	agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var work struct {
			Metadata struct {
				InstanceID string `json:"instance_id"`
				Step       int    `json:"step"`
			} `json:"metadata"`
		}
		require.NoError(t, json.NewDecoder(r.Body).Decode(&work))
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"instance_id": work.Metadata.InstanceID, "step": work.Metadata.Step,
			"agent": "scorer", "trigger": "scored", "result": map[string]any{"score": "high"}})
	}))
	t.Cleanup(agent.Close)
	f := newFixture(t, func(c *server.Config) {
		c.WorkflowsDir = workflowsDir(t, agent.URL, map[string]string{"cond.yaml": condFlow})
	})
	scrape := func() string {
		resp, err := http.Get(f.http.URL + "/metrics")
		require.NoError(t, err)
		defer resp.Body.Close()
		text, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return string(text)
	}
	for range 2 {
		code, body := f.do("POST", "/v1/workflows/cond/instances", map[string]any{})
		require.Equal(t, 201, code, "%v", body)
		got := f.waitStatus(body["id"].(string), "completed")
		assert.Equal(t, "LOW", got["outcome"])
	}
	// The counter is told by the engine's observer, which may run a moment
	// after the instance reads completed: ask until it shows (bounded).
	const want = `baton_condition_errors_total{state="SCORING",workflow="cond"} 2`
	clustertest.WaitFor(t, "the condition errors counted", time.Minute, func() bool { return strings.Contains(scrape(), want) })
}
