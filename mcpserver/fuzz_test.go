package mcpserver_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// mcpPost sends body to /mcp in session sid ("" for none) and answers the
// status and the body.
func mcpPost(t testing.TB, url, sid string, body []byte) (int, http.Header, []byte) {
	t.Helper()
	req, err := http.NewRequest("POST", url, bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, resp.Header, data
}

// session opens an MCP session on url with the initialize handshake.
func session(t testing.TB, url string) string {
	t.Helper()
	code, hdr, body := mcpPost(t, url, "", []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"fuzz","version":"1"}}}`))
	require.Equal(t, http.StatusOK, code, "%s", body)
	sid := hdr.Get("Mcp-Session-Id")
	require.NotEmpty(t, sid)
	code, _, body = mcpPost(t, url, sid, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	require.Equal(t, http.StatusAccepted, code, "%s", body)
	return sid
}

// FuzzMCP_Request sends any body to /mcp in an open session: bad JSON,
// wrong params, unknown methods, tool calls with any arguments, bodies
// beyond the limit. The server never panics, answers each with a status
// of the transport, and keeps serving the session.
func FuzzMCP_Request(f *testing.F) {
	for _, seed := range []string{
		``, `{`, `null`, `[]`, `42`, `"x"`, `{"jsonrpc":"2.0"}`,
		`{"jsonrpc":"2.0","id":2,"method":"no/such/method"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":7}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"get_instance","arguments":[1,2]}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"get_instance","arguments":{"id":{"a":1}}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"start_approval","arguments":{"amount":1e999}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"start_approval","arguments":{"amount":1,"wait":-1,"id":"../x"}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"list_instances","arguments":{"limit":1e308,"cursor":"\u0000"}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"signal_instance","arguments":{"id":"","signal":null,"data":"x"}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"baton://instances/%zz/history"}}`,
		`{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"baton://workflows/"}}`,
		`[{"jsonrpc":"2.0","id":2,"method":"tools/list"},{"jsonrpc":"2.0","id":3,"method":"ping"}]`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"cursor":"bogus"}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"start_approval","arguments":{"amount":1,"note":"` + strings.Repeat("x", 5000) + `"}}}`,
	} {
		f.Add([]byte(seed))
	}
	fx := newFixture(f, approvalFlow, idFlow)
	sid := session(f, fx.url)
	ping := []byte(`{"jsonrpc":"2.0","id":99,"method":"tools/call","params":{"name":"list_workflows","arguments":{}}}`)
	f.Fuzz(func(t *testing.T, body []byte) {
		code, _, answer := mcpPost(t, fx.url, sid, body)
		switch code {
		case http.StatusOK, http.StatusAccepted, http.StatusBadRequest, http.StatusNotFound, http.StatusRequestEntityTooLarge, http.StatusUnsupportedMediaType:
		default:
			t.Fatalf("status %d for %q: %s", code, body, answer)
		}
		code, _, answer = mcpPost(t, fx.url, sid, ping)
		require.Equal(t, http.StatusOK, code, "the session no longer answers after %q: %s", body, answer)
		require.True(t, json.Valid(sseData(answer)), "%s", answer)
	})
}

// sseData is the data of an event stream's first event, or body itself
// when it is JSON.
func sseData(body []byte) []byte {
	for line := range strings.SplitSeq(string(body), "\n") {
		if d, ok := strings.CutPrefix(line, "data: "); ok {
			return []byte(d)
		}
	}
	return body
}
