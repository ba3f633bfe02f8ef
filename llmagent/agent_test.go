package llmagent_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/batonhq/baton/internal/llmtest"
	"github.com/batonhq/baton/llmagent"
	"github.com/batonhq/baton/registry"
)

const key = "sk-test-0123456789-secret"

// setup starts a model server answering with reply and an agent talking
// to it, logging everything into the returned logs.
func setup(t *testing.T, reply func(llmtest.Request) llmtest.Reply, edit ...func(*llmagent.Config)) (*llmagent.Agent, *llmtest.Server, *observer.ObservedLogs) {
	t.Helper()
	srv := llmtest.Start(t, key, reply)
	core, logs := observer.New(zapcore.DebugLevel)
	client := &http.Client{}
	t.Cleanup(client.CloseIdleConnections)
	temp := 0.2
	cfg := llmagent.Config{
		Model: "tiny", BaseURL: srv.BaseURL, Key: key, System: "You route tickets.",
		Temperature: &temp, Price: &registry.Price{Input: 0.40, Output: 1.60},
		Triggers: []string{"refund", "escalate"},
		Result: map[string]any{"type": "object", "properties": map[string]any{"category": map[string]any{"type": "string"}},
			"required": []any{"category"}, "additionalProperties": false},
		Client: client, Logger: zap.New(core),
	}
	for _, e := range edit {
		e(&cfg)
	}
	a, err := llmagent.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return a, srv, logs
}

func task() *registry.Task {
	return &registry.Task{Agent: "triage", InstanceID: "i1", Step: 1, IdempotencyKey: "i1:1",
		Description: "Route the ticket", Context: map[string]any{"ticket": "my parcel is late"}}
}

// leaks fails the test when the key is anywhere in err or the logs.
func leaks(t *testing.T, err error, logs *observer.ObservedLogs) {
	t.Helper()
	if err != nil && strings.Contains(err.Error(), key) {
		t.Errorf("the error holds the key: %v", err)
	}
	for _, e := range logs.All() {
		line := e.Message
		for k, v := range e.ContextMap() {
			line += " " + k + "=" + toString(v)
		}
		if strings.Contains(line, key) {
			t.Errorf("a log line holds the key: %s", line)
		}
	}
}

func toString(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	if e, ok := v.(error); ok {
		return e.Error()
	}
	return ""
}

func TestAgent_Handle_AnswerIsTheOutcome(t *testing.T) {
	a, srv, logs := setup(t, func(llmtest.Request) llmtest.Reply {
		return llmtest.Reply{Content: llmtest.Answer("refund", map[string]any{"category": "shipping"}), PromptTokens: 1000, CompletionTokens: 500, Model: "tiny-2026"}
	})
	out, err := a.Handle(context.Background(), task())
	if err != nil {
		t.Fatal(err)
	}
	if out.Trigger != "refund" || out.Result["category"] != "shipping" {
		t.Errorf("got %s %v, want refund {category: shipping}", out.Trigger, out.Result)
	}
	want := registry.Usage{InputTokens: 1000, OutputTokens: 500, Cost: (1000*0.40 + 500*1.60) / 1e6, Model: "tiny-2026"}
	if out.Usage != want {
		t.Errorf("got usage %+v, want %+v", out.Usage, want)
	}
	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("got %d requests, want 1", len(reqs))
	}
	r := reqs[0]
	if r.Model != "tiny" || r.System != "You route tickets." || r.Temperature == nil || *r.Temperature != 0.2 {
		t.Errorf("got model %q system %q temperature %v", r.Model, r.System, r.Temperature)
	}
	if want := "Route the ticket\n\nContext:\n{\"ticket\":\"my parcel is late\"}"; r.User != want {
		t.Errorf("got prompt %q, want %q", r.User, want)
	}
	props := r.Schema["properties"].(map[string]any)
	enum := props["trigger"].(map[string]any)["enum"].([]any)
	if len(enum) != 2 || enum[0] != "refund" || enum[1] != "escalate" {
		t.Errorf("got trigger enum %v, want [refund escalate]", enum)
	}
	if props["result"].(map[string]any)["required"].([]any)[0] != "category" {
		t.Errorf("got result schema %v, want the configured one", props["result"])
	}
	if r.Schema["additionalProperties"] != false || len(r.Schema["required"].([]any)) != 2 {
		t.Errorf("got schema %v, want trigger and result required and nothing else", r.Schema)
	}
	leaks(t, nil, logs)
}

