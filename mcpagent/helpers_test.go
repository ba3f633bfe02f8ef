package mcpagent_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"syscall"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/batonhq/baton/internal/jspeers"
	"github.com/batonhq/baton/internal/proctest"
	"github.com/batonhq/baton/mcpagent"
	"github.com/batonhq/baton/registry"
)

// goServerEnv makes the test binary a stdio MCP server built with the Go
// SDK (the benchmark's peer that answers at once).
const goServerEnv = "MCPAGENT_TEST_GO_SERVER"

func TestMain(m *testing.M) {
	if os.Getenv(goServerEnv) == "stdio" {
		if err := goServer().Run(context.Background(), &mcp.StdioTransport{}); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

// searchIn and searchOut are the Go server's search tool's input and output.
type searchIn struct {
	Query string `json:"query" jsonschema:"what to look up"`
	Limit int    `json:"limit,omitempty"`
}

type searchOut struct {
	Query string `json:"query"`
	Hits  int    `json:"hits"`
}

// goServer is an MCP server built with the Go SDK whose search tool
// answers at once.
func goServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "baton-bench", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "search", Description: "Looks a query up."},
		func(_ context.Context, _ *mcp.CallToolRequest, in searchIn) (*mcp.CallToolResult, searchOut, error) {
			return nil, searchOut{Query: in.Query, Hits: max(in.Limit, 1)}, nil
		})
	return s
}

// goHTTPServer serves goServer over streamable HTTP on 127.0.0.1.
func goHTTPServer(t testing.TB) string {
	t.Helper()
	srv := goServer()
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(ts.Close)
	return ts.URL
}

// peerScript is the MCP tool server built with the official JavaScript
// SDK, relative to jspeers.Dir().
const peerScript = "mcp_tools_server.mjs"

// stdioConfig calls tool of the JavaScript peer over stdio, started from
// its folder by a relative path.
func stdioConfig(t testing.TB, tool string) mcpagent.Config {
	t.Helper()
	node := jspeers.Node(t)
	return mcpagent.Config{Command: []string{node, peerScript}, Dir: jspeers.Dir(), Tool: tool}
}

// httpPeer starts the JavaScript peer over streamable HTTP and returns its
// endpoint.
func httpPeer(t testing.TB, env ...string) string {
	t.Helper()
	node := jspeers.Node(t)
	addr := proctest.FreeAddr(t)
	proctest.Start(t, env, "listening", node, jspeers.Script(peerScript), "--http", addr)
	return "http://" + addr + "/mcp"
}

// newAgent builds an Agent closed when the test ends (before the peers it
// talks to stop).
func newAgent(t testing.TB, cfg mcpagent.Config) *mcpagent.Agent {
	t.Helper()
	a, err := mcpagent.New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		if err := a.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return a
}

// task is a run's task with an input.
func task(input map[string]any) *registry.Task {
	return &registry.Task{Agent: "tools", InstanceID: "i1", State: "look", Step: 1, Attempt: 1, Input: input}
}

// transports runs f against the JavaScript peer over stdio and over HTTP,
// each calling tool.
func transports(t *testing.T, tool string, f func(t *testing.T, cfg mcpagent.Config)) {
	t.Run("stdio", func(t *testing.T) { f(t, stdioConfig(t, tool)) })
	t.Run("http", func(t *testing.T) { f(t, mcpagent.Config{URL: httpPeer(t), Tool: tool}) })
}

// pidOf calls the peer's pid tool.
func pidOf(t *testing.T, a *mcpagent.Agent) int {
	t.Helper()
	out, err := a.Handle(context.Background(), task(nil))
	if err != nil {
		t.Fatalf("pid: %v", err)
	}
	pid, ok := out.Result["pid"].(float64)
	if !ok || pid <= 0 {
		t.Fatalf("pid: got %v, want a process id", out.Result)
	}
	return int(pid)
}

// gone reports whether no process has the pid (a zombie still has it).
func gone(pid int) bool {
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}

// wantKind fails the test unless err is a failure of kind with the
// retryability given.
func wantKind(t *testing.T, err error, kind string, retryable bool) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want kind %s", kind)
	}
	if got := registry.KindOf(err); got != kind {
		t.Fatalf("kind: got %s, want %s (%v)", got, kind, err)
	}
	if got := registry.IsRetryable(err); got != retryable {
		t.Fatalf("retryable: got %v, want %v (%v)", got, retryable, err)
	}
}
