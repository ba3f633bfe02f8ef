package llmagent_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/batonhq/baton/internal/llmtest"
	"github.com/batonhq/baton/llmagent"
	"github.com/batonhq/baton/registry"
)

// BenchmarkLLMAgent measures the overhead of one step of an LLM agent
// against a local server that answers at once: building the request,
// the HTTP round trip on loopback and decoding the answer.
func BenchmarkLLMAgent(b *testing.B) {
	answer := llmtest.Answer("refund", map[string]any{"category": "shipping"})
	srv := llmtest.Start(b, key, func(llmtest.Request) llmtest.Reply {
		return llmtest.Reply{Content: answer, PromptTokens: 100, CompletionTokens: 20}
	})
	client := &http.Client{}
	b.Cleanup(client.CloseIdleConnections)
	a, err := llmagent.New(llmagent.Config{Model: "tiny", BaseURL: srv.BaseURL, Key: key, Triggers: []string{"refund", "escalate"},
		Price: &registry.Price{Input: 1, Output: 2}, Client: client})
	if err != nil {
		b.Fatal(err)
	}
	t := task()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := a.Handle(ctx, t); err != nil {
			b.Fatal(err)
		}
	}
}
