package mcpagent_test

import (
	"context"
	"os"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/batonhq/baton/mcpagent"
	"github.com/batonhq/baton/registry"
)

// BenchmarkMCPAgent measures the overhead of one run against a Go SDK
// server that answers at once: over loopback HTTP, and over stdio with this
// test binary as the server.
func BenchmarkMCPAgent(b *testing.B) {
	args := func(t *registry.Task) (map[string]any, error) {
		return map[string]any{"query": t.Input["q"], "limit": 3}, nil
	}
	run := func(b *testing.B, cfg mcpagent.Config) {
		cfg.Tool, cfg.Arguments = "search", args
		a := newAgent(b, cfg)
		tk := task(map[string]any{"q": "tides"})
		ctx := context.Background()
		if _, err := a.Handle(ctx, tk); err != nil { // connect outside the measure
			b.Fatal(err)
		}
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			out, err := a.Handle(ctx, tk)
			if err != nil || out.Result["hits"] != 3.0 {
				b.Fatalf("got %v, %v", out.Result, err)
			}
		}
	}
	b.Run("http", func(b *testing.B) { run(b, mcpagent.Config{URL: goHTTPServer(b)}) })
	b.Run("stdio", func(b *testing.B) {
		b.Setenv(goServerEnv, "stdio")
		run(b, mcpagent.Config{Command: []string{os.Args[0]}})
	})
	// The SDK's own call over the same HTTP, for the agent's share of the
	// figures above (building and checking arguments, mapping the answer).
	b.Run("http-sdk-only", func(b *testing.B) {
		ctx := context.Background()
		c := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
		cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: goHTTPServer(b), DisableStandaloneSSE: true}, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer cs.Close()
		params := &mcp.CallToolParams{Name: "search", Arguments: map[string]any{"query": "tides", "limit": 3}}
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			if _, err := cs.CallTool(ctx, params); err != nil {
				b.Fatal(err)
			}
		}
	})
}
