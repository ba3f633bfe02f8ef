package server_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/server"
)

// An instance started on a version whose file has since changed finishes
// on its own version after a restart; new instances start on the new one.
func TestServer_OldVersionStaysRunnableAfterRestart(t *testing.T) {
	ag := newAgents(t)
	dir := workflowsDir(t, ag.srv.URL, map[string]string{"review.yaml": reviewFlow})
	data := t.TempDir()
	open := func() *fixture {
		s, err := server.New(context.Background(), server.Config{WorkflowsDir: dir, DataDir: data, NATSListen: anyPort})
		require.NoError(t, err)
		f := &fixture{t: t, srv: s, http: newHTTP(t, s), agents: ag}
		ag.mu.Lock()
		ag.baton = f.http.URL
		ag.mu.Unlock()
		return f
	}
	f := open()
	code, _ := f.do("POST", "/v1/workflows/review/instances", map[string]any{"id": "old", "input": map[string]any{"mode": "hold", "approve": true}})
	require.Equal(t, 201, code)
	f.srv.Close()

	v2 := strings.Replace(strings.ReplaceAll(reviewFlow, "AGENTS", ag.srv.URL), "version: 1", "version: 2", 1)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "review.yaml"), []byte(v2), 0o600))
	f = open()
	defer f.srv.Close()
	code, body := f.do("GET", "/v1/workflows", nil)
	require.Equal(t, 200, code)
	versions := body["workflows"].([]any)[0].(map[string]any)["versions"].([]any)
	require.Len(t, versions, 2)
	assert.EqualValues(t, 2, versions[0].(map[string]any)["version"])
	assert.Equal(t, true, versions[0].(map[string]any)["current"])
	assert.EqualValues(t, 1, versions[1].(map[string]any)["version"])
	assert.Equal(t, false, versions[1].(map[string]any)["current"])

	// The old instance was resumed on version 1: its writer was called
	// again, and a report of that run reaches version 1's engine.
	code, body = f.do("POST", "/v1/reports", map[string]any{"instance_id": "old", "step": 1, "agent": "writer", "trigger": "drafted"})
	require.Equal(t, 200, code)
	assert.Equal(t, true, body["ok"], "%v", body)
	got := f.waitStatus("old", "completed")
	assert.EqualValues(t, 1, got["version"])
	assert.Equal(t, "DONE", got["outcome"])

	code, body = f.do("POST", "/v1/workflows/review/instances", nil)
	require.Equal(t, 201, code)
	assert.EqualValues(t, 2, body["version"])
	code, body = f.do("POST", "/v1/workflows/review/instances", map[string]any{"version": 1, "input": map[string]any{"approve": true}})
	require.Equal(t, 201, code)
	assert.EqualValues(t, 1, body["version"], "a start may ask for an older version the server keeps")
	f.waitStatus(body["id"].(string), "completed")
}
