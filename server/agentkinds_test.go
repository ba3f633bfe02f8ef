package server_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/batonhq/baton/internal/llmtest"
	"github.com/batonhq/baton/registry"
	"github.com/batonhq/baton/server"
)

const modelKey = "sk-server-test-model-key-0042"

// A workflow of an LLM agent runs on the server end to end against an
// OpenAI-compatible server: the answer is the outcome, a prose answer is
// retried (invalid_result), usage and cost reach the instance, and a
// refused call fails the run with kind llm_error. The key, which the model
// server quotes back in its refusal, is in no answer, page or log line.
func TestServer_LLMAgent(t *testing.T) {
	var calls atomic.Int64
	model := llmtest.Start(t, modelKey, func(r llmtest.Request) llmtest.Reply {
		n := calls.Add(1)
		switch {
		case strings.Contains(r.User, "refuse"):
			return llmtest.Reply{Status: 403, Message: "the key " + modelKey + " may not use tiny"}
		case n == 1:
			return llmtest.Reply{Content: "I think billing should take it.", PromptTokens: 10, CompletionTokens: 5}
		default:
			return llmtest.Reply{Content: llmtest.Answer("routed", map[string]any{"team": "billing"}), PromptTokens: 100, CompletionTokens: 20}
		}
	})
	t.Setenv("BATON_TEST_MODEL_URL", model.BaseURL)
	t.Setenv("BATON_TEST_MODEL_KEY", modelKey)
	core, logs := observer.New(zapcore.DebugLevel)
	f := newFixture(t, func(c *server.Config) {
		c.WorkflowsDir = "testdata/llm"
		c.Logger = zap.New(core)
	})

	code, body := f.do("POST", "/v1/workflows/triage/instances", map[string]any{"input": map[string]any{"text": "I was charged twice"}})
	require.Equal(t, 201, code, "%v", body)
	routed := body["id"].(string)
	got := f.waitStatus(routed, "completed")
	assert.Equal(t, "ROUTED", got["outcome"])
	assert.Equal(t, map[string]any{"team": "billing"}, got["context"])
	usage := got["usage"].(map[string]any)
	assert.Equal(t, 110.0, usage["input_tokens"], "the prose answer's tokens count too")
	assert.Equal(t, 25.0, usage["output_tokens"])
	assert.InDelta(t, (110*2+25*8)/1e6, usage["cost"], 1e-12)
	var kinds []string
	for _, e := range f.history(routed) {
		if e["kind"] == "agent_run" {
			k, _ := e["error_kind"].(string)
			kinds = append(kinds, k)
		}
	}
	assert.Equal(t, []string{"invalid_result", ""}, kinds, "the prose answer failed its run, the retry succeeded")

	code, body = f.do("POST", "/v1/workflows/triage/instances", map[string]any{"input": map[string]any{"text": "refuse me"}})
	require.Equal(t, 201, code, "%v", body)
	refused := body["id"].(string)
	got = f.waitStatus(refused, "failed")
	runs := 0
	for _, e := range f.history(refused) {
		if e["kind"] == "agent_run" {
			runs++
			assert.Equal(t, "llm_error", e["error_kind"])
			assert.Contains(t, e["error"], "403")
		}
	}
	assert.Equal(t, 1, runs, "llm_error is not retried")

	// The key is nowhere: not in the answers, the histories, the pages or
	// the logs.
	var seen strings.Builder
	for _, id := range []string{routed, refused} {
		for _, path := range []string{"/v1/instances/" + id, "/v1/instances/" + id + "/history", "/ui/instances/" + id} {
			seen.WriteString(get(t, f.http.URL+path))
		}
	}
	seen.WriteString(get(t, f.http.URL+"/v1/instances"))
	for _, e := range logs.All() {
		data, _ := json.Marshal(e.ContextMap())
		seen.WriteString(e.Message + string(data) + "\n")
	}
	assert.Contains(t, seen.String(), "403", "the refusal was seen")
	assert.NotContains(t, seen.String(), modelKey)
}

// get is the body of a GET of url.
func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode, url)
	data, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(data)
}

// A workflow whose LLM agent names a variable that is not set does not
// load, and the error names the variable; an LLM agent given a Go handler
// too is refused.
func TestServer_LLMAgentConfiguration(t *testing.T) {
	t.Setenv("BATON_TEST_MODEL_URL", "http://127.0.0.1:1/v1")
	_, err := server.New(context.Background(), server.Config{WorkflowsDir: "testdata/llm", DataDir: t.TempDir(), NATSListen: anyPort})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "key_env BATON_TEST_MODEL_KEY is not set")

	t.Setenv("BATON_TEST_MODEL_KEY", modelKey)
	_, err = server.New(context.Background(), server.Config{WorkflowsDir: "testdata/llm", DataDir: t.TempDir(), NATSListen: anyPort,
		Handlers: map[string]registry.Handler{"triage": registry.HandlerFunc(func(context.Context, *registry.Task) (registry.Outcome, error) {
			return registry.Outcome{}, nil
		})}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "agent triage has an llm key and a Go handler")
	assert.NotContains(t, err.Error(), modelKey)
}
