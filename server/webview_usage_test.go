package server_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The server's web view shows an agent's progress reports as they come
// (the deltas appended), then the usage its report carried, on the
// instance page and as the list's cost.
func TestServer_WebViewShowsProgressAndUsage(t *testing.T) {
	f := newFixture(t)
	code, body := f.do("POST", "/v1/workflows/review/instances", map[string]any{"id": "costly-1", "input": map[string]any{"mode": "hold"}})
	require.Equal(t, 201, code, "%v", body)
	f.waitStatus("costly-1", "running")
	for _, p := range []map[string]any{{"message": "drafting", "delta": "Dear "}, {"delta": "customer,"}} {
		code, body = f.do("POST", "/v1/reports", map[string]any{"instance_id": "costly-1", "step": 1, "agent": "writer", "progress": p})
		require.Equal(t, 200, code, "%v", body)
	}
	code, page, _ := f.page("GET", "/ui/instances/costly-1", nil)
	require.Equal(t, 200, code)
	assert.Contains(t, page, `<span class="progress-message">drafting</span>`)
	assert.Contains(t, page, `<pre class="progress-text">Dear customer,</pre>`)

	code, body = f.do("POST", "/v1/reports", map[string]any{"instance_id": "costly-1", "step": 1, "agent": "writer", "trigger": "drafted",
		"usage": map[string]any{"input_tokens": 1200, "output_tokens": 300, "cost": 0.25, "model": "small"}})
	require.Equal(t, 200, code, "%v", body)
	// The report is answered once its step is committed and its events
	// told: the run's progress is gone and its usage counted.
	_, page, _ = f.page("GET", "/ui/instances/costly-1", nil)
	assert.NotContains(t, page, `id="progress"`)
	assert.Contains(t, page, `1200 tokens in, 300 out, cost 0.25`)
	assert.Contains(t, page, `writer: 1200 in, 300 out, cost 0.25`)
	_, page, _ = f.page("GET", "/ui/?workflow=review", nil)
	assert.Contains(t, page, `<td class="cost">0.25</td>`)
}
