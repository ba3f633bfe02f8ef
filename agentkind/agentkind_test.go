package agentkind_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/batonhq/baton/agentkind"
	"github.com/batonhq/baton/bus"
	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/httpagent"
	"github.com/batonhq/baton/internal/llmtest"
	"github.com/batonhq/baton/rules"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

const triageFlow = `
workflow: triage
initial: TRIAGE
input: {text: string}
agents:
  triage:
    llm:
      model: tiny
      base_url_env: MODEL_URL
      key_env: MODEL_KEY
      system: You route support tickets.
      prompt: '"Ticket: " + input.text'
      price: {input: 1, output: 2}
    result: {category: string, confidence: number}
  billing:
    url: BILLING
    secret_env: BILLING_SECRET
  human: {type: person}
states:
  TRIAGE:  {agent: triage, timeout: 10s}
  BILLING: {agent: billing, timeout: 10s}
  HUMAN:   {agent: human}
  DONE:    {terminal: true}
  FAILED:  {terminal: true}
rules:
  - {id: billing, from: triage, trigger: billing, next: BILLING, context: {category: result.category}}
  - {id: other, from: triage, trigger: [other, unsure], next: HUMAN}
  - {id: failed, from: triage, trigger: [error, timeout], next: FAILED}
  - {id: billed, from: billing, trigger: done, next: DONE}
  - {id: handled, from: human, trigger: done, next: DONE}
`

const key = "sk-agentkind-secret-key"

// env is an environment with the variables the workflow names.
func env(vars map[string]string) agentkind.Option {
	return agentkind.WithLookupEnv(func(k string) (string, bool) { v, ok := vars[k]; return v, ok })
}

func load(t *testing.T, billingURL string) *rules.Workflow {
	t.Helper()
	w, err := rules.Parse("triage.yaml", []byte(strings.ReplaceAll(triageFlow, "url: BILLING", "url: "+billingURL)))
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// billingAgent is an HTTP agent that checks the signature and reports done.
func billingAgent(t *testing.T, secret string) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if !httpagent.Verify([]byte(secret), body, r.Header.Get("Baton-Signature")) {
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		var work struct {
			Content  map[string]any `json:"content"`
			Metadata map[string]any `json:"metadata"`
		}
		_ = json.Unmarshal(body, &work)
		_ = json.NewEncoder(w).Encode(map[string]any{"instance_id": work.Metadata["instance_id"], "step": work.Metadata["step"],
			"agent": "billing", "trigger": "done", "result": map[string]any{"category": work.Content["context"].(map[string]any)["category"]}})
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestHandlers_RunAWorkflowOfModelAndHTTPAgents(t *testing.T) {
	model := llmtest.Start(t, key, func(r llmtest.Request) llmtest.Reply {
		return llmtest.Reply{Content: llmtest.Answer("billing", map[string]any{"category": "invoice", "confidence": 0.9}), PromptTokens: 100, CompletionTokens: 10}
	})
	billing := billingAgent(t, "hmac-secret")
	w := load(t, billing.URL)
	set, err := agentkind.Handlers(w, env(map[string]string{"MODEL_URL": model.BaseURL, "MODEL_KEY": key, "BILLING_SECRET": "hmac-secret"}))
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	hs := set.Handlers()
	ids := make([]string, 0, len(hs))
	for id := range hs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	if !slices.Equal(ids, []string{"billing", "triage"}) {
		t.Fatalf("got handlers for %v, want billing and triage (human is external)", ids)
	}
	reg, err := engine.NewRegistry(w, hs)
	if err != nil {
		t.Fatal(err)
	}
	b := bus.New(bus.WithAckMessages(false)) // carries the person's work
	defer b.Close()
	eng, err := engine.New(w, reg, engine.WithTransport(b))
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	inst, err := eng.Start(ctx, map[string]any{"text": "I was billed twice"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := inst.Wait(ctx)
	if err != nil || res.Outcome != "DONE" || res.Context["category"] != "invoice" {
		t.Fatalf("got %+v, %v, want DONE with category invoice", res, err)
	}
	if res.Usage.InputTokens != 100 || res.Usage.OutputTokens != 10 || res.Usage.Cost != (100*1+10*2)/1e6 {
		t.Errorf("got usage %+v, want 100 in, 10 out, cost from the price", res.Usage.Totals)
	}
	reqs := model.Requests()
	if len(reqs) != 1 {
		t.Fatalf("got %d model calls, want 1", len(reqs))
	}
	r := reqs[0]
	if r.User != "Ticket: I was billed twice" || r.System != "You route support tickets." {
		t.Errorf("got system %q user %q", r.System, r.User)
	}
	props := r.Schema["properties"].(map[string]any)
	enum, _ := json.Marshal(props["trigger"].(map[string]any)["enum"])
	if string(enum) != `["billing","other","unsure"]` {
		t.Errorf("got trigger enum %s, want the rules' triggers without the reserved ones", enum)
	}
	result, _ := json.Marshal(props["result"])
	if want := `{"additionalProperties":false,"properties":{"category":{"type":"string"},"confidence":{"type":"number"}},"required":["category","confidence"],"type":"object"}`; string(result) != want {
		t.Errorf("got result schema %s, want %s", result, want)
	}
}

func TestHandlers_MissingEnvironmentVariableIsNamed(t *testing.T) {
	w := load(t, "http://127.0.0.1:1/billing")
	for _, tt := range []struct {
		vars      map[string]string
		key, name string
	}{
		{map[string]string{"MODEL_URL": "http://127.0.0.1:1/v1", "BILLING_SECRET": "s"}, "key_env", "MODEL_KEY"},
		{map[string]string{"MODEL_KEY": "k", "BILLING_SECRET": "s"}, "base_url_env", "MODEL_URL"},
		{map[string]string{"MODEL_URL": "http://127.0.0.1:1/v1", "MODEL_KEY": "k", "BILLING_SECRET": ""}, "secret_env", "BILLING_SECRET"},
	} {
		_, err := agentkind.Handlers(w, env(tt.vars))
		var ee *agentkind.EnvError
		if !errors.As(err, &ee) || !errors.Is(err, agentkind.ErrMissingEnv) || ee.Var != tt.name || ee.Key != tt.key {
			t.Errorf("got %v, want an *EnvError naming %s %s", err, tt.key, tt.name)
		}
	}
}

func TestHandlers_BadBaseURLIsAnAgentError(t *testing.T) {
	w := load(t, "http://127.0.0.1:1/billing")
	_, err := agentkind.Handlers(w, env(map[string]string{"MODEL_URL": "not a url", "MODEL_KEY": key, "BILLING_SECRET": "s"}))
	var ae *agentkind.AgentError
	if !errors.As(err, &ae) || ae.Agent != "triage" || ae.Kind != rules.KindLLM {
		t.Fatalf("got %v, want an *AgentError for triage", err)
	}
	if strings.Contains(err.Error(), key) {
		t.Errorf("the error holds the key: %v", err)
	}
}

func TestHandlers_WorkflowWithoutKindsHasNoHandlers(t *testing.T) {
	w, err := rules.Parse("plain.yaml", []byte(`
workflow: plain
initial: A
agents: {a: {}}
states: {A: {agent: a}, Z: {terminal: true}}
rules: [{id: r, from: a, trigger: ok, next: Z}]
`))
	if err != nil {
		t.Fatal(err)
	}
	set, err := agentkind.Handlers(w)
	if err != nil || len(set.Handlers()) != 0 {
		t.Fatalf("got %v, %v, want no handler", set, err)
	}
	if set.Close() != nil || set.Close() != nil {
		t.Error("Close failed")
	}
}
