package server_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/replay"
	"github.com/batonhq/baton/server"
)

func TestServer_Start_RunsToCompletion(t *testing.T) {
	f := newFixture(t)
	tests := []struct {
		input   map[string]any
		outcome string
	}{
		{map[string]any{"approve": true}, "DONE"},
		{map[string]any{"approve": false}, "REJECTED"},
	}
	for _, tt := range tests {
		t.Run(tt.outcome, func(t *testing.T) {
			code, body := f.do("POST", "/v1/workflows/review/instances", map[string]any{"input": tt.input})
			require.Equal(t, 201, code, "%v", body)
			assert.Equal(t, "review", body["workflow"])
			assert.EqualValues(t, 1, body["version"])
			assert.Equal(t, "running", body["status"])
			id := body["id"].(string)
			got := f.waitStatus(id, "completed")
			assert.Equal(t, tt.outcome, got["outcome"])
			assert.Equal(t, tt.outcome, got["state"])
			assert.EqualValues(t, 2, got["step"])
			for _, k := range []string{"id", "workflow", "version", "status", "state", "step", "outcome", "error", "context", "created", "updated"} {
				assert.Contains(t, got, k)
			}
		})
	}
}

func TestServer_Start_SameIDReturnsTheInstance(t *testing.T) {
	f := newFixture(t)
	body := map[string]any{"id": "order/42", "input": map[string]any{"approve": true}}
	code, first := f.do("POST", "/v1/workflows/review/instances", body)
	require.Equal(t, 201, code, "%v", first)
	code, again := f.do("POST", "/v1/workflows/review/instances", body)
	require.Equal(t, 200, code, "%v", again)
	assert.Equal(t, "order/42", again["id"])
	assert.Equal(t, 1, f.count())
	// The id is path-escaped in URLs.
	f.waitStatus(url.PathEscape("order/42"), "completed")
	// Another workflow cannot take the id.
	code, other := f.do("POST", "/v1/workflows/echo/instances", map[string]any{"id": "order/42"})
	require.Equal(t, 409, code)
	assert.Equal(t, "id_taken", errorOf(t, other)["code"])
	assert.Equal(t, 1, f.count())
	// The same id with other input is a mistake, not a retry.
	code, changed := f.do("POST", "/v1/workflows/review/instances", map[string]any{"id": "order/42", "input": map[string]any{"approve": false}})
	require.Equal(t, 409, code, "%v", changed)
	e := errorOf(t, changed)
	assert.Equal(t, "conflict", e["code"])
	assert.Equal(t, "input", e["field"])
	// Numbers compare by value: 1.0 is 1.
	code, first = f.do("POST", "/v1/workflows/review/instances", map[string]any{"id": "n-1", "input": map[string]any{"n": 1}})
	require.Equal(t, 201, code, "%v", first)
	code, again = f.do("POST", "/v1/workflows/review/instances", map[string]any{"id": "n-1", "input": map[string]any{"n": 1.0}})
	require.Equal(t, 200, code, "%v", again)
	// No input and an empty one are the same.
	code, _ = f.do("POST", "/v1/workflows/echo/instances", map[string]any{"id": "e-1"})
	require.Equal(t, 201, code)
	code, again = f.do("POST", "/v1/workflows/echo/instances", map[string]any{"id": "e-1", "input": map[string]any{}})
	require.Equal(t, 200, code, "%v", again)
}

