package agentkind_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/batonhq/baton/agentkind"
	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/rules"
)

const exampleFlow = `
workflow: route
initial: TRIAGE
agents:
  triage:
    llm: {model: tiny, base_url_env: MODEL_URL, prompt: '"Ticket: " + input.text'}
    result: {team: string}
states:
  TRIAGE:  {agent: triage, timeout: 30s}
  ROUTED:  {terminal: true}
  UNSURE:  {terminal: true}
rules:
  - {id: routed, from: triage, trigger: routed, next: ROUTED, context: {team: result.team}}
  - {id: unsure, from: triage, trigger: unsure, next: UNSURE}
`

// An embedded Go program runs a workflow whose agents call out (here one
// LLM agent) by giving the engine the handlers agentkind builds from the
// file, and closes them after the engine.
func Example() {
	// Any OpenAI-compatible server: a local stand-in that always routes
	// to billing.
	model := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		answer := `{"trigger": "routed", "result": {"team": "billing"}}`
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"model": "tiny", "choices": []any{map[string]any{"message": map[string]any{"role": "assistant", "content": answer}}},
			"usage": map[string]any{"prompt_tokens": 12, "completion_tokens": 9}})
	}))
	defer model.Close()

	w, err := rules.Parse("route.yaml", []byte(exampleFlow))
	if err != nil {
		fmt.Println(err)
		return
	}
	set, err := agentkind.Handlers(w, agentkind.WithLookupEnv(func(name string) (string, bool) {
		if name == "MODEL_URL" {
			return model.URL + "/v1", true
		}
		return "", false
	}))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer set.Close()
	reg, _ := engine.NewRegistry(w, set.Handlers())
	eng, _ := engine.New(w, reg)
	defer eng.Close()

	ctx := context.Background()
	inst, _ := eng.Start(ctx, map[string]any{"text": "I was charged twice"})
	res, _ := inst.Wait(ctx)
	fmt.Println(res.Outcome, res.Context["team"], res.Usage.Tokens)
	fmt.Println(strings.ToUpper(w.Agents[0].Kind()), "agent", w.Agents[0].ID)
	// Output:
	// ROUTED billing 21
	// LLM agent triage
}
