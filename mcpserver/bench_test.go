package mcpserver_test

import (
	"context"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/batonhq/baton/ops"
)

// BenchmarkMCP_StartRoundTrip is one tools/call start_<workflow> over
// streamable HTTP on loopback, from the go-sdk's client: decoding, the
// start through the operations layer, the answer.
func BenchmarkMCP_StartRoundTrip(b *testing.B) {
	f := newFixture(b, approvalFlow)
	cs := f.connect(nil)
	ctx := context.Background()
	params := &mcp.CallToolParams{Name: "start_approval", Arguments: map[string]any{"amount": 12.5, "note": "taxi"}}
	b.ReportAllocs()
	for b.Loop() {
		res, err := cs.CallTool(ctx, params)
		if err != nil || res.IsError {
			b.Fatalf("%v %v", err, res)
		}
	}
}

// BenchmarkMCP_StartBaseline is the same start through the operations
// layer alone: the MCP front door's share is the difference.
func BenchmarkMCP_StartBaseline(b *testing.B) {
	f := newFixture(b, approvalFlow)
	ctx := context.Background()
	req := ops.StartRequest{Workflow: "approval", Input: map[string]any{"amount": 12.5, "note": "taxi"}}
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := f.ops.Start(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
}
