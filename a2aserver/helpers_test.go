package a2aserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/registry"
	"github.com/batonhq/baton/server"
)

// The workflows the tests serve.
var flows = map[string]string{
	// quick finishes at once; its input declares an amount.
	"quick.yaml": `workflow: quick
version: 3
description: Finishes at once
initial: WORKING
input:
  amount: number
  note: string?
agents:
  fast: {}
states:
  WORKING: {agent: fast}
  DONE: {terminal: true}
rules:
  - {id: done, from: fast, trigger: done, next: DONE, context: {by: result.by}}
`,
	// approve waits for one of two signals.
	"approve.yaml": `workflow: approve
initial: APPROVAL
states:
  APPROVAL: {wait: {signals: [approved, rejected]}, timeout: 48h}
  DONE: {terminal: true}
  NO: {terminal: true}
rules:
  - {id: approved, from: APPROVAL, trigger: approved, next: DONE, context: {by: result.by}}
  - {id: rejected, from: APPROVAL, trigger: rejected, next: NO}
  - {id: expired, from: APPROVAL, trigger: timeout, next: NO}
`,
	// confirm waits for one signal.
	"confirm.yaml": `workflow: confirm
initial: ASK
states:
  ASK: {wait: {signals: [answered]}, timeout: 48h}
  DONE: {terminal: true}
  LATE: {terminal: true}
rules:
  - {id: answered, from: ASK, trigger: answered, next: DONE, context: {answer: result}}
  - {id: expired, from: ASK, trigger: timeout, next: LATE}
`,
	// slow works until it is cancelled.
	"slow.yaml": `workflow: slow
initial: WORKING
agents:
  sloth: {}
states:
  WORKING: {agent: sloth}
  DONE: {terminal: true}
rules:
  - {id: done, from: sloth, trigger: done, next: DONE}
`,
	// broken fails.
	"broken.yaml": `workflow: broken
initial: WORKING
agents:
  breaker: {}
states:
  WORKING: {agent: breaker}
  DONE: {terminal: true}
rules:
  - {id: done, from: breaker, trigger: done, next: DONE}
`,
	// gated works until the test opens its gate, then waits for a signal.
	"gated.yaml": `workflow: gated
initial: WORKING
agents:
  gate: {}
states:
  WORKING: {agent: gate}
  ASK: {wait: {signals: [go]}, timeout: 48h}
  DONE: {terminal: true}
rules:
  - {id: opened, from: gate, trigger: done, next: ASK}
  - {id: went, from: ASK, trigger: go, next: DONE}
  - {id: expired, from: ASK, trigger: timeout, next: DONE}
`,
	// finish works until the test opens its finish gate, then completes.
	"finish.yaml": `workflow: finish
initial: WORKING
agents:
  finisher: {}
states:
  WORKING: {agent: finisher}
  DONE: {terminal: true}
rules:
  - {id: done, from: finisher, trigger: done, next: DONE}
`,
}

// fixture is a server serving flows, its API on a loopback httptest
// server.
type fixture struct {
	t    testing.TB
	srv  *server.Server
	http *httptest.Server
	gate chan struct{}
	// finish is the gate of the finish workflow.
	finish chan struct{}
}