func TestServer_Start_Refused(t *testing.T) {
	f := newFixture(t)
	big := `{"input":{"x":"` + strings.Repeat("a", 1<<20) + `"}}`
	tests := []struct {
		name        string
		path        string
		body        string
		contentType string
		status      int
		code        string
		field       string
	}{
		{"malformed JSON", "review", `{"input":`, "application/json", 400, "invalid_json", ""},
		{"not an object", "review", `[1,2]`, "application/json", 400, "invalid_json", ""},
		{"input not an object", "review", `{"input": 3}`, "application/json", 400, "invalid_field", "input"},
		{"id not a string", "review", `{"id": 7}`, "application/json", 400, "invalid_field", "id"},
		{"empty id", "review", `{"id": ""}`, "application/json", 400, "invalid_field", "id"},
		{"version not an integer", "review", `{"version": 1.5}`, "application/json", 400, "invalid_field", "version"},
		{"version 0", "review", `{"version": 0}`, "application/json", 400, "invalid_field", "version"},
		{"unknown field", "review", `{"inptu": {}}`, "application/json", 400, "invalid_field", "inptu"},
		{"trailing data", "review", `{} {}`, "application/json", 400, "invalid_json", ""},
		{"number too large", "review", `{"input": {"n": 1e400}}`, "application/json", 400, "invalid_field", "input"},
		{"unknown workflow", "nope", `{}`, "application/json", 404, "unknown_workflow", "workflow"},
		{"unknown version", "review", `{"version": 9}`, "application/json", 404, "unknown_version", "version"},
		{"oversize body", "review", big, "application/json", 413, "too_large", ""},
		{"wrong content type", "review", `{}`, "text/plain", 415, "unsupported_media_type", "Content-Type"},
		{"no content type", "review", `{}`, "", 415, "unsupported_media_type", "Content-Type"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequest("POST", f.http.URL+"/v1/workflows/"+tt.path+"/instances", strings.NewReader(tt.body))
			require.NoError(t, err)
			if tt.contentType != "" {
				req.Header.Set("Content-Type", tt.contentType)
			}
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			defer resp.Body.Close()
			assert.Equal(t, tt.status, resp.StatusCode)
			assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
			var body map[string]any
			require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
			e := errorOf(t, body)
			assert.Equal(t, tt.code, e["code"])
			if tt.field != "" {
				assert.Equal(t, tt.field, e["field"])
			}
			assert.NotContains(t, e["message"], "goroutine", "no stack trace")
			assert.Equal(t, 0, f.count(), "a refused start changes nothing")
		})
	}
}

func TestServer_Start_EmptyBodyIsEmptyInput(t *testing.T) {
	f := newFixture(t)
	code, body := f.do("POST", "/v1/workflows/echo/instances", nil)
	require.Equal(t, 201, code, "%v", body)
	code, got := f.do("GET", "/v1/instances/"+body["id"].(string), nil)
	require.Equal(t, 200, code)
	assert.Equal(t, "WORKING", got["state"])
}

func TestServer_List_PagesNewestFirst(t *testing.T) {
	f := newFixture(t)
	var ids []string
	for k := range 5 {
		code, body := f.do("POST", "/v1/workflows/echo/instances", map[string]any{"id": fmt.Sprintf("e%d", k)})
		require.Equal(t, 201, code)
		ids = append(ids, body["id"].(string))
	}
	code, body := f.do("POST", "/v1/workflows/review/instances", map[string]any{"input": map[string]any{"approve": true}})
	require.Equal(t, 201, code)
	f.waitStatus(body["id"].(string), "completed")

	var seen []string
	cursor := ""
	for pages := 0; pages < 10; pages++ {
		path := "/v1/instances?workflow=echo&limit=2"
		if cursor != "" {
			path += "&cursor=" + url.QueryEscape(cursor)
		}
		code, page := f.do("GET", path, nil)
		require.Equal(t, 200, code)
		for _, in := range page["instances"].([]any) {
			seen = append(seen, in.(map[string]any)["id"].(string))
		}
		if page["next"] == nil {
			break
		}
		cursor = page["next"].(string)
	}
	assert.ElementsMatch(t, ids, seen, "every instance once")
	assert.Len(t, seen, 5)

	filters := []struct {
		query string
		n     int
	}{
		{"status=completed", 1},
		{"status=running", 5},
		{"state=WORKING", 5},
		{"workflow=review&status=completed", 1},
		{"workflow=nope", 0},
	}
	for _, fl := range filters {
		code, page := f.do("GET", "/v1/instances?"+fl.query, nil)
		require.Equal(t, 200, code)
		assert.Len(t, page["instances"], fl.n, fl.query)
		assert.Nil(t, page["next"], fl.query)
	}
	for _, bad := range []struct{ query, field string }{{"limit=0", "limit"}, {"limit=x", "limit"}, {"limit=1001", "limit"}, {"status=done", "status"}, {"cursor=!!!", "cursor"}, {"cursor=abc", "cursor"}} {
		code, body := f.do("GET", "/v1/instances?"+bad.query, nil)
		assert.Equal(t, 400, code, bad.query)
		assert.Equal(t, bad.field, errorOf(t, body)["field"], bad.query)
	}
}

