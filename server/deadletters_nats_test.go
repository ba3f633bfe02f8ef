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

// Work an agent on a plain NATS client terminates is a dead letter that
// keeps its instance, step and idempotency key: ?instance= finds it,
// though JetStream's advisory names only the work's stream and sequence.
func TestServer_NATS_DeadLetterOfTerminatedWork(t *testing.T) {
	f := newFixture(t)
	code, body := f.do("POST", "/v1/workflows/echo/instances", map[string]any{"input": map[string]any{"n": 1}})
	require.Equal(t, 201, code, "%v", body)
	id := body["id"].(string)

	nc, err := nats.Connect(f.srv.NATSURL())
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := js.Consumer(ctx, natsbus.WorkStream("worker"), "normal")
	require.NoError(t, err)
	b, err := c.Fetch(1, jetstream.FetchMaxWait(10*time.Second))
	require.NoError(t, err)
	took := 0
	for m := range b.Messages() {
		took++
		require.NoError(t, m.TermWithReason("cannot do this"))
	}
	require.Equal(t, 1, took, "the instance's work")

	var found []any
	deadline := time.Now().Add(10 * time.Second)
	for len(found) == 0 && time.Now().Before(deadline) {
		code, page := f.do("GET", "/v1/dead-letters?instance="+id, nil)
		require.Equal(t, 200, code)
		found = page["dead_letters"].([]any)
		time.Sleep(5 * time.Millisecond)
	}
	require.Len(t, found, 1, "the dead letter of the instance's work")
	d := found[0].(map[string]any)
	assert.Equal(t, "rejected", d["reason"])
	assert.Equal(t, "cannot do this", d["last_error"])
	assert.Equal(t, id, d["instance"])
	assert.EqualValues(t, 1, d["step"])
	assert.Equal(t, id+":1", d["key"])
}
