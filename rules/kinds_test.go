package rules_test

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/batonhq/baton/registry"
	"github.com/batonhq/baton/rules"
)

func TestAgentKinds_Load(t *testing.T) {
	w := mustLoad(t, "testdata/valid/agent_kinds.yaml")
	for id, want := range map[string]string{"triage": rules.KindLLM, "researcher": rules.KindA2A, "facts": rules.KindMCP, "search": rules.KindMCP, "writer": rules.KindLLM} {
		a, _ := w.Agent(id)
		if got := a.Kind(); got != want {
			t.Errorf("agent %s: got kind %q, want %q", id, got, want)
		}
	}
	triage, _ := w.Agent("triage")
	l := triage.LLM
	if l.Model != "gpt-4.1-mini" || l.BaseURLEnv != "OPENAI_BASE_URL" || l.KeyEnv != "OPENAI_API_KEY" || l.System != "You route research questions." {
		t.Errorf("got llm %+v", l)
	}
	if l.Temperature == nil || *l.Temperature != 0 || l.Price == nil || l.Price.Input != 0.40 || l.Price.Output != 1.60 {
		t.Errorf("got temperature %v price %+v, want 0 and {0.40 1.60}", l.Temperature, l.Price)
	}
	researcher, _ := w.Agent("researcher")
	if researcher.A2A.URL != "https://research.example" || researcher.A2A.TokenEnv != "RESEARCH_TOKEN" {
		t.Errorf("got a2a %+v", researcher.A2A)
	}
	facts, _ := w.Agent("facts")
	if !slices.Equal(facts.MCP.Command, []string{"node", "tools/server.mjs"}) || facts.MCP.Tool != "lookup" || facts.MCP.Dir != filepath.Join("testdata", "valid") {
		t.Errorf("got mcp %+v", facts.MCP)
	}
	search, _ := w.Agent("search")
	if search.MCP.URL != "http://127.0.0.1:9000/mcp" || search.MCP.TokenEnv != "SEARCH_TOKEN" || search.MCP.Arguments != nil {
		t.Errorf("got mcp %+v", search.MCP)
	}
	writer, _ := w.Agent("writer")
	if writer.LLM.Prompt != nil || writer.LLM.Price != nil || writer.LLM.Temperature != nil {
		t.Errorf("got llm %+v, want only a model", writer.LLM)
	}
}

func TestWorkflow_Triggers_ExcludeReservedOutcomes(t *testing.T) {
	w := mustLoad(t, "testdata/valid/agent_kinds.yaml")
	for agent, want := range map[string][]string{
		"triage":     {"research", "search", "lookup"},
		"researcher": {"completed", "input_required"},
		"writer":     {"draft"},
		"nobody":     nil,
	} {
		if got := w.Triggers(agent); !slices.Equal(got, want) {
			t.Errorf("%s: got %v, want %v", agent, got, want)
		}
	}
}

func TestMCP_EvalArguments(t *testing.T) {
	w := mustLoad(t, "testdata/valid/agent_kinds.yaml")
	facts, _ := w.Agent("facts")
	task := &registry.Task{Input: map[string]any{"question": "why?"}, Context: map[string]any{"topic": "sky"}}
	got, err := facts.MCP.EvalArguments(rules.TaskEnvOf(task))
	if err != nil {
		t.Fatal(err)
	}
	if got["query"] != "why?" || got["topic"] != "sky" || got["limit"] != 5 {
		t.Errorf("got %v, want query why?, topic sky, limit 5", got)
	}
	// Nil maps read as empty ones: the default applies.
	got, err = facts.MCP.EvalArguments(rules.TaskEnvOf(&registry.Task{}))
	if err != nil || got["topic"] != "" {
		t.Errorf("got %v, %v, want topic \"\"", got, err)
	}
}

