package webview_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/registry"
)

// The instance page shows what the run under way says, its streamed text
// whole, and, once the run reported, the usage (totals and each agent's);
// the list has the instance's cost.
func TestInstancePage_ShowsProgressThenUsage(t *testing.T) {
	f := newFixture(t)
	id := f.start("usage-1", map[string]any{"mode": "stream"})
	ctx := context.Background()
	for _, p := range []registry.Progress{{Message: "drafting", Delta: "Dear "}, {Delta: "<b>customer</b>,"}} {
		require.NoError(t, f.eng.Progress(ctx, id, 1, "writer", p))
	}
	code, body, _ := f.get("instances/" + id)
	require.Equal(t, 200, code)
	assert.Contains(t, body, `id="progress-1"`)
	assert.Contains(t, body, `<span class="progress-message">drafting</span>`)
	assert.Contains(t, body, `<pre class="progress-text">Dear &lt;b&gt;customer&lt;/b&gt;,</pre>`, "the deltas, appended and escaped")
	assert.NotContains(t, body, `id="usage"`, "no usage before any run reported")

	f.answer <- registry.Outcome{Trigger: "written", Result: map[string]any{"text": "Dear customer, …"},
		Usage: registry.Usage{InputTokens: 1200, OutputTokens: 300, Cost: 0.1 + 0.2, Model: "small"}}
	f.waitState(id, "APPROVAL")
	// The store has the step before the observers hear of it: the page
	// drops the run's progress a moment after.
	deadline := time.Now().Add(10 * time.Second)
	for _, body, _ = f.get("instances/" + id); strings.Contains(body, `id="progress-1"`); _, body, _ = f.get("instances/" + id) {
		require.True(t, time.Now().Before(deadline), "a run that reported is still shown under way")
		time.Sleep(2 * time.Millisecond)
	}
	assert.Contains(t, body, `1200 tokens in, 300 out, cost 0.3`)
	assert.Contains(t, body, `data-agent="writer"> · writer: 1200 in, 300 out, cost 0.3</span>`)

	_, body, _ = f.get("?id=usage-")
	assert.Contains(t, body, `<td class="cost">0.3</td>`)
}
