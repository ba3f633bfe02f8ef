package mcpserver_test

import (
	"context"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/mcpserver"
)

// served is the fixture's operations layer with some workflows withdrawn,
// as a reload that removes their files leaves it.
type served struct {
	*mcpserver.Local
	mu   sync.Mutex
	gone []string
}

func (s *served) Workflows(ctx context.Context) ([]mcpserver.Workflow, error) {
	wfs, err := s.Local.Workflows(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.DeleteFunc(wfs, func(w mcpserver.Workflow) bool { return slices.Contains(s.gone, w.Name) }), err
}

func (s *served) withdraw(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gone = append(s.gone, name)
}

func TestServer_WorkflowsChanged_RemovesTheToolAndResource(t *testing.T) {
	f := newFixture(t, approvalFlow, idFlow)
	back := &served{Local: mcpserver.NewLocal(f.ops)}
	s := mcpserver.New(back)
	s.WorkflowsChanged()
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(func() {
		s.Close()
		hs.Close()
	})
	changed := make(chan struct{}, 8)
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	})
	ctx := context.Background()
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: hs.URL}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	tools, err := cs.ListTools(ctx, nil)
	require.NoError(t, err)
	require.Contains(t, names(tools.Tools), "start_ticket")

	back.withdraw("ticket")
	s.WorkflowsChanged()
	select {
	case <-changed:
	case <-time.After(30 * time.Second):
		t.Fatal("no notifications/tools/list_changed after a workflow was withdrawn")
	}
	tools, err = cs.ListTools(ctx, nil)
	require.NoError(t, err)
	assert.NotContains(t, names(tools.Tools), "start_ticket")
	assert.Contains(t, names(tools.Tools), "start_approval")
	res, err := cs.ListResources(ctx, nil)
	require.NoError(t, err)
	require.Len(t, res.Resources, 1)
	assert.Equal(t, "baton://workflows/approval", res.Resources[0].URI)
	_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "start_ticket", Arguments: map[string]any{"id": "x"}})
	assert.ErrorContains(t, err, "start_ticket", "a withdrawn tool is unknown")
}