// newFixture builds a server; token, when set, is its one token.
func newFixture(t testing.TB, token string) *fixture {
	t.Helper()
	dir := t.TempDir()
	for name, src := range flows {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(src), 0o600))
	}
	f := &fixture{t: t, gate: make(chan struct{}), finish: make(chan struct{})}
	cfg := server.Config{WorkflowsDir: dir, DataDir: t.TempDir(), NATS: server.NoNATS, Handlers: map[string]registry.Handler{
		"fast": registry.HandlerFunc(func(context.Context, *registry.Task) (registry.Outcome, error) {
			return registry.Outcome{Trigger: "done", Result: map[string]any{"by": "fast"}, Usage: registry.Usage{InputTokens: 3, OutputTokens: 2, Cost: 0.25}}, nil
		}),
		"sloth": registry.HandlerFunc(func(ctx context.Context, _ *registry.Task) (registry.Outcome, error) {
			<-ctx.Done()
			return registry.Outcome{}, ctx.Err()
		}),
		"breaker": registry.HandlerFunc(func(context.Context, *registry.Task) (registry.Outcome, error) {
			return registry.Outcome{}, registry.Permanent(errors.New("the ledger is closed"))
		}),
		"finisher": registry.HandlerFunc(func(ctx context.Context, _ *registry.Task) (registry.Outcome, error) {
			select {
			case <-f.finish:
				return registry.Outcome{Trigger: "done", Result: map[string]any{"by": "finisher"}}, nil
			case <-ctx.Done():
				return registry.Outcome{}, ctx.Err()
			}
		}),
		"gate": registry.HandlerFunc(func(ctx context.Context, _ *registry.Task) (registry.Outcome, error) {
			select {
			case <-f.gate:
				return registry.Outcome{Trigger: "done"}, nil
			case <-ctx.Done():
				return registry.Outcome{}, ctx.Err()
			}
		}),
	}}
	if token != "" {
		file := filepath.Join(t.TempDir(), "tokens")
		require.NoError(t, os.WriteFile(file, []byte(token+"\n"), 0o600))
		cfg.TokenFile = file
	}
	s, err := server.New(context.Background(), cfg)
	require.NoError(t, err)
	f.srv = s
	f.http = httptest.NewServer(s.Handler())
	t.Cleanup(func() {
		f.http.Close()
		s.Close()
	})
	return f
}

// rpcAnswer is a JSON-RPC answer.
type rpcAnswer struct {
	ID     json.RawMessage `json:"id"`
	Result map[string]any  `json:"result"`
	Error  *struct {
		Code    int            `json:"code"`
		Message string         `json:"message"`
		Data    map[string]any `json:"data"`
	} `json:"error"`
}

// post sends body to path and reads the JSON-RPC answer.
func (f *fixture) post(path string, body []byte, header ...string) (int, rpcAnswer) {
	f.t.Helper()
	req, err := http.NewRequest("POST", f.http.URL+path, bytes.NewReader(body))
	require.NoError(f.t, err)
	req.Header.Set("Content-Type", "application/json")
	for k := 0; k+1 < len(header); k += 2 {
		req.Header.Set(header[k], header[k+1])
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(f.t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(f.t, err)
	var a rpcAnswer
	if resp.StatusCode == http.StatusUnauthorized {
		// The server's token check answers as /v1 does, before any
		// JSON-RPC.
		require.Contains(f.t, string(data), `"unauthorized"`)
		return resp.StatusCode, a
	}
	require.NoError(f.t, json.Unmarshal(data, &a), "%s", data)
	return resp.StatusCode, a
}

// call calls method on workflow's agent.
func (f *fixture) call(workflow, method string, params any) rpcAnswer {
	f.t.Helper()
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 7, "method": method, "params": params})
	require.NoError(f.t, err)
	code, a := f.post("/a2a/"+workflow, body)
	require.Equal(f.t, 200, code)
	require.JSONEq(f.t, "7", string(a.ID))
	return a
}

// message is a user message in the dialect (1.0 unless v03), with a data
// part when data is not nil and a text part when text is not "".
func message(v03 bool, messageID, taskID string, data map[string]any, text string) map[string]any {
	var parts []map[string]any
	if text != "" {
		p := map[string]any{"text": text}
		if v03 {
			p["kind"] = "text"
		}
		parts = append(parts, p)
	}
	if data != nil {
		p := map[string]any{"data": data}
		if v03 {
			p["kind"] = "data"
		}
		parts = append(parts, p)
	}
	m := map[string]any{"messageId": messageID, "role": "ROLE_USER", "parts": parts}
	if v03 {
		m["role"], m["kind"] = "user", "message"
	}
	if taskID != "" {
		m["taskId"] = taskID
	}
	return m
}
