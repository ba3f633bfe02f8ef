package a2aserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/ops"
	"github.com/batonhq/baton/registry"
)

// BenchmarkHandler_SendMessage: the round trip of a SendMessage that
// starts an instance of a one-step workflow and waits for it to complete,
// over loopback HTTP, on an in-memory store.
func BenchmarkHandler_SendMessage(b *testing.B) {
	hs := embeddedFlow(b, "quick.yaml", map[string]registry.Handler{"fast": registry.HandlerFunc(func(context.Context, *registry.Task) (registry.Outcome, error) {
		return registry.Outcome{Trigger: "done", Result: map[string]any{"by": "fast"}}, nil
	})}, ops.NewHub(4096))
	client := hs.Client()
	b.ReportAllocs()
	for k := 0; b.Loop(); k++ {
		body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": k, "method": "SendMessage",
			"params": map[string]any{"message": message(false, "m-"+strconv.Itoa(k), "", map[string]any{"amount": k}, "")}})
		resp, err := client.Post(hs.URL+"/a2a/quick", "application/json", bytes.NewReader(body))
		require.NoError(b, err)
		var a rpcAnswer
		require.NoError(b, json.NewDecoder(resp.Body).Decode(&a))
		resp.Body.Close()
		if a.Error != nil || stateOf(a.Result["task"].(map[string]any)) != "TASK_STATE_COMPLETED" {
			b.Fatalf("answer %+v %v", a.Error, a.Result)
		}
	}
}
