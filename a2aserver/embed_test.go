package a2aserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/a2aserver"
	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/ops"
	"github.com/batonhq/baton/record"
	"github.com/batonhq/baton/registry"
	"github.com/batonhq/baton/rules"
)

// embedded serves the slow workflow of a Go program's own engine, its
// events on hub when hub is not nil.
func embedded(t testing.TB, hub *ops.Hub, opts ...a2aserver.Option) *httptest.Server {
	t.Helper()
	return embeddedFlow(t, "slow.yaml", map[string]registry.Handler{"sloth": registry.HandlerFunc(func(ctx context.Context, _ *registry.Task) (registry.Outcome, error) {
		<-ctx.Done()
		return registry.Outcome{}, ctx.Err()
	})}, hub, opts...)
}

// embeddedFlow serves one of flows on an engine of its own, on a MemStore.
func embeddedFlow(t testing.TB, file string, handlers map[string]registry.Handler, hub *ops.Hub, opts ...a2aserver.Option) *httptest.Server {
	t.Helper()
	w, err := rules.Parse(file, []byte(flows[file]))
	require.NoError(t, err)
	reg, err := engine.NewRegistry(w, handlers)
	require.NoError(t, err)
	store := record.NewMemStore()
	engOpts := []engine.Option{engine.WithStore(store)}
	var opsOpts []ops.Option
	if hub != nil {
		engOpts = append(engOpts, engine.WithObserver(func(ev engine.Event) { hub.Publish(ops.EventOf(ev)) }))
		opsOpts = append(opsOpts, ops.WithEvents(hub))
	}
	eng, err := engine.New(w, reg, engOpts...)
	require.NoError(t, err)
	hs := httptest.NewServer(a2aserver.New(ops.New(store, ops.NewEngines(eng), opsOpts...), opts...))
	t.Cleanup(func() {
		hs.Close()
		if hub != nil {
			hub.Close()
		}
		_ = eng.Close()
	})
	return hs
}

func sendSlow(t *testing.T, hs *httptest.Server, messageID string) map[string]any {
	t.Helper()
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "SendMessage",
		"params": map[string]any{"message": message(false, messageID, "", map[string]any{}, "")}})
	require.NoError(t, err)
	resp, err := http.Post(hs.URL+"/a2a/slow", "application/json", bytes.NewReader(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	var a rpcAnswer
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&a))
	require.Nil(t, a.Error, "%+v", a.Error)
	return a.Result["task"].(map[string]any)
}

// A task that neither ends nor asks for input within the wait is answered
// as it is: working.
func TestHandler_Send_AnswersAWorkingTaskAfterTheMostWait(t *testing.T) {
	hs := embedded(t, ops.NewHub(64), a2aserver.WithMaxWait(5*time.Millisecond))
	task := sendSlow(t, hs, "m-1")
	assert.Equal(t, "TASK_STATE_WORKING", stateOf(task))
}

// An operations layer that keeps no events cannot be followed: answers do
// not wait.
func TestHandler_Send_WithoutEventsAnswersAtOnce(t *testing.T) {
	hs := embedded(t, nil)
	task := sendSlow(t, hs, "m-1")
	assert.Equal(t, "TASK_STATE_WORKING", stateOf(task))
}

// rpc posts one request to hs's slow agent and reads the answer.
func rpc(t *testing.T, hs *httptest.Server, method string, params any) rpcAnswer {
	t.Helper()
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	require.NoError(t, err)
	resp, err := http.Post(hs.URL+"/a2a/slow", "application/json", bytes.NewReader(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	var a rpcAnswer
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&a))
	return a
}

// A streaming send beyond the cap on streams is refused before it starts
// anything: the client may send it again later.
func TestHandler_Stream_BeyondTheCapStartsNothing(t *testing.T) {
	hs := embedded(t, ops.NewHub(64), a2aserver.WithMaxStreams(1), a2aserver.WithMaxWait(5*time.Millisecond))
	task := sendSlow(t, hs, "m-1") // works until the test ends
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "SubscribeToTask", "params": map[string]any{"id": task["id"]}})
	require.NoError(t, err)
	resp, err := http.Post(hs.URL+"/a2a/slow", "application/json", bytes.NewReader(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type")) // the one stream, open

	a := rpc(t, hs, "SendStreamingMessage", map[string]any{"message": message(false, "m-2", "", map[string]any{}, "")})
	require.NotNil(t, a.Error)
	assert.Equal(t, a2aserver.CodeInternal, a.Error.Code)
	assert.Equal(t, true, a.Error.Data["retry"])
	a = rpc(t, hs, "GetTask", map[string]any{"id": a2aserver.StartID("slow", "m-2")})
	require.NotNil(t, a.Error, "the refused stream started task %v", a.Result)
	assert.Equal(t, a2aserver.CodeTaskNotFound, a.Error.Code)
}
