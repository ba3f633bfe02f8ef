package mcpserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/servertest"
	"github.com/batonhq/baton/mcpserver/mcptest"
	"github.com/batonhq/baton/server"
)

// reloadable starts a server on mcptest.ApprovalFlow with a token; it returns
// the API's URL, the token, the server and its workflows directory.
func reloadable(t *testing.T) (url, token string, srv *server.Server, dir string) {
	t.Helper()
	s := servertest.Approval(t, "mcp-test-token")
	return s.URL, s.Token, s.Server, s.Dir
}

// TestMCP_JSClient_AgainstServer drives /mcp of a real server with the
// official JavaScript client: tools and their schemas, a start that
// waits, get, list, signal, cancel, refusals as isError, resources.
func TestMCP_JSClient_AgainstServer(t *testing.T) {
	url, token, _, _ := reloadable(t)
	steps := mcptest.Run(t, nil, nil, "--url", url+"/mcp", "--token", token)
	mcptest.Check(t, steps)
}

// TestMCP_JSClient_HearsToolListChanged adds a workflow while the
// official client is connected: it hears notifications/tools/list_changed
// and lists the new start tool.
func TestMCP_JSClient_HearsToolListChanged(t *testing.T) {
	f := newFixture(t, approvalFlow)
	steps := mcptest.Run(t, nil, func() {
		f.add(idFlow)
		f.mcp.WorkflowsChanged()
	}, "--url", f.url, "--changes")
	mcptest.Check(t, steps)
	assert.Contains(t, steps["tools_after_change"]["names"], "start_ticket")
}

// TestMCP_JSClient_HearsAReload adds a workflow file to a real server's
// directory and reloads: the official client, connected to /mcp, hears
// notifications/tools/list_changed and lists the new start tool.
func TestMCP_JSClient_HearsAReload(t *testing.T) {
	url, token, srv, dir := reloadable(t)
	steps := mcptest.Run(t, nil, func() {
		require.NoError(t, os.WriteFile(filepath.Join(dir, "ticket.yaml"), []byte(idFlow), 0o600))
		require.NoError(t, srv.Reload(context.Background()))
	}, "--url", url+"/mcp", "--token", token, "--changes")
	mcptest.Check(t, steps)
	assert.Contains(t, steps["tools_after_change"]["names"], "start_ticket")
}

// TestMCP_Server_TokenAndBodyLimit: /mcp asks for the token like /v1, and
// refuses a body beyond the API's limit.
func TestMCP_Server_TokenAndBodyLimit(t *testing.T) {
	url, token, _, _ := reloadable(t)
	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	post := func(body, auth string) (int, []byte) {
		req, err := http.NewRequest("POST", url+"/mcp", strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if auth != "" {
			req.Header.Set("Authorization", "Bearer "+auth)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		var buf bytes.Buffer
		_, _ = buf.ReadFrom(resp.Body)
		return resp.StatusCode, buf.Bytes()
	}
	code, body := post(initialize, "")
	assert.Equal(t, http.StatusUnauthorized, code)
	var e struct {
		Error struct{ Code string } `json:"error"`
	}
	require.NoError(t, json.Unmarshal(body, &e), "%s", body)
	assert.Equal(t, "unauthorized", e.Error.Code)
	code, _ = post(initialize, "wrong")
	assert.Equal(t, http.StatusUnauthorized, code)
	code, body = post(initialize, token)
	assert.Equal(t, http.StatusOK, code, "%s", body)
	// Behind a proxy on the same machine, the Host is the proxy's name:
	// the token is what counts.
	req, err := http.NewRequest("POST", url+"/mcp", strings.NewReader(initialize))
	require.NoError(t, err)
	req.Host = "baton.example.com"
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode, "a request for another name, with the token")
	big := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"pad":"` + strings.Repeat("x", server.MaxBody) + `"}}`
	code, _ = post(big, token)
	assert.Equal(t, http.StatusRequestEntityTooLarge, code)
}
