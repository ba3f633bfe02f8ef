// Package servertest starts a real Baton server for tests: its workflows
// in a directory of their own, a token file, bbolt and the in-memory bus
// (no NATS), its API on a loopback HTTP server, all closed when the test
// ends.
package servertest

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/batonhq/baton/mcpserver/mcptest"
	"github.com/batonhq/baton/registry"
	"github.com/batonhq/baton/server"
)

// Server is a started server.
type Server struct {
	// URL is the API's base URL; Token the bearer token it asks for.
	URL, Token string
	// Server is the server itself, for Reload and the like.
	Server *server.Server
	// Dir is its workflows directory: write a file there and Reload.
	Dir string
}

// Start starts a server on the workflows given by file name (contents as
// YAML), with token as its one token and handlers as its Go agents.
func Start(t testing.TB, token string, workflows map[string]string, handlers map[string]registry.Handler) *Server {
	t.Helper()
	dir := t.TempDir()
	for name, src := range workflows {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	tokens := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(tokens, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := server.New(context.Background(), server.Config{
		WorkflowsDir: dir, DataDir: t.TempDir(), NATS: server.NoNATS, TokenFile: tokens, Handlers: handlers,
	})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(func() {
		s.Close()
		hs.Close()
	})
	return &Server{URL: hs.URL, Token: token, Server: s, Dir: dir}
}

// Approval starts a server on mcptest.ApprovalFlow with its checker agent,
// the server the MCP tests drive.
func Approval(t testing.TB, token string) *Server {
	t.Helper()
	return Start(t, token, map[string]string{"approval.yaml": mcptest.ApprovalFlow},
		map[string]registry.Handler{"checker": mcptest.Checker})
}
