package server_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/agentkind"
	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/internal/jspeers"
	"github.com/batonhq/baton/internal/llmtest"
	"github.com/batonhq/baton/internal/proctest"
	"github.com/batonhq/baton/natsbus"
	"github.com/batonhq/baton/natsserver"
	"github.com/batonhq/baton/natsstore"
	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/server"
)

// embeddedFlow has one agent of each built-in kind: a model routes, an
// A2A agent researches, a stdio MCP tool looks up.
const embeddedFlow = `workflow: embedded
initial: TRIAGE
input: {mode: string}
agents:
  triage:
    llm: {model: tiny, base_url_env: EMB_MODEL_URL, key_env: EMB_MODEL_KEY, price: {input: 1, output: 1}}
    result: {why: string}
  researcher: {a2a: {url: "A2AURL", token_env: EMB_A2A_TOKEN}}
  lookup:
    mcp: {command: ["NODE", "SCRIPT"], tool: echo, arguments: '{mode: input.mode, why: context.why}'}
states:
  TRIAGE: {agent: triage, timeout: 30s}
  RESEARCH: {agent: researcher, timeout: 30s}
  LOOKUP: {agent: lookup, timeout: 30s}
  DONE: {terminal: true}
rules:
  - {id: routed, from: triage, trigger: research, next: RESEARCH, context: {why: result.why}}
  - {id: researched, from: researcher, trigger: completed, next: LOOKUP, context: {answer: result.answer}}
  - {id: looked, from: lookup, trigger: done, next: DONE, context: {echo: result}}
`

// An embedded Go program runs a workflow of an LLM, an A2A and an MCP
// agent with engine.New and agentkind.Handlers on the NATS transport and
// store: it completes with the usage of the model and of the A2A agent;
// the secrets are in no byte the store wrote.
func TestEmbedded_KindsOnNATS(t *testing.T) {
	node := jspeers.Node(t)
	const modelKey, a2aKey = "sk-embedded-model-3141", "embedded-a2a-2718"
	model := llmtest.Start(t, modelKey, func(llmtest.Request) llmtest.Reply {
		return llmtest.Reply{Content: llmtest.Answer("research", map[string]any{"why": "needs facts"}), PromptTokens: 10, CompletionTokens: 4}
	})
	a2aAddr := proctest.FreeAddr(t)
	_, port, _ := strings.Cut(a2aAddr, ":")
	proctest.Start(t, []string{"PORT=" + port, "TOKEN=" + a2aKey}, "ready", node, jspeers.Script("a2a_agent_peer.mjs"))
	src := strings.NewReplacer("A2AURL", "http://"+a2aAddr, "NODE", node, "SCRIPT", jspeers.Script("mcp_tools_server.mjs")).Replace(embeddedFlow)
	w, err := rules.Parse("embedded.yaml", []byte(src))
	require.NoError(t, err)
	vars := map[string]string{"EMB_MODEL_URL": model.BaseURL, "EMB_MODEL_KEY": modelKey, "EMB_A2A_TOKEN": a2aKey}
	set, err := agentkind.Handlers(w, agentkind.WithLookupEnv(func(name string) (string, bool) {
		v, ok := vars[name]
		return v, ok
	}))
	require.NoError(t, err)
	defer func() { require.NoError(t, set.Close()) }()

	dir := t.TempDir()
	ns, err := natsserver.Start(natsserver.Config{Dir: dir})
	require.NoError(t, err)
	defer ns.Close()
	nc, err := ns.Connect()
	require.NoError(t, err)
	defer nc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tr, err := natsbus.New(ctx, nc, natsbus.DefaultConfig())
	require.NoError(t, err)
	defer tr.Close()
	store, err := natsstore.Open(ctx, nc, natsstore.Config{})
	require.NoError(t, err)
	defer store.Close()
	reg, err := engine.NewRegistry(w, set.Handlers())
	require.NoError(t, err)
	eng, err := engine.New(w, reg, engine.WithStore(store), engine.WithTransport(tr))
	require.NoError(t, err)

	inst, err := eng.Start(ctx, map[string]any{"mode": "complete"})
	require.NoError(t, err)
	res, err := inst.Wait(ctx)
	require.NoError(t, err)
	require.NoError(t, res.Err)
	assert.Equal(t, "DONE", res.Outcome)
	assert.EqualValues(t, 42, res.Context["answer"])
	assert.Equal(t, map[string]any{"mode": "complete", "why": "needs facts"}, res.Context["echo"])
	assert.Equal(t, int64(10+7), res.Usage.InputTokens, "the model's and the A2A agent's")
	assert.Equal(t, int64(4+3), res.Usage.OutputTokens)
	assert.InDelta(t, 14e-6+0.5, res.Usage.Cost, 1e-9)
	require.NoError(t, eng.Close())

	// What the store wrote holds the run and neither secret.
	var stored strings.Builder
	require.NoError(t, filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		stored.Write(data)
		return err
	}))
	assert.Contains(t, stored.String(), "needs facts", "the store was read")
	assert.NotContains(t, stored.String(), modelKey)
	assert.NotContains(t, stored.String(), a2aKey)
}

// A workflow whose A2A or MCP agent names a token variable that is not
// set does not load on the server, and the error names the variable.
func TestServer_KindsMissingToken(t *testing.T) {
	for _, tt := range []struct{ name, agent, want string }{
		{"a2a", `researcher: {a2a: {url: "http://127.0.0.1:1", token_env: BATON_TEST_UNSET_A2A}}`, `agent "researcher": token_env BATON_TEST_UNSET_A2A is not set`},
		{"mcp", `researcher: {mcp: {url: "http://127.0.0.1:1/mcp", tool: t, token_env: BATON_TEST_UNSET_MCP}}`, `agent "researcher": token_env BATON_TEST_UNSET_MCP is not set`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			trigger := "completed"
			if tt.name == "mcp" {
				trigger = "done"
			}
			src := "workflow: tok\ninitial: A\nagents:\n  " + tt.agent + "\nstates:\n  A: {agent: researcher}\n  Z: {terminal: true}\nrules:\n  - {id: r, from: researcher, trigger: " + trigger + ", next: Z}\n"
			dir := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(dir, "tok.yaml"), []byte(src), 0o600))
			_, err := server.New(context.Background(), server.Config{WorkflowsDir: dir, DataDir: t.TempDir(), NATS: server.NoNATS})
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}
