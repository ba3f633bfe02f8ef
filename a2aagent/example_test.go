package a2aagent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/batonhq/baton/a2aagent"
	"github.com/batonhq/baton/registry"
)

// An A2A agent (here a tiny one of protocol 0.3, in process) called for
// one run: its Message answer completes the run with its data part.
func ExampleAgent_Handle() {
	var srv *httptest.Server
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/agent-card.json", func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]any{"name": "echo", "url": srv.URL + "/rpc", "protocolVersion": "0.3.0"})
	})
	mux.HandleFunc("POST /rpc", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			ID     int `json:"id"`
			Params struct {
				Message struct {
					Parts []struct {
						Data map[string]any `json:"data"`
					} `json:"parts"`
				} `json:"message"`
			} `json:"params"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		data := req.Params.Message.Parts[len(req.Params.Message.Parts)-1].Data
		_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": map[string]any{
			"kind": "message", "messageId": "m1", "role": "agent",
			"parts": []any{map[string]any{"kind": "data", "data": map[string]any{"echo": data["input"]}}},
		}})
	})
	srv = httptest.NewServer(mux)
	defer srv.Close()

	agent, err := a2aagent.New(a2aagent.Config{URL: srv.URL})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer agent.Close()
	out, err := agent.Handle(context.Background(), &registry.Task{
		Agent: "echo", InstanceID: "i-1", IdempotencyKey: "i-1:1", Description: "say it back",
		Input: map[string]any{"word": "hello"},
	})
	fmt.Println(out.Trigger, out.Result, err)
	// Output: completed map[echo:map[word:hello]] <nil>
}
