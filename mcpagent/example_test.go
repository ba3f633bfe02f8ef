package mcpagent_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/batonhq/baton/mcpagent"
	"github.com/batonhq/baton/registry"
)

// An agent that calls the search tool of an MCP server over streamable
// HTTP, its arguments built from the run's input.
func ExampleNew() {
	srv := goServer() // any MCP server with a search tool
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	defer ts.Close()

	a, err := mcpagent.New(mcpagent.Config{
		URL:  ts.URL,
		Tool: "search",
		Arguments: func(t *registry.Task) (map[string]any, error) {
			return map[string]any{"query": t.Input["question"], "limit": 5}, nil
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer a.Close()

	out, err := a.Handle(context.Background(), &registry.Task{Input: map[string]any{"question": "tides"}})
	fmt.Println(out.Trigger, out.Result, err)

	_, err = a.Handle(context.Background(), &registry.Task{Input: map[string]any{"question": 42}})
	fmt.Println(registry.KindOf(err), registry.IsRetryable(err))
	// Output:
	// done map[hits:5 query:tides] <nil>
	// invalid_arguments false
}