func TestServer_Get_Unknown(t *testing.T) {
	f := newFixture(t)
	for _, path := range []string{"/v1/instances/nope", "/v1/instances/nope/history"} {
		code, body := f.do("GET", path, nil)
		assert.Equal(t, 404, code)
		assert.Equal(t, "unknown_instance", errorOf(t, body)["code"])
	}
}

func TestServer_History_IsWhatReplayReads(t *testing.T) {
	f := newFixture(t)
	code, body := f.do("POST", "/v1/workflows/review/instances", map[string]any{"input": map[string]any{"approve": true}})
	require.Equal(t, 201, code)
	id := body["id"].(string)
	f.waitStatus(id, "completed")
	resp, err := http.Get(f.http.URL + "/v1/instances/" + id + "/history")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode)
	var buf bytes.Buffer
	_, _ = buf.ReadFrom(resp.Body)
	entries, err := replay.ReadHistory(&buf)
	require.NoError(t, err)
	require.NotEmpty(t, entries)
	assert.Equal(t, "started", string(entries[0].Kind))
	// A reply that comes after the end (an agent reporting twice, as
	// at-least-once agents may) is recorded after the completed entry.
	last := len(entries) - 1
	for last > 0 && (entries[last].Kind == "late_reply" || entries[last].Kind == "notice_taken") {
		last--
	}
	assert.Equal(t, "completed", string(entries[last].Kind))
}

func TestServer_Signal_NotWaiting(t *testing.T) {
	f := newFixture(t)
	code, body := f.do("POST", "/v1/workflows/echo/instances", nil)
	require.Equal(t, 201, code)
	id := body["id"].(string)
	code, body = f.do("POST", "/v1/instances/"+id+"/signals/approved", map[string]any{"data": map[string]any{"by": "ana"}})
	assert.Equal(t, 409, code)
	e := errorOf(t, body)
	assert.Equal(t, "not_waiting", e["code"])
	assert.Contains(t, e["message"], `not waiting for signal "approved"`)
	code, body = f.do("POST", "/v1/instances/nope/signals/approved", nil)
	assert.Equal(t, 404, code)
	code, body = f.do("POST", "/v1/instances/"+id+"/signals/approved", `{"data":`)
	assert.Equal(t, 400, code)
	code, body = f.do("POST", "/v1/instances/"+id+"/signals/approved", `{"dat": 1}`)
	assert.Equal(t, 400, code)
	assert.Equal(t, "dat", errorOf(t, body)["field"])
	got := f.waitStatus(id, "running")
	assert.EqualValues(t, 1, got["step"], "nothing changed")
}

func TestServer_Cancel(t *testing.T) {
	f := newFixture(t)
	code, body := f.do("POST", "/v1/workflows/review/instances", map[string]any{"input": map[string]any{"mode": "hold"}})
	require.Equal(t, 201, code)
	id := body["id"].(string)
	code, body = f.do("POST", "/v1/instances/"+id+"/cancel", nil)
	require.Equal(t, 202, code, "%v", body)
	assert.Equal(t, "cancelled", body["status"])
	got := f.waitStatus(id, "cancelled")
	assert.Equal(t, "DRAFTING", got["state"])
	// A cancel is no failure: no error, and no reason when none was given.
	assert.Nil(t, got["error"])
	assert.NotContains(t, got, "cancel_reason")
	code, body = f.do("POST", "/v1/instances/"+id+"/cancel", nil)
	assert.Equal(t, 409, code)
	assert.Equal(t, "finished", errorOf(t, body)["code"])
	code, _ = f.do("POST", "/v1/instances/nope/cancel", nil)
	assert.Equal(t, 404, code)
	code, _ = f.do("GET", "/v1/instances?status=cancelled", nil)
	assert.Equal(t, 200, code)

	// With a reason: kept on the instance and in its history.
	code, body = f.do("POST", "/v1/workflows/review/instances", map[string]any{"input": map[string]any{"mode": "hold"}})
	require.Equal(t, 201, code)
	id = body["id"].(string)
	code, body = f.do("POST", "/v1/instances/"+id+"/cancel", map[string]any{"reason": "the customer withdrew"})
	require.Equal(t, 202, code, "%v", body)
	got = f.waitStatus(id, "cancelled")
	assert.Nil(t, got["error"])
	assert.Equal(t, "the customer withdrew", got["cancel_reason"])
	code, body = f.do("POST", "/v1/instances/"+id+"/cancel", map[string]any{"reasn": "x"})
	assert.Equal(t, 400, code)
	assert.Equal(t, "reasn", errorOf(t, body)["field"])
	code, body = f.do("POST", "/v1/workflows/review/instances", map[string]any{"input": map[string]any{"mode": "hold"}})
	require.Equal(t, 201, code)
	code, body = f.do("POST", "/v1/instances/"+body["id"].(string)+"/cancel", map[string]any{"reason": strings.Repeat("x", 1025)})
	assert.Equal(t, 400, code)
	assert.Equal(t, "reason", errorOf(t, body)["field"])
}

