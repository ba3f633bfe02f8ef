package a2aserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/batonhq/baton/a2aserver"
	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/ops"
	"github.com/batonhq/baton/record"
	"github.com/batonhq/baton/registry"
	"github.com/batonhq/baton/rules"
)

// A Go program serves its own engine's workflow as an A2A agent: the
// handler over its operations layer, the engine's events on the layer's
// hub so that answers can wait for the task to finish.
func ExampleNew() {
	w, err := rules.Parse("greet.yaml", []byte(`workflow: greet
initial: GREETING
agents:
  greeter: {}
states:
  GREETING: {agent: greeter}
  DONE: {terminal: true}
rules:
  - {id: greeted, from: greeter, trigger: done, next: DONE, context: {greeting: result.greeting}}
`))
	if err != nil {
		panic(err)
	}
	greeter := registry.HandlerFunc(func(_ context.Context, t *registry.Task) (registry.Outcome, error) {
		return registry.Outcome{Trigger: "done", Result: map[string]any{"greeting": "hello, " + t.Input["text"].(string)}}, nil
	})
	reg, err := engine.NewRegistry(w, map[string]registry.Handler{"greeter": greeter})
	if err != nil {
		panic(err)
	}
	hub := ops.NewHub(1024)
	defer hub.Close()
	store := record.NewMemStore()
	eng, err := engine.New(w, reg, engine.WithStore(store), engine.WithObserver(func(ev engine.Event) { hub.Publish(ops.EventOf(ev)) }))
	if err != nil {
		panic(err)
	}
	defer eng.Close()
	mux := http.NewServeMux()
	mux.Handle(a2aserver.Prefix, a2aserver.New(ops.New(store, ops.NewEngines(eng), ops.WithEvents(hub))))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	// A text-only message starts the workflow with input {text}.
	resp, err := http.Post(srv.URL+"/a2a/greet", "application/json", strings.NewReader(`{"jsonrpc": "2.0", "id": 1,
		"method": "SendMessage", "params": {"message": {"messageId": "m-1", "role": "ROLE_USER", "parts": [{"text": "Ada"}]}}}`))
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	var answer struct {
		Result struct {
			Task struct {
				ID     string `json:"id"`
				Status struct {
					State string `json:"state"`
				} `json:"status"`
				Artifacts []struct {
					Parts []struct {
						Data map[string]any `json:"data"`
					} `json:"parts"`
				} `json:"artifacts"`
			} `json:"task"`
		} `json:"result"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&answer); err != nil {
		panic(err)
	}
	task := answer.Result.Task
	fmt.Println(task.ID == a2aserver.StartID("greet", "m-1"), task.Status.State)
	result := task.Artifacts[0].Parts[0].Data
	fmt.Println(result["outcome"], result["context"].(map[string]any)["greeting"])
	// Output:
	// true TASK_STATE_COMPLETED
	// DONE hello, Ada
}
