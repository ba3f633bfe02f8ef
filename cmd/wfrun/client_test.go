package main

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/server"
)

func TestClientCommands(t *testing.T) {
	ag := newHTTPAgents(t)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "review.yaml"), []byte(strings.ReplaceAll(reviewFlow, "AGENTS", ag.srv.URL)), 0o600))
	t.Setenv("WFRUN_TEST_SECRET", "e2e-secret")
	s, err := server.New(context.Background(), server.Config{WorkflowsDir: dir, DataDir: t.TempDir(), NATS: server.NoNATS})
	require.NoError(t, err)
	hs := httptest.NewServer(s.Handler())
	defer hs.Close()
	defer s.Close()
	ag.baton.Store(hs.URL)
	t.Setenv("BATON_SERVER", hs.URL)
	input := filepath.Join(t.TempDir(), "input.json")
	require.NoError(t, os.WriteFile(input, []byte(`{"approve": true, "note": "<b>fast</b> & sure"}`), 0o600))

	stdout, stderr, code := wfrun(t, "start", "review", "--input", "@"+input, "--id", "c-1", "--wait", "-o", "json")
	require.Equal(t, 0, code, stderr)
	var got map[string]any
	require.NoError(t, json.Unmarshal([]byte(stdout), &got))
	assert.Equal(t, "completed", got["status"])
	assert.Equal(t, "DONE", got["outcome"])

	tests := []struct {
		name string
		args []string
		code int
		has  string
	}{
		{"start again, same id and input", []string{"start", "review", "--input", "@" + input, "--id", "c-1"}, 0, "c-1"},
		{"start again, same id, other input", []string{"start", "review", "--id", "c-1"}, 1, "409 conflict"},
		{"ls table", []string{"ls"}, 0, "c-1  review    1        completed  DONE"},
		{"ls json", []string{"ls", "-o", "json", "--status", "completed"}, 0, `"next": null`},
		{"get yaml", []string{"get", "c-1", "-o", "yaml"}, 0, "status: completed"},
		{"get table", []string{"get", "c-1"}, 0, "outcome:   DONE"},
		{"get unknown", []string{"get", "nope"}, 1, "404 unknown_instance"},
		{"signal not waited for", []string{"signal", "c-1", "approved", "--data", `{"by":"ana"}`}, 1, "409 not_waiting"},
		{"cancel finished", []string{"cancel", "c-1"}, 1, "409 finished"},
		{"start unknown workflow", []string{"start", "nope"}, 1, "404 unknown_workflow"},
		{"start bad input", []string{"start", "review", "--input", "{"}, 2, "--input is not JSON"},
		{"bad output", []string{"ls", "-o", "xml"}, 2, "-o must be table, json or yaml"},
		{"server down", []string{"ls", "--server", "http://127.0.0.1:1"}, 1, "connect"},
		{"watch finished", []string{"watch", "c-1"}, 0, "c-1 completed in DONE"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stdout, stderr, code := wfrun(t, tt.args...)
			assert.Equal(t, tt.code, code, "stdout %s stderr %s", stdout, stderr)
			assert.Contains(t, stdout+stderr, tt.has)
		})
	}
	// JSON output keeps <, > and & as they are.
	stdout, _, code = wfrun(t, "get", "c-1", "-o", "json")
	require.Equal(t, 0, code)
	assert.NotContains(t, stdout, `\u003c`)

	// --input - reads standard input (the checker approves what the input
	// says to approve).
	stdout, stderr, code = wfrunIn(t, `{"approve": true}`, "start", "review", "--input", "-", "--id", "c-stdin", "--wait", "-o", "json")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, `"outcome": "DONE"`)
	stdout, _, code = wfrunIn(t, `{"approve": false}`, "start", "review", "--input", "-", "--id", "c-stdin-no", "--wait", "-o", "json")
	assert.Equal(t, 0, code)
	assert.Contains(t, stdout, `"outcome": "REJECTED"`)
	_, stderr, code = wfrunIn(t, `{`, "start", "review", "--input", "-")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "--input is not JSON")

	// Completion: instance ids for get, watch, signal and cancel, and
	// workflow names for start, from the server.
	for _, verb := range []string{"get", "watch", "signal", "cancel"} {
		stdout, _, code = wfrun(t, "__complete", verb, "c-")
		require.Equal(t, 0, code)
		assert.Contains(t, stdout, "c-1\treview completed", verb)
		assert.Contains(t, stdout, "c-stdin\treview completed", verb)
	}
	stdout, _, _ = wfrun(t, "__complete", "get", "c-s")
	assert.NotContains(t, stdout, "c-1\t", "completion keeps to the prefix")
	stdout, _, _ = wfrun(t, "__complete", "start", "re")
	assert.Contains(t, stdout, "review")
	stdout, _, _ = wfrun(t, "__complete", "get", "--server", "http://127.0.0.1:1", "")
	assert.NotContains(t, stdout, "c-1", "a server that does not answer completes nothing")

	ag.hold.Store(true)
	stdout, _, code = wfrun(t, "start", "review", "--id", "c-2")
	require.Equal(t, 0, code, stdout)
	stdout, _, code = wfrun(t, "cancel", "c-2", "--reason", "the customer withdrew", "-o", "json")
	require.Equal(t, 0, code)
	assert.Contains(t, stdout, `"status": "cancelled"`)
	stdout, _, code = wfrun(t, "get", "c-2")
	require.Equal(t, 0, code)
	assert.Contains(t, stdout, "status:    cancelled")
	assert.Contains(t, stdout, "reason:    the customer withdrew")
	assert.Contains(t, stdout, "error:     -")
	_, stderr, code = wfrun(t, "start", "review", "--id", "c-2", "--wait")
	assert.Equal(t, 1, code, "waiting on a cancelled instance exits 1")
	_ = stderr
}
