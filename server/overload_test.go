package server_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/registry"
	"github.com/batonhq/baton/server"
)

// busyFlow's first agent takes one run at a time and queues one more.
const busyFlow = `workflow: busy
initial: WORKING
agents:
  busy: {queue: 1, concurrency: 1}
states:
  WORKING: {agent: busy}
  DONE: {terminal: true}
rules:
  - {id: done, from: busy, trigger: done, next: DONE}
`

// A start whose first agent's mailbox stays full for the start's wait is
// refused with 503 and Retry-After, and nothing is started; once there is
// room again, starts are accepted.
func TestServer_Start_OverloadedIs503(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "busy.yaml"), []byte(busyFlow), 0o600))
	release := make(chan struct{})
	s, err := server.New(context.Background(), server.Config{
		WorkflowsDir: dir, DataDir: t.TempDir(), NATS: server.NoNATS, StartWait: 20 * time.Millisecond,
		Handlers: map[string]registry.Handler{
			"busy": registry.HandlerFunc(func(ctx context.Context, _ *registry.Task) (registry.Outcome, error) {
				select {
				case <-release:
					return registry.Outcome{Trigger: "done"}, nil
				case <-ctx.Done():
					return registry.Outcome{}, ctx.Err()
				}
			}),
		},
	})
	require.NoError(t, err)
	defer s.Close()
	f := &fixture{t: t, srv: s, http: newHTTP(t, s)}
	defer close(release)

	// The first run takes the agent, the second waits in its mailbox.
	code, first := f.do("POST", "/v1/workflows/busy/instances", nil)
	require.Equal(t, 201, code)
	var queued string
	for deadline := time.Now().Add(20 * time.Second); queued == ""; {
		code, body := f.do("POST", "/v1/workflows/busy/instances", nil)
		switch code {
		case 201:
			queued = body["id"].(string)
		case 503: // the first run was not taken from the mailbox yet
			require.True(t, time.Now().Before(deadline), "the mailbox never had room")
			time.Sleep(2 * time.Millisecond)
		default:
			t.Fatalf("start: got %d %v", code, body)
		}
	}
	before := f.count()
	req := map[string]any{"id": "refused"}
	code, body := f.do("POST", "/v1/workflows/busy/instances", req)
	require.Equal(t, 503, code, "%v", body)
	e := errorOf(t, body)
	assert.Equal(t, "unavailable", e["code"])
	assert.Contains(t, e["message"], "busy")
	assert.Equal(t, before, f.count(), "nothing was started")
	code, _ = f.do("GET", "/v1/instances/refused", nil)
	assert.Equal(t, 404, code)

	release <- struct{}{} // the first run ends, the queued one is taken
	f.waitStatus(first["id"].(string), "completed")
	code, body = f.do("POST", "/v1/workflows/busy/instances", req)
	assert.Equal(t, 201, code, "the same start again, once there is room: %v", body)
	release <- struct{}{}
	f.waitStatus(queued, "completed")
}