func TestAgent_Handle_CustomPromptAndNoSystem(t *testing.T) {
	a, srv, _ := setup(t, func(llmtest.Request) llmtest.Reply {
		return llmtest.Reply{Content: llmtest.Answer("escalate", nil)}
	}, func(c *llmagent.Config) {
		c.System, c.Temperature, c.Price = "", nil, nil
		c.Prompt = func(t *registry.Task) (string, error) { return "Ticket: " + t.Context["ticket"].(string), nil }
	})
	out, err := a.Handle(context.Background(), task())
	if err != nil || out.Trigger != "escalate" || out.Result == nil || len(out.Result) != 0 {
		t.Fatalf("got %+v, %v, want escalate with an empty result", out, err)
	}
	if out.Usage.Cost != 0 || out.Usage.Model != "tiny" {
		t.Errorf("got usage %+v, want no cost, model tiny", out.Usage)
	}
	r := srv.Requests()[0]
	if r.User != "Ticket: my parcel is late" || r.System != "" || r.Temperature != nil {
		t.Errorf("got %+v", r)
	}
}

func TestAgent_Handle_PromptFailureIsPermanent(t *testing.T) {
	a, srv, _ := setup(t, func(llmtest.Request) llmtest.Reply { return llmtest.Reply{} }, func(c *llmagent.Config) {
		c.Prompt = func(*registry.Task) (string, error) { return "", errors.New("no such field") }
	})
	_, err := a.Handle(context.Background(), task())
	if err == nil || registry.IsRetryable(err) {
		t.Errorf("got %v, want a permanent failure", err)
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("got %d calls, want none", n)
	}
}

func TestAgent_Handle_Failures(t *testing.T) {
	for _, tt := range []struct {
		name      string
		reply     llmtest.Reply
		kind      string
		retryable bool
		says      string
	}{
		{"prose", llmtest.Reply{Content: "Sure! The ticket is about shipping.", PromptTokens: 10, CompletionTokens: 7}, llmagent.KindInvalidResult, true, "not a JSON object"},
		{"unknown trigger", llmtest.Reply{Content: llmtest.Answer("dance", nil)}, llmagent.KindInvalidResult, true, `"dance"`},
		{"result not an object", llmtest.Reply{Content: `{"trigger": "refund", "result": [1]}`}, llmagent.KindInvalidResult, true, "not an object"},
		{"no choice", llmtest.Reply{Body: `{"id": "x", "object": "chat.completion", "model": "tiny", "choices": []}`}, llmagent.KindTransport, true, "without a choice"},
		{"429", llmtest.Reply{Status: 429, Message: "slow down"}, llmagent.KindRateLimited, true, "429: slow down"},
		{"500", llmtest.Reply{Status: 500, Message: "boom"}, llmagent.KindTransport, true, "500: boom"},
		{"503 without body", llmtest.Reply{Status: 503, Body: "-"}, llmagent.KindTransport, true, "503"},
		{"400", llmtest.Reply{Status: 400, Message: "model tiny does not support json_schema"}, llmagent.KindLLMError, false, "does not support json_schema"},
		{"404", llmtest.Reply{Status: 404, Message: "no such model"}, llmagent.KindLLMError, false, "404"},
		{"key echoed", llmtest.Reply{Status: 403, Message: "key " + key + " may not use tiny"}, llmagent.KindLLMError, false, "[key]"},
		{"garbage 200", llmtest.Reply{Body: "<html>"}, llmagent.KindTransport, true, "no answer"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a, _, logs := setup(t, func(llmtest.Request) llmtest.Reply { return tt.reply })
			out, err := a.Handle(context.Background(), task())
			if err == nil {
				t.Fatalf("got %+v, want an error", out)
			}
			if got := registry.KindOf(err); got != tt.kind {
				t.Errorf("got kind %q (%v), want %q", got, err, tt.kind)
			}
			if got := registry.IsRetryable(err); got != tt.retryable {
				t.Errorf("got retryable %v, want %v", got, tt.retryable)
			}
			if !strings.Contains(err.Error(), tt.says) {
				t.Errorf("got %q, want it to say %q", err, tt.says)
			}
			if tt.reply.PromptTokens > 0 && out.Usage.InputTokens != tt.reply.PromptTokens {
				t.Errorf("got usage %+v, want the failed call's tokens", out.Usage)
			}
			leaks(t, err, logs)
		})
	}
}

