package a2aserver_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sseStream reads the JSON-RPC answers of a stream.
type sseStream struct {
	t    *testing.T
	resp *http.Response
	sc   *bufio.Scanner
}

// openStream posts a streaming request.
func (f *fixture) openStream(t *testing.T, workflow, method string, params any) *sseStream {
	t.Helper()
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": "s-1", "method": method, "params": params})
	require.NoError(t, err)
	req, err := http.NewRequest("POST", f.http.URL+"/a2a/"+workflow, bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { resp.Body.Close() })
	require.Equal(t, 200, resp.StatusCode)
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	return &sseStream{t: t, resp: resp, sc: bufio.NewScanner(resp.Body)}
}

// next is the next event's result; ok is false at the stream's end.
func (s *sseStream) next() (map[string]any, bool) {
	s.t.Helper()
	for s.sc.Scan() {
		line := s.sc.Text()
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		var a rpcAnswer
		require.NoError(s.t, json.Unmarshal([]byte(data), &a), data)
		require.JSONEq(s.t, `"s-1"`, string(a.ID))
		require.Nil(s.t, a.Error, "%+v", a.Error)
		return a.Result, true
	}
	return nil, false
}

// kindOf is the kind of a stream event and its body: 1.0 wraps it
// ({"statusUpdate": …}), 0.3 tags it ({"kind": "status-update", …}).
func kindOf(t *testing.T, v03 bool, ev map[string]any) (string, map[string]any) {
	t.Helper()
	if v03 {
		return map[string]string{"task": "task", "status-update": "statusUpdate", "artifact-update": "artifactUpdate"}[ev["kind"].(string)], ev
	}
	require.Len(t, ev, 1, "%v", ev)
	for k, v := range ev {
		return k, v.(map[string]any)
	}
	return "", nil
}

func TestHandler_Stream_FollowsTheTaskUntilItAsksForInputOrEnds(t *testing.T) {
	for _, d := range dialects {
		t.Run(d.name, func(t *testing.T) {
			f := newFixture(t, "")
			method, subscribe := "SendStreamingMessage", "SubscribeToTask"
			if d.v03 {
				method, subscribe = "message/stream", "tasks/resubscribe"
			}
			// Working, then input-required: the stream ends there.
			s := f.openStream(t, "gated", method, map[string]any{"message": message(d.v03, "g-1", "", map[string]any{}, "")})
			ev, ok := s.next()
			require.True(t, ok)
			kind, task := kindOf(t, d.v03, ev)
			require.Equal(t, "task", kind)
			require.Equal(t, d.working, stateOf(task))
			id := task["id"].(string)
			close(f.gate)
			ev, ok = s.next()
			require.True(t, ok)
			kind, up := kindOf(t, d.v03, ev)
			require.Equal(t, "statusUpdate", kind, "%v", ev)
			assert.Equal(t, id, up["taskId"])
			assert.Equal(t, d.inputRequired, stateOf(up))
			assert.Contains(t, statusText(up), "signal go")
			if d.v03 {
				assert.Equal(t, true, up["final"])
			}
			_, ok = s.next()
			assert.False(t, ok, "the stream goes on after input-required")

			// Subscribing to a waiting task: the task, and the end.
			s = f.openStream(t, "gated", subscribe, map[string]any{"id": id})
			ev, ok = s.next()
			require.True(t, ok)
			kind, task = kindOf(t, d.v03, ev)
			require.Equal(t, "task", kind)
			assert.Equal(t, d.inputRequired, stateOf(task))
			_, ok = s.next()
			assert.False(t, ok)

			// Working, then completed: the result comes as an artifact
			// update before the last status.
			s = f.openStream(t, "finish", method, map[string]any{"message": message(d.v03, "f-1", "", map[string]any{}, "")})
			ev, ok = s.next()
			require.True(t, ok)
			kind, task = kindOf(t, d.v03, ev)
			require.Equal(t, "task", kind)
			require.Equal(t, d.working, stateOf(task))
			close(f.finish)
			ev, ok = s.next()
			require.True(t, ok)
			kind, art := kindOf(t, d.v03, ev)
			require.Equal(t, "artifactUpdate", kind, "%v", ev)
			data := art["artifact"].(map[string]any)["parts"].([]any)[0].(map[string]any)["data"].(map[string]any)
			assert.Equal(t, "DONE", data["outcome"])
			ev, ok = s.next()
			require.True(t, ok)
			kind, up = kindOf(t, d.v03, ev)
			require.Equal(t, "statusUpdate", kind)
			assert.Equal(t, d.done, stateOf(up))
			_, ok = s.next()
			assert.False(t, ok)
		})
	}
}

func TestHandler_Stream_ErrorsAreJSONRPCAnswers(t *testing.T) {
	f := newFixture(t, "")
	a := f.call("quick", "SubscribeToTask", map[string]any{"id": "nope"})
	require.NotNil(t, a.Error)
	assert.Equal(t, -32001, a.Error.Code)
	a = f.call("quick", "SendStreamingMessage", map[string]any{"message": message(false, "x", "", map[string]any{"amount": "ten"}, "")})
	require.NotNil(t, a.Error)
	assert.Equal(t, -32602, a.Error.Code)
	assert.Equal(t, "input.amount", a.Error.Data["field"])
}
