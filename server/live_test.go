package server_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// echoV2 is echoFlow's next version: its run ends in another terminal
// state, so that the engine that took a report shows in the outcome.
const echoV2 = `workflow: echo
version: 2
initial: WORKING
agents:
  worker: {}
states:
  WORKING: {agent: worker}
  FINISHED: {terminal: true}
rules:
  - {id: done, from: worker, trigger: done, next: FINISHED}
`

// A report finds the engine of its instance's version, from memory while
// the server runs it: an id pruned and taken again by an instance of
// another version is that version's, for the reports of its run and for a
// late one after it ended.
func TestServer_Report_ReusedIDReachesItsVersion(t *testing.T) {
	r := newReloadFixture(t)
	r.write("echo.yaml", echoFlow)
	require.NoError(t, r.srv.Reload(context.Background()))
	report := func(id string) map[string]any {
		t.Helper()
		code, body := r.do("POST", "/v1/reports", map[string]any{"instance_id": id, "step": 1, "agent": "worker", "trigger": "done"})
		require.Equal(t, 200, code, "%v", body)
		return body
	}
	start := func(id string) {
		t.Helper()
		code, body := r.do("POST", "/v1/workflows/echo/instances", map[string]any{"id": id})
		require.Equal(t, 201, code, "%v", body)
	}

	start("x")
	start("old") // still running on version 1 when version 2 is current
	assert.Equal(t, true, report("x")["ok"])
	got := r.waitStatus("x", "completed")
	assert.EqualValues(t, 1, got["version"])
	assert.Equal(t, "DONE", got["outcome"])
	assert.Equal(t, "stale", report("x")["code"], "a late report of the finished instance")

	code, body := r.do("POST", "/v1/prune", map[string]any{"older_than": "0s"})
	require.Equal(t, 200, code, "%v", body)
	require.EqualValues(t, 1, body["pruned"])
	assert.Equal(t, "unknown_instance", report("x")["code"], "the pruned id")

	r.write("echo.yaml", echoV2)
	require.NoError(t, r.srv.Reload(context.Background()))
	start("x")
	assert.Equal(t, true, report("x")["ok"])
	got = r.waitStatus("x", "completed")
	assert.EqualValues(t, 2, got["version"])
	assert.Equal(t, "FINISHED", got["outcome"])
	assert.Equal(t, "stale", report("x")["code"], "a late report reaches version 2's engine")

	assert.Equal(t, true, report("old")["ok"])
	got = r.waitStatus("old", "completed")
	assert.EqualValues(t, 1, got["version"])
	assert.Equal(t, "DONE", got["outcome"])
}
