package main

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// kindsWorkflow has one agent of each built-in kind (LLM, A2A, MCP over
// HTTP, MCP over stdio), every one of their outcomes covered; PEER is
// where the agents would call.
const kindsWorkflow = `workflow: kinds
description: One agent of each built-in kind.
initial: TRIAGE
input: {question: string}
agents:
  triage:
    llm: {model: tiny, base_url_env: KINDS_MODEL_URL, key_env: KINDS_MODEL_KEY, price: {input: 1, output: 2}}
    result: {topic: string}
  researcher: {a2a: {url: "PEER", token_env: KINDS_A2A_TOKEN}}
  search:
    mcp: {url: "PEER/mcp", tool: web_search, arguments: '{query: input.question}', token_env: KINDS_MCP_TOKEN}
  facts:
    mcp: {command: [./no-such-server], tool: lookup}
states:
  TRIAGE: {agent: triage, timeout: 30s}
  RESEARCH: {agent: researcher, timeout: 30s}
  SEARCH: {agent: search, timeout: 30s}
  FACTS: {agent: facts, timeout: 30s}
  DONE: {terminal: true}
  FAILED: {terminal: true}
rules:
  - {id: routed, from: triage, trigger: research, next: RESEARCH, context: {topic: result.topic}}
  - {id: off, from: triage, trigger: [off_topic, error, timeout], next: FAILED}
  - {id: researched, from: researcher, trigger: completed, next: SEARCH}
  - {id: asked, from: researcher, trigger: input_required, next: FAILED}
  - {id: r_failed, from: researcher, trigger: [error, timeout, rejected], next: FAILED}
  - {id: searched, from: search, trigger: done, next: FACTS}
  - {id: s_failed, from: search, trigger: [error, timeout, rejected], next: FAILED}
  - {id: found, from: facts, trigger: done, next: DONE}
  - {id: f_failed, from: facts, trigger: [error, timeout, rejected], next: FAILED}
`

const kindsScenario = `scenario: every kind scripted
workflow: ../workflow.yaml
input: {question: why}
agents:
  triage:
    - {trigger: research, result: {topic: optics}, usage: {input_tokens: 1000, output_tokens: 500}}
  researcher:
    - {trigger: completed, result: {task_id: t-1, text: scattering}, usage: {input_tokens: 1, output_tokens: 1, cost: 0.5}}
  search:
    - {trigger: done, result: {hits: []}}
  facts:
    - {trigger: done, result: {facts: []}}
expect:
  outcome: DONE
  states: [TRIAGE, RESEARCH, SEARCH, FACTS, DONE]
  usage: {tokens: 1502, cost: 0.502}
`

// writeKinds writes the workflow, its peer URL filled in, and its
// scenarios: the LLM agent's cost computed from its price, and given.
func writeKinds(t *testing.T, peer string) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "workflow.yaml"), []byte(strings.ReplaceAll(kindsWorkflow, "PEER", peer)), 0o600))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "scenarios"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "scenarios", "scripted.yaml"), []byte(kindsScenario), 0o600))
	// A reply's own cost wins over the one the model's price gives.
	priced := strings.NewReplacer("usage: {input_tokens: 1000, output_tokens: 500}", "usage: {input_tokens: 1000, output_tokens: 500, cost: 0.25}",
		"cost: 0.502", "cost: 0.75", "every kind scripted", "a reply's cost").Replace(kindsScenario)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "scenarios", "priced.yaml"), []byte(priced), 0o600))
	return dir
}

// A workflow with every built-in kind validates and checks clean without
// its variables set (neither command reads them), and its scenario runs
// scripted: with the variables set, no agent calls out.
func TestKinds_ValidateCheckAndScenario(t *testing.T) {
	var calls atomic.Int64
	peer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		calls.Add(1)
		http.Error(w, "no calls expected", http.StatusTeapot)
	}))
	defer peer.Close()
	dir := writeKinds(t, peer.URL)
	file := filepath.Join(dir, "workflow.yaml")

	out, errOut, code := wfrun(t, "validate", "--strict", file)
	assert.Equal(t, 0, code, "%s%s", out, errOut)
	out, errOut, code = wfrun(t, "check", file)
	assert.Equal(t, 0, code, "%s%s", out, errOut)
	assert.Contains(t, out, "RESEARCH: completed, input_required, error, timeout, rejected")

	t.Setenv("KINDS_MODEL_URL", peer.URL)
	t.Setenv("KINDS_MODEL_KEY", "k")
	t.Setenv("KINDS_A2A_TOKEN", "k")
	t.Setenv("KINDS_MCP_TOKEN", "k")
	out, errOut, code = wfrun(t, "test", dir)
	assert.Equal(t, 0, code, "%s%s", out, errOut)
	assert.Contains(t, out, "scenarios: 2 passed, 0 failed")
	out, errOut, code = wfrun(t, "run", filepath.Join(dir, "scenarios", "scripted.yaml"))
	assert.Equal(t, 0, code, "%s%s", out, errOut)
	assert.Zero(t, calls.Load(), "a scripted agent called out")
}

// Triggers an A2A or an MCP agent never reports are refused by validate
// and check, each at its position.
func TestKinds_ValidateAndCheckRefuseTriggersAKindNeverReports(t *testing.T) {
	src := strings.ReplaceAll(kindsWorkflow, "PEER", "http://127.0.0.1:9")
	src = strings.Replace(src, "from: researcher, trigger: completed", "from: researcher, trigger: complete", 1)
	src = strings.Replace(src, "from: facts, trigger: done", "from: facts, trigger: found", 1)
	file := filepath.Join(t.TempDir(), "workflow.yaml")
	require.NoError(t, os.WriteFile(file, []byte(src), 0o600))
	for _, cmd := range []string{"validate", "check"} {
		out, errOut, code := wfrun(t, cmd, file)
		assert.Equal(t, 1, code, "%s: %s%s", cmd, out, errOut)
		all := out + errOut
		assert.Contains(t, all, file+`:24:49: `, cmd)
		assert.Contains(t, all, `A2A agent "researcher" only reports completed, input_required (and the engine's error, timeout, rejected), not "complete" (did you mean "completed"?)`, cmd)
		assert.Contains(t, all, file+`:29:39: `, cmd)
		assert.Contains(t, all, `MCP agent "facts" only reports done (and the engine's error, timeout, rejected), not "found"`, cmd)
	}
}
