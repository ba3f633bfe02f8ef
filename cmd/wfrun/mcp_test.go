package main

import (
	"bytes"
	"context"
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

// reloadableServer starts a server on mcptest.ApprovalFlow with a token; it returns
// the API's URL, the token, the server and its workflows directory.
func reloadableServer(t *testing.T) (url, token string, srv *server.Server, dir string) {
	t.Helper()
	s := servertest.Approval(t, "stdio-token")
	return s.URL, s.Token, s.Server, s.Dir
}

// TestMCP_Stdio_JSClient drives `wfrun mcp` (a child process) over stdio
// with the official JavaScript client: the same tools, answers and
// refusals as /mcp, through the HTTP API of a real server; a workflow the
// server reloads reaches the client as notifications/tools/list_changed.
func TestMCP_Stdio_JSClient(t *testing.T) {
	url, token, srv, dir := reloadableServer(t)
	steps := mcptest.Run(t, []string{childEnv + "=1"}, func() {
		require.NoError(t, os.WriteFile(filepath.Join(dir, "ticket.yaml"), []byte(ticketFlow), 0o600))
		require.NoError(t, srv.Reload(context.Background()))
	}, "--changes", "--stdio", os.Args[0], "mcp", "--server", url, "--token", token, "--refresh", "50ms")
	mcptest.Check(t, steps)
	assert.Contains(t, steps["tools_after_change"]["names"], "start_ticket")
}

// ticketFlow is a second workflow, added while the client is connected.
const ticketFlow = `workflow: ticket
initial: CHECKING
agents:
  checker: {}
states:
  CHECKING: {agent: checker}
  DONE: {terminal: true}
rules:
  - {id: checked, from: checker, trigger: checked, next: DONE}
`

// TestMCP_Stdio_ServerRefuses: wfrun mcp without the token says at once that it cannot
// list the workflows, and exits 1.
func TestMCP_Stdio_ServerRefuses(t *testing.T) {
	url, _, _, _ := reloadableServer(t)
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"mcp", "--server", url}, strings.NewReader(""), &stdout, &stderr)
	require.Error(t, err)
	assert.Equal(t, exitFailed, exitCode(err))
	assert.Contains(t, err.Error(), "a bearer token is required")
	assert.Empty(t, stdout.String())
}

// TestMCP_Stdio_ClientLeaves: wfrun mcp ends without error when its
// client closes standard input.
func TestMCP_Stdio_ClientLeaves(t *testing.T) {
	url, token, _, _ := reloadableServer(t)
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"mcp", "--server", url, "--token", token}, strings.NewReader(""), &stdout, &stderr)
	require.NoError(t, err)
}
