package server_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/batonhq/baton/internal/jspeers"
	"github.com/batonhq/baton/internal/llmtest"
	"github.com/batonhq/baton/internal/proctest"
	"github.com/batonhq/baton/server"
)

// The bearer tokens of the peers: each must reach its peer and appear
// nowhere else.
const (
	a2aToken = "a2a-e2e-secret-7391"
	mcpToken = "mcp-e2e-secret-5528"
	kindsKey = "sk-e2e-model-key-1618"
)

// kindsFlow runs an LLM agent, an A2A agent, then an MCP tool over HTTP, then one of a
// stdio server the engine starts. The A2A peer's mode comes from the
// instance's input; its state's timeout is what a slow task runs into.
const kindsFlow = `workflow: kinds
description: A model, an A2A agent, then MCP tools over HTTP and over stdio.
initial: TRIAGE
input: {mode: string}
agents:
  triage:
    llm: {model: tiny, base_url_env: BATON_TEST_KINDS_MODEL_URL, key_env: BATON_TEST_KINDS_MODEL_KEY, price: {input: 1, output: 1}}
    result: {why: string}
  researcher: {a2a: {url: "A2AURL", token_env: BATON_TEST_A2A_TOKEN}}
  lookup: {mcp: {url: "MCPURL", tool: usage, token_env: BATON_TEST_MCP_TOKEN}}
  local: {mcp: {command: ["NODE", "SCRIPT"], tool: process}}
states:
  TRIAGE: {agent: triage, timeout: 30s}
  RESEARCH: {agent: researcher, timeout: 3s, heartbeat: 500ms, retry: {max: 1, backoff: [1ms], on: [agent_failed]}}
  LOOKUP: {agent: lookup, timeout: 30s}
  LOCAL: {agent: local, timeout: 30s}
  DONE: {terminal: true}
  TIMED_OUT: {terminal: true}
  ASKED: {wait: {signals: [answer]}}
  FAILED: {terminal: true}
rules:
  - {id: routed, from: triage, trigger: research, next: RESEARCH, context: {why: result.why}}
  - {id: researched, from: researcher, trigger: completed, next: LOOKUP, context: {answer: result.answer, task: result.task_id}}
  - {id: asked, from: researcher, trigger: input_required, next: ASKED}
  - {id: answered, from: ASKED, trigger: answer, next: RESEARCH}
  - {id: late, from: researcher, trigger: timeout, next: TIMED_OUT}
  - {id: failed, from: researcher, trigger: error, next: FAILED, context: {kind: error.kind, message: error.message}}
  - {id: looked, from: lookup, trigger: done, next: LOCAL, context: {summary: result.summary}}
  - {id: local, from: local, trigger: done, next: DONE, context: {pid: result.pid}}
`

// refusedFlow calls the same peers with a token they refuse: each run
// fails, and the rules keep the error's kind and message.
const refusedFlow = `workflow: refused
initial: RESEARCH
agents:
  researcher: {a2a: {url: "A2AURL", token_env: BATON_TEST_WRONG_TOKEN}}
  lookup: {mcp: {url: "MCPURL", tool: usage, token_env: BATON_TEST_WRONG_TOKEN}}
states:
  RESEARCH: {agent: researcher, timeout: 30s}
  LOOKUP: {agent: lookup, timeout: 30s}
  DONE: {terminal: true}
rules:
  - {id: researched, from: researcher, trigger: completed, next: LOOKUP}
  - {id: refused, from: researcher, trigger: error, next: LOOKUP, context: {a2a: error.kind, a2a_message: error.message}}
  - {id: looked, from: lookup, trigger: [done, error], next: DONE, context: {mcp: error.kind, mcp_message: error.message}}
`

// wrongToken is the token the peers refuse.
const wrongToken = "wrong-e2e-secret-1414"

// kindsPeers are the A2A agent and the MCP tool server of kindsFlow,
// both the official JavaScript SDKs, each asking for its token.
type kindsPeers struct {
	a2a, mcp string // base URL of the A2A agent, URL of the MCP endpoint
	dir      string // the workflows folder
}

func startKindsPeers(t *testing.T, a2aVersion string) kindsPeers {
	t.Helper()
	node := jspeers.Node(t)
	a2aAddr := proctest.FreeAddr(t)
	_, port, _ := strings.Cut(a2aAddr, ":")
	proctest.Start(t, []string{"PORT=" + port, "TOKEN=" + a2aToken, "A2A_VERSION=" + a2aVersion}, "ready", node, jspeers.Script("a2a_agent_peer.mjs"))
	mcpAddr := proctest.FreeAddr(t)
	proctest.Start(t, []string{"MCP_TOKEN=" + mcpToken}, "listening", node, jspeers.Script("mcp_tools_server.mjs"), "--http", mcpAddr)
	p := kindsPeers{a2a: "http://" + a2aAddr, mcp: "http://" + mcpAddr + "/mcp", dir: t.TempDir()}
	fill := strings.NewReplacer("A2AURL", p.a2a, "MCPURL", p.mcp, "NODE", node, "SCRIPT", jspeers.Script("mcp_tools_server.mjs"))
	require.NoError(t, os.WriteFile(filepath.Join(p.dir, "kinds.yaml"), []byte(fill.Replace(kindsFlow)), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(p.dir, "refused.yaml"), []byte(fill.Replace(refusedFlow)), 0o600))
	return p
}

