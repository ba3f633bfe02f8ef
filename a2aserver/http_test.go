package a2aserver_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// send posts body with a content type and reads the status and the
// JSON-RPC error code.
func send(t *testing.T, f *fixture, method, path, contentType string, body []byte, header ...string) (int, int) {
	t.Helper()
	req, err := http.NewRequest(method, f.http.URL+path, bytes.NewReader(body))
	require.NoError(t, err)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for k := 0; k+1 < len(header); k += 2 {
		req.Header.Set(header[k], header[k+1])
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var a rpcAnswer
	if json.NewDecoder(resp.Body).Decode(&a) != nil || a.Error == nil {
		return resp.StatusCode, 0
	}
	return resp.StatusCode, a.Error.Code
}

func TestHandler_HTTP_RefusesWhatIsNoJSONRPCRequest(t *testing.T) {
	f := newFixture(t, "")
	get := []byte(`{"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "x"}}`)
	huge := []byte(`{"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": {"messageId": "m", "parts": [{"text": "` + strings.Repeat("x", 1<<20) + `"}]}}}`)
	for _, tc := range []struct {
		name, method, path, contentType string
		body                            []byte
		header                          []string
		status, code                    int
	}{
		{"not JSON by its content type", "POST", "/a2a/quick", "text/plain", get, nil, 415, -32600},
		{"larger than the limit", "POST", "/a2a/quick", "application/json", huge, nil, 413, -32600},
		{"GET on the agent", "GET", "/a2a/quick", "", nil, nil, 405, -32600},
		{"an unknown workflow", "POST", "/a2a/nope", "application/json", get, nil, 404, -32600},
		{"a path below an agent", "POST", "/a2a/quick/more", "application/json", get, nil, 404, -32600},
		{"another site's page", "POST", "/a2a/quick", "application/json", get, []string{"Sec-Fetch-Site", "cross-site"}, 403, 0},
		{"a JSON subtype", "POST", "/a2a/quick", "application/json-rpc+json", get, nil, 200, -32001},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, code := send(t, f, tc.method, tc.path, tc.contentType, tc.body, tc.header...)
			assert.Equal(t, tc.status, status)
			assert.Equal(t, tc.code, code)
		})
	}
}

// An invalid request whose id could be read is answered to that id.
func TestHandler_Errors_AnswerToTheRequestsID(t *testing.T) {
	f := newFixture(t, "")
	for _, body := range []string{
		`{"jsonrpc": 5, "id": "abc", "method": "GetTask"}`,
		`{"jsonrpc": "2.0", "id": "abc", "method": ["GetTask"]}`,
		`{"jsonrpc": "2.0", "id": "abc", "method": "GetTask", "params": "x"}`,
		`{"jsonrpc": "2.0", "id": "abc", "method": "NoSuchMethod"}`,
	} {
		code, a := f.post("/a2a/quick", []byte(body))
		assert.Equal(t, 200, code)
		require.NotNil(t, a.Error, body)
		assert.JSONEq(t, `"abc"`, string(a.ID), body)
	}
}
