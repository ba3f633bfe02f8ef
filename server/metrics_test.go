package server_test

import (
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The usage a report carries reaches the server's /metrics, by workflow
// and agent.
func TestServer_Metrics_TokensAndCost(t *testing.T) {
	f := newFixture(t)
	code, body := f.do("POST", "/v1/workflows/review/instances", map[string]any{"input": map[string]any{"mode": "hold"}})
	require.Equal(t, 201, code, "%v", body)
	id := body["id"].(string)
	f.waitStatus(id, "running")
	code, body = f.do("POST", "/v1/reports", map[string]any{"instance_id": id, "step": 1, "agent": "writer", "trigger": "drafted",
		"usage": map[string]any{"input_tokens": 1200, "output_tokens": 300, "cost": 0.25, "model": "small"}})
	require.Equal(t, 200, code, "%v", body)

	resp, err := http.Get(f.http.URL + "/metrics")
	require.NoError(t, err)
	text, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	for _, line := range []string{
		`baton_tokens_total{agent="writer",direction="input",workflow="review"} 1200`,
		`baton_tokens_total{agent="writer",direction="output",workflow="review"} 300`,
		`baton_cost_total{agent="writer",workflow="review"} 0.25`,
	} {
		assert.Contains(t, string(text), line)
	}
}
