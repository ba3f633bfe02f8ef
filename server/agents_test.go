package server_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/natsbus"
)

// agentsByID is GET /v1/agents, by agent id.
func (f *fixture) agentsByID() map[string]map[string]any {
	f.t.Helper()
	code, body := f.do("GET", "/v1/agents", nil)
	require.Equal(f.t, 200, code, body)
	out := map[string]map[string]any{}
	for _, a := range body["agents"].([]any) {
		a := a.(map[string]any)
		out[a["id"].(string)] = a
	}
	return out
}

func TestAgents_NATSAgentWithAndWithoutAConsumer(t *testing.T) {
	f := newFixture(t)
	worker := f.agentsByID()["worker"]
	require.NotNil(t, worker)
	assert.Equal(t, "nats", worker["kind"])
	assert.Equal(t, []any{"echo"}, worker["workflows"])
	assert.Equal(t, false, worker["live"], "nobody ever pulled")
	assert.Nil(t, worker["seen"])
	assert.Nil(t, worker["oldest_queued_seconds"])

	code, body := f.do("POST", "/v1/workflows/echo/instances", map[string]any{"id": "e-1"})
	require.Equal(t, 201, code, body)
	deadline := time.Now().Add(10 * time.Second)
	for worker["queued"] != 1.0 {
		require.True(t, time.Now().Before(deadline), "the work never queued: %v", worker)
		time.Sleep(5 * time.Millisecond)
		worker = f.agentsByID()["worker"]
	}
	assert.Equal(t, 0.0, worker["in_flight"])
	assert.NotNil(t, worker["oldest_queued_seconds"])
	assert.Equal(t, false, worker["live"], "work waits, and no consumer takes it")

	// The instance says what it waits on: the worker's run, over NATS.
	code, in := f.do("GET", "/v1/instances/e-1", nil)
	require.Equal(t, 200, code)
	pending := in["pending"].([]any)
	require.Len(t, pending, 1)
	run := pending[0].(map[string]any)
	assert.Equal(t, "run", run["kind"])
	assert.Equal(t, "worker", run["agent"])
	assert.Equal(t, "nats", run["transport"])
	assert.Nil(t, run["deadline"])

	// A consumer takes the work (and does not answer yet).
	nc, err := nats.Connect(f.srv.NATSURL())
	require.NoError(t, err)
	defer nc.Close()
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	stream, err := js.Stream(ctx, natsbus.WorkStream("worker"))
	require.NoError(t, err)
	cons, err := stream.Consumer(ctx, "normal")
	require.NoError(t, err)
	batch, err := cons.Fetch(1, jetstream.FetchMaxWait(5*time.Second))
	require.NoError(t, err)
	var got int
	for range batch.Messages() {
		got++
	}
	require.Equal(t, 1, got)

	worker = f.agentsByID()["worker"]
	assert.Equal(t, 0.0, worker["queued"])
	assert.Equal(t, 1.0, worker["in_flight"])
	assert.Equal(t, true, worker["live"], "a consumer took work just now")
	assert.NotNil(t, worker["seen"])
}

func TestAgents_HTTPAgentsTellTheirLastCall(t *testing.T) {
	f := newFixture(t)
	code, body := f.do("POST", "/v1/workflows/review/instances", map[string]any{"id": "r-1", "input": map[string]any{"mode": "hold"}})
	require.Equal(t, 201, code, body)
	deadline := time.Now().Add(10 * time.Second)
	writer := f.agentsByID()["writer"]
	for writer["last_call"] == nil {
		require.True(t, time.Now().Before(deadline), "no call recorded: %v", writer)
		time.Sleep(5 * time.Millisecond)
		writer = f.agentsByID()["writer"]
	}
	assert.Equal(t, "http", writer["kind"])
	assert.Equal(t, []any{"review"}, writer["workflows"])
	assert.Equal(t, "sent", writer["last_status"], "the writer answered 202 and never reports")
	assert.Nil(t, writer["live"], "liveness is for NATS agents")
	boss := f.agentsByID()["boss"]
	assert.Nil(t, boss["last_call"], "never called")
}