func TestAgent_Handle_WrongKeyNeverLeaks(t *testing.T) {
	a, _, logs := setup(t, func(llmtest.Request) llmtest.Reply { return llmtest.Reply{} }, func(c *llmagent.Config) { c.Key = key + "-wrong" })
	_, err := a.Handle(context.Background(), task())
	if registry.KindOf(err) != llmagent.KindLLMError || !strings.Contains(err.Error(), "401") {
		t.Fatalf("got %v, want a 401 llm_error", err)
	}
	if strings.Contains(err.Error(), "-wrong") {
		t.Errorf("the error holds the key: %v", err)
	}
	leaks(t, err, logs)
}

func TestAgent_Handle_HangEndsAtTheDeadline(t *testing.T) {
	a, _, logs := setup(t, func(llmtest.Request) llmtest.Reply { return llmtest.Reply{Hang: true} })
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := a.Handle(ctx, task())
	if registry.KindOf(err) != llmagent.KindTransport || !registry.IsRetryable(err) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("got %v (kind %s), want a retryable transport failure for the deadline", err, registry.KindOf(err))
	}
	leaks(t, err, logs)
}

func TestAgent_Handle_RefusedConnection(t *testing.T) {
	srv := llmtest.Start(t, "", func(llmtest.Request) llmtest.Reply { return llmtest.Reply{} })
	base := srv.BaseURL
	srv.Close()
	a, err := llmagent.New(llmagent.Config{Model: "m", BaseURL: base, Key: key})
	if err != nil {
		t.Fatal(err)
	}
	_, err = a.Handle(context.Background(), task())
	if registry.KindOf(err) != llmagent.KindTransport || !registry.IsRetryable(err) {
		t.Errorf("got %v, want a retryable transport failure", err)
	}
}

func TestNew_RefusesBadConfig(t *testing.T) {
	for _, cfg := range []llmagent.Config{
		{},
		{Model: "m", BaseURL: "ftp://x"},
		{Model: "m", BaseURL: "http://"},
	} {
		_, err := llmagent.New(cfg)
		var ce *llmagent.ConfigError
		if !errors.As(err, &ce) || !errors.Is(err, llmagent.ErrConfig) {
			t.Errorf("%+v: got %v, want a *ConfigError", cfg, err)
		}
	}
}

func TestDefaultPrompt(t *testing.T) {
	got, err := llmagent.DefaultPrompt(&registry.Task{Description: "Do it"})
	if err != nil || got != "Do it\n\nContext:\n{}" {
		t.Errorf("got %q, %v", got, err)
	}
}

func TestAgent_Handle_HugeAnswerIsATransportFailure(t *testing.T) {
	huge := `{"choices": [{"message": {"role": "assistant", "content": "` + strings.Repeat("x", llmagent.MaxBody) + `"}}]}`
	a, _, logs := setup(t, func(llmtest.Request) llmtest.Reply { return llmtest.Reply{Body: huge} })
	_, err := a.Handle(context.Background(), task())
	if registry.KindOf(err) != llmagent.KindTransport || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("got %v, want a transport failure for the size", err)
	}
	leaks(t, err, logs)
}
