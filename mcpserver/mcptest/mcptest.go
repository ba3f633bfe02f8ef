// Package mcptest runs the official JavaScript MCP client against Baton's
// workflows served as MCP tools (at /mcp, or by wfrun mcp over stdio),
// and judges its answers: the tests of package mcpserver and of wfrun
// share it. It is for tests only.
package mcptest

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/jspeers"
	"github.com/batonhq/baton/registry"
)

// ApprovalFlow is the workflow the scenario drives: a check (the Checker
// handler, agent "checker"), then a wait for approve or reject.
const ApprovalFlow = `workflow: approval
description: An expense, checked, then approved by a person.
initial: CHECKING
input:
  amount: number
  note: 'string?'
agents:
  checker: {}
states:
  CHECKING: {agent: checker}
  APPROVAL: {wait: {signals: [approve, reject]}}
  DONE: {terminal: true}
  REJECTED: {terminal: true}
rules:
  - {id: checked, from: checker, trigger: checked, next: APPROVAL}
  - {id: approve, from: APPROVAL, trigger: approve, next: DONE}
  - {id: reject, from: APPROVAL, trigger: reject, next: REJECTED}
`

// Checker is the handler of ApprovalFlow's checker: it answers at once.
var Checker = registry.HandlerFunc(func(context.Context, *registry.Task) (registry.Outcome, error) {
	return registry.Outcome{Trigger: "checked"}, nil
})

// Step is one answer the client printed.
type Step map[string]any

// Steps are the client's answers by step name; the resources read are
// under "read <uri>".
type Steps map[string]Step

// Run runs the client with args (--url URL [--token T] [--changes], or
// --stdio COMMAND ARGS...) and env added to the test's environment. When
// the client awaits a change of the workflows, onChange makes one. Run
// returns once the client has exited (within two minutes).
func Run(t testing.TB, env []string, onChange func(), args ...string) Steps {
	t.Helper()
	node := jspeers.Node(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, append([]string{jspeers.Script("mcp_client_scenario.mjs")}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	var stderr strings.Builder
	cmd.Stderr = &lockedWriter{w: &stderr}
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	steps := Steps{}
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var s Step
		if json.Unmarshal(sc.Bytes(), &s) != nil {
			t.Logf("client: %s", sc.Text())
			continue
		}
		name, _ := s["step"].(string)
		if name == "read" {
			name += " " + s["uri"].(string)
		}
		steps[name] = s
		if name == "awaiting_change" && onChange != nil {
			onChange()
		}
	}
	err = cmd.Wait()
	if f, ok := steps["failed"]; ok {
		t.Fatalf("the client failed: %v\nstderr:\n%s", f["error"], stderr.String())
	}
	require.NoError(t, err, "the client: %s", stderr.String())
	require.Contains(t, steps, "done", "stderr:\n%s", stderr.String())
	return steps
}

type lockedWriter struct {
	mu sync.Mutex
	w  *strings.Builder
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// Check judges the answers of the scenario against ApprovalFlow.
func Check(t testing.TB, steps Steps) {
	t.Helper()
	tools := map[string]map[string]any{}
	for _, tl := range steps["tools"]["tools"].([]any) {
		m := tl.(map[string]any)
		tools[m["name"].(string)] = m
		assert.Equal(t, true, m["hasOutputSchema"], "tool %s declares no output schema", m["name"])
	}
	for _, name := range []string{"start_approval", "get_instance", "list_instances", "signal_instance", "cancel_instance", "list_workflows"} {
		require.Contains(t, tools, name)
	}
	start := tools["start_approval"]
	assert.Equal(t, "An expense, checked, then approved by a person.", start["description"])
	schema := start["inputSchema"].(map[string]any)
	assert.Equal(t, []any{"amount"}, schema["required"])
	props := schema["properties"].(map[string]any)
	for _, p := range []string{"amount", "note", "id", "wait"} {
		assert.Contains(t, props, p)
	}

	ok := func(step string) map[string]any {
		t.Helper()
		s := steps[step]
		require.NotContains(t, s, "protocolError", step)
		require.Equal(t, false, s["isError"], "%s: %v", step, s["text"])
		var text map[string]any
		require.NoError(t, json.Unmarshal([]byte(s["text"].(string)), &text))
		assert.Equal(t, text, s["structured"], "%s: the text and the structured content must be the same JSON", step)
		return s["structured"].(map[string]any)
	}
	refused := func(step, code, field string) {
		t.Helper()
		s := steps[step]
		require.Equal(t, true, s["isError"], "%s: %v", step, s)
		var text struct {
			Error map[string]any `json:"error"`
		}
		require.NoError(t, json.Unmarshal([]byte(s["text"].(string)), &text), step)
		assert.Equal(t, code, text.Error["code"], "%s: %v", step, text.Error)
		if field != "" {
			assert.Equal(t, field, text.Error["field"], "%s: %v", step, text.Error)
		}
	}

	in := ok("start_wait")
	assert.Equal(t, "js-1", in["id"])
	assert.Equal(t, "waiting", in["status"])
	assert.Equal(t, "APPROVAL", in["state"])
	assert.Equal(t, "js-1", ok("start_again")["id"])
	assert.Equal(t, "waiting", ok("get")["status"])
	list := ok("list")
	assert.Len(t, list["instances"], 1)
	assert.Nil(t, list["next"])
	assert.Equal(t, "js-1", ok("signal")["id"])
	assert.Equal(t, "completed", ok("after_signal")["status"])
	ok("start2")
	assert.Equal(t, "cancelled", ok("cancel")["status"])
	wfs := ok("list_workflows")["workflows"].([]any)
	require.Len(t, wfs, 1)
	assert.Equal(t, "approval", wfs[0].(map[string]any)["name"])

	refused("err_missing", "invalid_field", "amount")
	refused("err_wait", "invalid_field", "wait")
	refused("err_unknown", "unknown_instance", "id")
	refused("err_finished", "finished", "")
	refused("err_not_waiting", "not_waiting", "")
	assert.Contains(t, steps["err_no_tool"], "protocolError")

	res := steps["resources"]
	assert.Equal(t, []any{"baton://workflows/approval"}, res["resources"])
	assert.ElementsMatch(t, []any{"baton://instances/{id}", "baton://instances/{id}/history", "baton://workflows/{name}"}, res["templates"])
	wf := steps["read baton://workflows/approval"]
	assert.Equal(t, ApprovalFlow, wf["text"])
	assert.Equal(t, "application/yaml", wf["mimeType"])
	var got map[string]any
	require.NoError(t, json.Unmarshal([]byte(steps["read baton://instances/js-1"]["text"].(string)), &got))
	assert.Equal(t, "completed", got["status"])
	var hist []any
	require.NoError(t, json.Unmarshal([]byte(steps["read baton://instances/js-1/history"]["text"].(string)), &hist))
	assert.NotEmpty(t, hist)
	assert.Contains(t, steps["read_missing"], "error")
}
