package mcpserver_test

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/mcpserver"
	"github.com/batonhq/baton/mcpserver/mcptest"
	"github.com/batonhq/baton/ops"
	"github.com/batonhq/baton/record"
	"github.com/batonhq/baton/registry"
	"github.com/batonhq/baton/rules"
)

// A Go program's own engine served as MCP tools: here to a client in the
// same process; Handler serves the streamable HTTP transport instead.
func Example() {
	w, _ := rules.Parse("approval.yaml", []byte(mcptest.ApprovalFlow))
	reg, _ := engine.NewRegistry(w, map[string]registry.Handler{"checker": mcptest.Checker})
	store := record.NewMemStore()
	eng, _ := engine.New(w, reg, engine.WithStore(store))
	defer eng.Close()

	s := mcpserver.New(mcpserver.NewLocal(ops.New(store, ops.NewEngines(eng))))
	defer s.Close()
	s.WorkflowsChanged()

	ctx := context.Background()
	serverSide, clientSide := mcp.NewInMemoryTransports()
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx, serverSide) }()
	cs, _ := mcp.NewClient(&mcp.Implementation{Name: "example", Version: "1"}, nil).Connect(ctx, clientSide, nil)
	tools, _ := cs.ListTools(ctx, nil)
	for _, t := range tools.Tools {
		fmt.Println(t.Name)
	}
	res, _ := cs.CallTool(ctx, &mcp.CallToolParams{Name: "start_approval", Arguments: map[string]any{"note": "no amount"}})
	fmt.Println(res.IsError, res.Content[0].(*mcp.TextContent).Text)
	_ = cs.Close()
	<-served
	// Output:
	// cancel_instance
	// get_instance
	// list_instances
	// list_workflows
	// signal_instance
	// start_approval
	// true {"error":{"code":"invalid_field","message":"amount is missing","field":"amount"}}
}