func TestServer_Select(t *testing.T) {
	f := newFixture(t)
	code, body := f.do("POST", "/v1/workflows/review/instances", map[string]any{"input": map[string]any{"mode": "hold", "approve": true}})
	require.Equal(t, 201, code)
	id := body["id"].(string)
	for _, bad := range []struct {
		body   string
		status int
		field  string
	}{
		{`{}`, 400, "agent"},
		{`{"agent": 3}`, 400, "agent"},
		{`{"agent": "bos"}`, 400, "agent"},
		{`{"agent": "checker"}`, 409, ""},
	} {
		code, body := f.do("POST", "/v1/instances/"+id+"/select", bad.body)
		assert.Equal(t, bad.status, code, bad.body)
		if bad.field != "" {
			assert.Equal(t, bad.field, errorOf(t, body)["field"], bad.body)
		}
	}
	code, body = f.do("GET", "/v1/instances/"+id, nil)
	require.Equal(t, 200, code)
	assert.EqualValues(t, 1, body["step"], "refused selections change nothing")
	code, body = f.do("POST", "/v1/instances/"+id+"/select", map[string]any{"agent": "boss", "explanation": "the writer is away"})
	require.Equal(t, 202, code, "%v", body)
	got := f.waitStatus(id, "completed")
	assert.Equal(t, "DONE", got["outcome"])
	code, body = f.do("POST", "/v1/instances/"+id+"/select", map[string]any{"agent": "boss"})
	assert.Equal(t, 409, code)
	code, _ = f.do("POST", "/v1/instances/nope/select", map[string]any{"agent": "boss"})
	assert.Equal(t, 404, code)
}

// waitFlow waits for a person's decision before it ends.
const waitFlow = `workflow: approve
initial: APPROVAL
states:
  APPROVAL: {wait: {signals: [approved, rejected]}, timeout: 48h}
  DONE: {terminal: true}
  NO: {terminal: true}
rules:
  - {id: approved, from: APPROVAL, trigger: approved, next: DONE, context: {by: result.by}}
  - {id: rejected, from: APPROVAL, trigger: rejected, next: NO}
  - {id: expired, from: APPROVAL, trigger: timeout, next: NO}
`

func TestServer_Signal_MovesAWaitingInstanceOn(t *testing.T) {
	f := newFixture(t, func(c *server.Config) {
		require.NoError(t, os.WriteFile(filepath.Join(c.WorkflowsDir, "approve.yaml"), []byte(waitFlow), 0o600))
	})
	code, body := f.do("POST", "/v1/workflows/approve/instances", nil)
	require.Equal(t, 201, code, "%v", body)
	id := body["id"].(string)
	f.waitStatus(id, "waiting")
	code, body = f.do("POST", "/v1/instances/"+id+"/signals/maybe", map[string]any{"data": map[string]any{}})
	require.Equal(t, 409, code, "%v", body)
	assert.Equal(t, "not_waiting", errorOf(t, body)["code"])
	code, body = f.do("POST", "/v1/instances/"+id+"/signals/approved", map[string]any{"data": "yes"})
	require.Equal(t, 400, code, "%v", body)
	assert.Equal(t, "data", errorOf(t, body)["field"])
	f.waitStatus(id, "waiting") // refused signals changed nothing
	code, body = f.do("POST", "/v1/instances/"+id+"/signals/approved", map[string]any{"data": map[string]any{"by": "ana"}})
	require.Equal(t, 202, code, "%v", body)
	got := f.waitStatus(id, "completed")
	assert.Equal(t, "DONE", got["outcome"])
	assert.Equal(t, "ana", got["context"].(map[string]any)["by"])
	code, body = f.do("POST", "/v1/instances/"+id+"/signals/approved", nil)
	assert.Equal(t, 409, code, "%v", body)
}
