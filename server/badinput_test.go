package server_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/natsbus"
	"github.com/batonhq/baton/wire"
)

// Bodies of the instance routes that are wrong in a way the other tests do
// not try: each is refused with its status and a JSON error naming the
// field, and the instance stays as it was.
func TestServer_BadInput_RefusedAndNothingChanges(t *testing.T) {
	f := newFixture(t)
	code, body := f.do("POST", "/v1/workflows/review/instances", map[string]any{"id": "held", "input": map[string]any{"mode": "hold"}})
	require.Equal(t, 201, code, "%v", body)
	before := len(f.history("held"))
	tests := []struct {
		name, path, body string
		status           int
		field            string
	}{
		{"signal data a list", "/v1/instances/held/signals/approved", `{"data": [1]}`, 400, "data"},
		{"signal data a string", "/v1/instances/held/signals/approved", `{"data": "yes"}`, 400, "data"},
		{"signal data with a number JSON cannot keep", "/v1/instances/held/signals/approved", `{"data": {"n": 1e400}}`, 400, ""},
		{"signal not awaited", "/v1/instances/held/signals/approved", `{"data": {"by": "ana"}}`, 409, ""},
		{"cancel with an unknown field", "/v1/instances/held/cancel", `{"force": true}`, 400, "force"},
		{"cancel with malformed JSON", "/v1/instances/held/cancel", `{`, 400, ""},
		{"select with an explanation not a string", "/v1/instances/held/select", `{"agent": "boss", "explanation": 3}`, 400, "explanation"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body := f.do("POST", tt.path, tt.body)
			require.Equal(t, tt.status, code, "%v", body)
			e := errorOf(t, body)
			assert.NotEmpty(t, e["code"])
			assert.NotEmpty(t, e["message"])
			if tt.field != "" {
				assert.Equal(t, tt.field, e["field"])
			}
		})
	}
	got := f.waitStatus("held", "running")
	assert.EqualValues(t, 1, got["step"])
	assert.Len(t, f.history("held"), before, "refused requests write nothing")
}

// Reports over NATS reach the engine of their instance; one that is not a
// report, or names no instance of the server, is answered so and changes
// nothing.
func TestServer_NATS_Reports(t *testing.T) {
	f := newFixture(t)
	nc, err := nats.Connect(f.srv.NATSURL())
	require.NoError(t, err)
	defer nc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	msg, err := nc.RequestWithContext(ctx, natsbus.ReportsSubject, []byte(`{"instance_id":`))
	require.NoError(t, err)
	var ans wire.Answer
	require.NoError(t, json.Unmarshal(msg.Data, &ans))
	assert.False(t, ans.OK)
	assert.Equal(t, wire.CodeInvalid, ans.Code)

	ans, err = natsbus.Report(ctx, nc, wire.Report{InstanceID: "nope", Step: 1, Agent: "worker", Trigger: "done"})
	require.NoError(t, err)
	assert.Equal(t, wire.CodeUnknownInstance, ans.Code)

	code, body := f.do("POST", "/v1/workflows/echo/instances", nil)
	require.Equal(t, 201, code)
	id := body["id"].(string)
	ans, err = natsbus.Report(ctx, nc, wire.Report{InstanceID: id, Step: 1, Agent: "worker", Trigger: "done"})
	require.NoError(t, err)
	assert.True(t, ans.OK, "%+v", ans)
	got := f.waitStatus(id, "completed")
	assert.Equal(t, "DONE", got["outcome"])
	ans, err = natsbus.Report(ctx, nc, wire.Report{InstanceID: id, Step: 1, Agent: "worker", Trigger: "done"})
	require.NoError(t, err)
	assert.Equal(t, wire.CodeStale, ans.Code, "a second report of a finished run")
}