func TestTaskExpr_ItemAndPreviousResult(t *testing.T) {
	src := `workflow: w
initial: A
agents:
  m: {mcp: {url: "http://127.0.0.1:1/mcp", tool: t, arguments: '{item: item, index: index, prev: previous_result.x}'}}
  l: {llm: {model: m, prompt: 'previous_result.text'}}
states:
  A: {agent: m}
  B: {agent: l}
  Z: {terminal: true}
rules:
  - {id: a, from: m, trigger: done, next: B}
  - {id: b, from: l, trigger: ok, next: Z}
`
	w, err := rules.Parse("w.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	m, _ := w.Agent("m")
	task := &registry.Task{PreviousResult: map[string]any{"x": 1}, Item: "it", Index: 3, HasItem: true}
	got, err := m.MCP.EvalArguments(rules.TaskEnvOf(task))
	if err != nil || got["item"] != "it" || got["index"] != 3 || got["prev"] != 1 {
		t.Errorf("got %v, %v, want item it, index 3, prev 1", got, err)
	}
	// The prompt's type is only known at run time: a result that is not a
	// string is an *EvalError, not a panic.
	l, _ := w.Agent("l")
	_, err = l.LLM.EvalPrompt(rules.TaskEnvOf(&registry.Task{PreviousResult: map[string]any{"text": 7}}))
	var ee *rules.EvalError
	if !errors.As(err, &ee) || !strings.Contains(err.Error(), "want a string") {
		t.Errorf("got %v, want an *EvalError saying it wants a string", err)
	}
	s, err := l.LLM.EvalPrompt(rules.TaskEnvOf(&registry.Task{PreviousResult: map[string]any{"text": "hi"}}))
	if err != nil || s != "hi" {
		t.Errorf("got %q, %v, want hi", s, err)
	}
}

func TestTaskExpr_Budget(t *testing.T) {
	src := `workflow: w
initial: A
agents:
  l: {llm: {model: m, prompt: 'repeat("x", 1000) + join(map(1..200000, "y"), "")'}}
states:
  A: {agent: l}
  Z: {terminal: true}
rules:
  - {id: b, from: l, trigger: ok, next: Z}
`
	w, err := rules.Parse("w.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	l, _ := w.Agent("l")
	_, err = l.LLM.EvalPrompt(rules.TaskEnvOf(&registry.Task{}))
	if !errors.Is(err, rules.ErrBudget) {
		t.Errorf("got %v, want ErrBudget", err)
	}
}

func TestPrice_Cost(t *testing.T) {
	p := &registry.Price{Input: 0.40, Output: 1.60}
	if got, want := p.Cost(1_000_000, 500_000), 0.40+0.80; got-want > 1e-12 || want-got > 1e-12 {
		t.Errorf("got %v, want %v", got, want)
	}
	if got := (*registry.Price)(nil).Cost(10, 10); got != 0 {
		t.Errorf("got %v for no price, want 0", got)
	}
}

func TestSchema_JSONSchema(t *testing.T) {
	src := `workflow: w
initial: A
agents:
  a: {result: {s: string, n: number, i: 'int?', b: bool, l: list, m: map, x: any}}
states:
  A: {agent: a}
  Z: {terminal: true}
rules:
  - {id: r, from: a, trigger: ok, next: Z}
`
	w, err := rules.Parse("w.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	a, _ := w.Agent("a")
	got, _ := json.Marshal(a.Result.JSONSchema())
	want := `{"additionalProperties":false,"properties":{"b":{"type":"boolean"},"i":{"type":["integer","null"]},"l":{"items":{},"type":"array"},"m":{"type":"object"},"n":{"type":"number"},"s":{"type":"string"},"x":{}},"required":["s","n","i","b","l","m","x"],"type":"object"}`
	if string(got) != want {
		t.Errorf("got %s\nwant %s", got, want)
	}
	if got, _ := json.Marshal((*rules.Schema)(nil).JSONSchema()); string(got) != `{"type":"object"}` {
		t.Errorf("got %s for no declaration, want any object", got)
	}
}
