package a2aagent_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/batonhq/baton/a2aagent"
)

// BenchmarkA2AAgent is the client's overhead per step against a local
// agent that answers at once: with a Message, and with a Task that is
// already completed (the card is read once, then cached).
func BenchmarkA2AAgent(b *testing.B) {
	for _, bc := range []struct {
		name   string
		answer any
	}{
		{"message", map[string]any{"message": map[string]any{"messageId": "m", "role": "ROLE_AGENT", "parts": []any{
			map[string]any{"data": map[string]any{"answer": 42, "source": "bench"}},
		}}}},
		{"task", map[string]any{"task": map[string]any{"id": "t1", "contextId": "i", "status": map[string]any{"state": "TASK_STATE_COMPLETED"},
			"artifacts": []any{map[string]any{"artifactId": "a", "parts": []any{
				map[string]any{"text": "the answer"}, map[string]any{"data": map[string]any{"answer": 42}},
			}}},
			"metadata": map[string]any{"usage": map[string]any{"input_tokens": 10, "output_tokens": 5, "cost": 0.01}},
		}}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			f := newFake(b)
			body, _ := json.Marshal(bc.answer)
			f.rpc = func(w http.ResponseWriter, _ string, id, _ json.RawMessage) {
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":` + string(id) + `,"result":` + string(body) + `}`))
			}
			a, err := a2aagent.New(a2aagent.Config{URL: f.srv.URL})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = a.Close() })
			task := work("i-bench", 1, "bench")
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if _, err := a.Handle(ctx, task); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