// getJSON decodes the JSON answer of a GET of a test hook of a peer.
func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode, url)
	require.NoError(t, json.NewDecoder(resp.Body).Decode(v))
}

// cancelled waits (bounded) until the A2A peer has cancelled n tasks and
// returns them.
func (p kindsPeers) cancelled(t *testing.T, n int) []string {
	t.Helper()
	var ids []string
	for range 2000 {
		ids = nil
		getJSON(t, p.a2a+"/_test/cancelled", &ids)
		if len(ids) >= n {
			return ids
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("the A2A peer cancelled %v, want %d tasks", ids, n)
	return nil
}

// sent is the JSON-RPC calls the A2A peer got, by method.
func (p kindsPeers) sent(t *testing.T) map[string][]map[string]any {
	t.Helper()
	var log []map[string]any
	getJSON(t, p.a2a+"/_test/log", &log)
	out := map[string][]map[string]any{}
	for _, c := range log {
		m, _ := c["method"].(string)
		out[m] = append(out[m], c)
	}
	return out
}

// alive reports whether process pid still exists.
func alive(pid int) bool {
	return !errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}

// A workflow of an LLM agent, an A2A agent and two MCP agents (a server
// over HTTP, a stdio server the engine starts) runs on the server, with
// the in-memory bus and bbolt (an A2A 0.3 peer) and with embedded NATS (an
// A2A 1.0 peer): the run completes with every agent's usage in the
// instance; a task that asks for input goes on once a person answered; a
// failed task is retried as the state says and its kind reaches the
// rules; the state's timeout and cancelling the instance each cancel the
// A2A task at the peer (the state asks for heartbeats, which the engine
// does not await from the agents it runs itself: a task followed for
// longer completes); closing the server stops the stdio server. The keys
// and tokens, read once when the server is built, reach the peers and
// appear in no answer, page, event, log line or stored byte.
func TestServer_KindsEndToEnd(t *testing.T) {
	// Each store with one of the A2A protocol versions: the peer speaks
	// 0.3 (its card only at the older path) or 1.0.
	for _, mode := range []struct{ name, nats, a2a, send, cancel, header string }{
		{"bbolt", server.NoNATS, "0.3", "message/send", "tasks/cancel", ""},
		{"nats", "", "1.0", "SendMessage", "CancelTask", "1.0"},
	} {
		t.Run(mode.name, func(t *testing.T) {
			peers := startKindsPeers(t, mode.a2a)
			model := llmtest.Start(t, kindsKey, func(llmtest.Request) llmtest.Reply {
				return llmtest.Reply{Content: llmtest.Answer("research", map[string]any{"why": "needs facts"}), PromptTokens: 10, CompletionTokens: 4}
			})
			t.Setenv("BATON_TEST_KINDS_MODEL_URL", model.BaseURL)
			t.Setenv("BATON_TEST_KINDS_MODEL_KEY", kindsKey)
			t.Setenv("BATON_TEST_A2A_TOKEN", a2aToken)
			t.Setenv("BATON_TEST_MCP_TOKEN", mcpToken)
			t.Setenv("BATON_TEST_WRONG_TOKEN", wrongToken)
			core, logs := observer.New(zapcore.DebugLevel)
			f := newFixture(t, func(c *server.Config) {
				c.WorkflowsDir = peers.dir
				c.Logger = zap.New(core)
				c.NATS = mode.nats
				if mode.nats == server.NoNATS {
					c.NATSListen = ""
				}
			})
			// The tokens were read once, when the server was built: a
			// variable changed since changes nothing.
			t.Setenv("BATON_TEST_A2A_TOKEN", "changed")
			t.Setenv("BATON_TEST_MCP_TOKEN", "changed")
			t.Setenv("BATON_TEST_KINDS_MODEL_KEY", "changed")

			// It completes, with every agent's usage.
			code, body := f.do("POST", "/v1/workflows/kinds/instances", map[string]any{"id": "done-1", "input": map[string]any{"mode": "complete"}})
			require.Equal(t, 201, code, "%v", body)
			got := f.waitStatusWithin("done-1", "completed", time.Minute)
			assert.Equal(t, "DONE", got["outcome"])
			ctx := got["context"].(map[string]any)
			assert.Equal(t, 42.0, ctx["answer"])
			assert.NotEmpty(t, ctx["task"])
			assert.Equal(t, "short", ctx["summary"])
			pid := int(ctx["pid"].(float64))
			assert.True(t, alive(pid), "the stdio server runs while the server does")
			usage := got["usage"].(map[string]any)
			assert.Equal(t, 137.0, usage["input_tokens"], "LLM 10 + A2A 7 + MCP 120: %v", usage)
			assert.Equal(t, 37.0, usage["output_tokens"], "LLM 4 + A2A 3 + MCP 30: %v", usage)
			assert.InDelta(t, 14e-6+0.75, usage["cost"], 1e-9, "LLM 14e-6 + A2A 0.5 + MCP 0.25")
			calls := peers.sent(t)
			require.Len(t, calls[mode.send], 1, "%v", calls)
			send := calls[mode.send][0]
			assert.Equal(t, "done-1", send["contextId"], "the context id is the instance id")
			assert.Equal(t, "Bearer "+a2aToken, send["authorization"])
			assert.Equal(t, mode.header, send["version"])

			// Input required: the outcome input_required; once a person
			// answered, the next message goes on with the same task.
			code, body = f.do("POST", "/v1/workflows/kinds/instances", map[string]any{"id": "ask-1", "input": map[string]any{"mode": "ask"}})
			require.Equal(t, 201, code, "%v", body)
			f.waitStatusWithin("ask-1", "waiting", time.Minute)
			var asked map[string]any
			for _, e := range f.history("ask-1") {
				if e["kind"] == "agent_run" && e["trigger"] == "input_required" {
					asked, _ = e["result"].(map[string]any)
				}
			}
			require.NotNil(t, asked, "no input_required run")
			assert.Equal(t, "which year?", asked["text"])
			assert.Equal(t, map[string]any{"choices": []any{2024.0, 2025.0}}, asked["data"])
			code, body = f.do("POST", "/v1/instances/ask-1/signals/answer", map[string]any{"data": map[string]any{"year": 2025}})
			require.Less(t, code, 300, "%v", body)
			got = f.waitStatusWithin("ask-1", "completed", time.Minute)
			assert.Equal(t, "DONE", got["outcome"])
			assert.Equal(t, asked["task_id"], got["context"].(map[string]any)["task"], "the task that asked completed")
			var sends []string
			for _, c := range peers.sent(t)[mode.send] {
				if c["contextId"] == "ask-1" {
					sends = append(sends, c["taskId"].(string))
				}
			}
			assert.Equal(t, []string{"", asked["task_id"].(string)}, sends, "the second message carries the task id")

			// A failed task fails the run: its kind is in the history and
			// in the error the rules read.
			code, body = f.do("POST", "/v1/workflows/kinds/instances", map[string]any{"id": "fail-1", "input": map[string]any{"mode": "fail"}})
			require.Equal(t, 201, code, "%v", body)
			got = f.waitStatusWithin("fail-1", "completed", time.Minute)
			assert.Equal(t, "FAILED", got["outcome"])
			assert.Equal(t, "agent_failed", got["context"].(map[string]any)["kind"])
			assert.Contains(t, got["context"].(map[string]any)["message"], "the research failed")
			var failed []any
			for _, e := range f.history("fail-1") {
				if e["kind"] == "agent_run" && e["agent"] == "researcher" {
					failed = append(failed, e["error_kind"])
				}
			}
			assert.Equal(t, []any{"agent_failed", "agent_failed"}, failed, "the state's retry runs it again")

			// Cancelling the instance cancels its task at the peer.
			code, body = f.do("POST", "/v1/workflows/kinds/instances", map[string]any{"id": "cancel-1", "input": map[string]any{"mode": "slow"}})
			require.Equal(t, 201, code, "%v", body)
			var working []string
			getJSON(t, peers.a2a+"/_test/working", &working)
			require.Len(t, working, 1)
			code, body = f.do("POST", "/v1/instances/cancel-1/cancel", map[string]any{"reason": "changed my mind"})
			require.Equal(t, 202, code, "%v", body)
			f.waitStatusWithin("cancel-1", "cancelled", time.Minute)
			assert.Equal(t, working, peers.cancelled(t, 1))

			// The state's timeout cancels the task too.
			code, body = f.do("POST", "/v1/workflows/kinds/instances", map[string]any{"id": "late-1", "input": map[string]any{"mode": "slow"}})
			require.Equal(t, 201, code, "%v", body)
			assert.Equal(t, "TIMED_OUT", f.waitStatusWithin("late-1", "completed", time.Minute)["outcome"])
			ids := peers.cancelled(t, 2)
			require.Len(t, ids, 2)
			assert.NotContains(t, ids[1:], ids[0])
			for _, e := range f.history("late-1") {
				if e["kind"] == "agent_run" && e["agent"] == "researcher" {
					assert.Equal(t, "timeout", e["error_kind"], "%v", e)
				}
			}

			// An instance cancelled while its task waits for a person's
			// answer (no run under way) cancels that task at the peer.
			code, body = f.do("POST", "/v1/workflows/kinds/instances", map[string]any{"id": "ask-2", "input": map[string]any{"mode": "ask"}})
			require.Equal(t, 201, code, "%v", body)
			f.waitStatusWithin("ask-2", "waiting", time.Minute)
			var waitingTask string
			for _, e := range f.history("ask-2") {
				if e["kind"] == "agent_run" && e["trigger"] == "input_required" {
					waitingTask, _ = e["result"].(map[string]any)["task_id"].(string)
				}
			}
			require.NotEmpty(t, waitingTask, "no input_required run")
			code, body = f.do("POST", "/v1/instances/ask-2/cancel", map[string]any{"reason": "nobody will answer"})
			require.Equal(t, 202, code, "%v", body)
			f.waitStatusWithin("ask-2", "cancelled", time.Minute)
			cancelledTask := func() bool {
				for _, c := range peers.sent(t)[mode.cancel] {
					if p, _ := c["params"].(map[string]any); p["id"] == waitingTask {
						return true
					}
				}
				return false
			}
			for i := 0; i < 500 && !cancelledTask(); i++ {
				time.Sleep(10 * time.Millisecond)
			}
			assert.True(t, cancelledTask(), "the peer got no %s of task %s", mode.cancel, waitingTask)

			// A refused token: A2A says unauthorized, MCP fails to connect.
			code, body = f.do("POST", "/v1/workflows/refused/instances", map[string]any{"id": "refused-1"})
			require.Equal(t, 201, code, "%v", body)
			got = f.waitStatusWithin("refused-1", "completed", time.Minute)
			ctx = got["context"].(map[string]any)
			assert.Equal(t, "unauthorized", ctx["a2a"], "%v", ctx)
			assert.Contains(t, ctx["a2a_message"], "401")
			assert.Equal(t, "transport", ctx["mcp"], "%v", ctx)

			// The tokens are nowhere but at their peers.
			var seen strings.Builder
			for _, id := range []string{"done-1", "ask-1", "fail-1", "cancel-1", "late-1", "ask-2", "refused-1"} {
				for _, path := range []string{"/v1/instances/" + id, "/v1/instances/" + id + "/history", "/ui/instances/" + id, "/v1/events?instance=" + id} {
					seen.WriteString(get(t, f.http.URL+path))
				}
			}
			seen.WriteString(get(t, f.http.URL+"/v1/instances"))
			seen.WriteString(get(t, f.http.URL+"/v1/workflows/kinds"))
			assert.Contains(t, seen.String(), "TIMED_OUT", "the pages were read")

			// Closing the server stops the stdio server it started.
			f.srv.Close()
			for i := 0; alive(pid) && i < 2000; i++ {
				time.Sleep(5 * time.Millisecond)
			}
			assert.False(t, alive(pid), "the stdio server %d outlived the server", pid)

			for _, e := range logs.All() {
				data, _ := json.Marshal(e.ContextMap())
				seen.WriteString(e.Message + string(data) + "\n")
			}
			require.NoError(t, filepath.WalkDir(f.data, func(path string, d os.DirEntry, err error) error {
				if err != nil || d.IsDir() {
					return err
				}
				data, err := os.ReadFile(path)
				seen.Write(data)
				return err
			}))
			assert.Contains(t, seen.String(), "done-1", "the store was read")
			assert.NotContains(t, seen.String(), a2aToken)
			assert.NotContains(t, seen.String(), mcpToken)
			assert.NotContains(t, seen.String(), kindsKey)
			assert.NotContains(t, seen.String(), wrongToken)
		})
	}
}

// waitStatusWithin is waitStatus with a bound of its own: node peers and
// a stdio server starting on a loaded machine, or a run that ends on its
// state's timeout, take longer than waitStatus allows.
func (f *fixture) waitStatusWithin(id, want string, bound time.Duration) map[string]any {
	f.t.Helper()
	deadline := time.Now().Add(bound)
	for {
		code, body := f.do("GET", "/v1/instances/"+id, nil)
		require.Equal(f.t, 200, code)
		if body["status"] == want {
			return body
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("instance %s: status %v, want %s\n%v\n%v", id, body["status"], want, body, f.history(id))
		}
		time.Sleep(5 * time.Millisecond)
	}
}
