package mcpserver_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/mcpserver"
	"github.com/batonhq/baton/mcpserver/mcptest"
	"github.com/batonhq/baton/ops"
	"github.com/batonhq/baton/record"
	"github.com/batonhq/baton/registry"
	"github.com/batonhq/baton/rules"
)

// approvalFlow checks an expense (a Go handler answers at once), then
// waits for a person to approve or reject it.
const approvalFlow = mcptest.ApprovalFlow

// idFlow declares id and wait among its input: its start tool names its
// own arguments baton_id and baton_wait.
const idFlow = `workflow: ticket
initial: CHECKING
input: {id: string, wait: 'int?'}
agents:
  checker: {}
states:
  CHECKING: {agent: checker}
  DONE: {terminal: true}
rules:
  - {id: checked, from: checker, trigger: checked, next: DONE}
`

// fixture is a Go program's engines (on one MemStore, their events on a
// hub) behind the operations layer, served as MCP at /mcp on a loopback
// HTTP server.
type fixture struct {
	t     testing.TB
	store *record.MemStore
	hub   *ops.Hub
	cat   *ops.Engines
	ops   *ops.Ops
	mcp   *mcpserver.Server
	url   string

	mu   sync.Mutex
	engs []*engine.Engine
}

func newFixture(t testing.TB, flows ...string) *fixture {
	t.Helper()
	f := &fixture{t: t, store: record.NewMemStore(), hub: ops.NewHub(1024), cat: ops.NewEngines()}
	f.ops = ops.New(f.store, f.cat, ops.WithEvents(f.hub))
	for _, src := range flows {
		f.add(src)
	}
	f.mcp = mcpserver.New(mcpserver.NewLocal(f.ops))
	f.mcp.WorkflowsChanged()
	hs := httptest.NewServer(f.mcp.Handler())
	f.url = hs.URL
	t.Cleanup(func() {
		f.mcp.Close()
		hs.Close()
		f.mu.Lock()
		defer f.mu.Unlock()
		for _, e := range f.engs {
			_ = e.Close()
		}
		f.hub.Close()
	})
	return f
}

// add serves one more workflow (the caller calls WorkflowsChanged).
func (f *fixture) add(src string) *engine.Engine {
	f.t.Helper()
	w, err := rules.Parse("flow.yaml", []byte(src))
	require.NoError(f.t, err)
	reg, err := engine.NewRegistry(w, map[string]registry.Handler{"checker": mcptest.Checker})
	require.NoError(f.t, err)
	eng, err := engine.New(w, reg, engine.WithStore(f.store), engine.WithObserver(func(ev engine.Event) { f.hub.Publish(ops.EventOf(ev)) }))
	require.NoError(f.t, err)
	f.mu.Lock()
	f.engs = append(f.engs, eng)
	f.mu.Unlock()
	f.cat.Add(eng)
	return eng
}

// connect is a client session with the server (the go-sdk's client).
func (f *fixture) connect(opts *mcp.ClientOptions) *mcp.ClientSession {
	f.t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, opts)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: f.url}, nil)
	require.NoError(f.t, err)
	f.t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// call calls a tool and decodes its text (the JSON answered).
func call(t testing.TB, cs *mcp.ClientSession, name string, args map[string]any) (map[string]any, *mcp.CallToolResult) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	require.NoError(t, err)
	require.Len(t, res.Content, 1)
	text, ok := res.Content[0].(*mcp.TextContent)
	require.True(t, ok, "content %T", res.Content[0])
	var out map[string]any
	require.NoError(t, json.Unmarshal([]byte(text.Text), &out), text.Text)
	if !res.IsError {
		sc, err := json.Marshal(res.StructuredContent)
		require.NoError(t, err)
		require.JSONEq(t, text.Text, string(sc), "the structured content and the text must be the same JSON")
	}
	return out, res
}

// refusal is an isError result's error object.
func refusal(t testing.TB, out map[string]any, res *mcp.CallToolResult) map[string]any {
	t.Helper()
	require.True(t, res.IsError, "not an error: %v", out)
	e, ok := out["error"].(map[string]any)
	require.True(t, ok, "no error object: %v", out)
	return e
}

func names(tools []*mcp.Tool) string {
	var out []string
	for _, t := range tools {
		out = append(out, t.Name)
	}
	return strings.Join(out, " ")
}

// mcpBackendWait waits for instance id to settle, through the Local
// backend, and answers its status.
func (f *fixture) mcpBackendWait(ctx context.Context, id string) (string, error) {
	in, err := mcpserver.NewLocal(f.ops).Wait(ctx, id)
	return in.Status, err
}
