package a2aserver_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// getCard reads a card, with the token when one is given.
func getCard(t *testing.T, f *fixture, path, token string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest("GET", f.http.URL+path, nil)
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var body map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
	return resp.StatusCode, body
}

func TestCard_DescribesTheWorkflowInBothVersions(t *testing.T) {
	f := newFixture(t, "")
	code, card := getCard(t, f, "/a2a/quick/.well-known/agent-card.json", "")
	require.Equal(t, 200, code, "%v", card)
	url := f.http.URL + "/a2a/quick"
	assert.Equal(t, "quick", card["name"])
	assert.Equal(t, "Finishes at once", card["description"])
	assert.Equal(t, "3", card["version"])
	assert.Equal(t, map[string]any{"streaming": true, "pushNotifications": false}, card["capabilities"])
	assert.Equal(t, []any{
		map[string]any{"url": url, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
		map[string]any{"url": url, "protocolBinding": "JSONRPC", "protocolVersion": "0.3"},
	}, card["supportedInterfaces"])
	assert.Equal(t, url, card["url"])
	assert.Equal(t, "0.3", card["protocolVersion"])
	assert.Equal(t, "JSONRPC", card["preferredTransport"])
	skills := card["skills"].([]any)
	require.Len(t, skills, 1)
	assert.Contains(t, skills[0].(map[string]any)["description"], "{amount: number, note: string?}")
	assert.Nil(t, card["securitySchemes"], "a server without tokens declares no scheme")

	code, old := getCard(t, f, "/a2a/quick/.well-known/agent.json", "")
	require.Equal(t, 200, code)
	assert.Equal(t, card, old)

	code, body := getCard(t, f, "/a2a/nope/.well-known/agent-card.json", "")
	assert.Equal(t, 404, code, "%v", body)
}

func TestCard_TokensAreDeclaredAndRequired(t *testing.T) {
	f := newFixture(t, "tok-1")
	code, _ := getCard(t, f, "/a2a/quick/.well-known/agent-card.json", "")
	assert.Equal(t, 401, code)
	code, card := getCard(t, f, "/a2a/quick/.well-known/agent-card.json", "tok-1")
	require.Equal(t, 200, code)
	scheme := card["securitySchemes"].(map[string]any)["bearer"].(map[string]any)
	assert.Equal(t, map[string]any{"scheme": "bearer", "description": "a token of the server"}, scheme["httpAuthSecurityScheme"])
	assert.Equal(t, "http", scheme["type"])
	assert.Equal(t, "bearer", scheme["scheme"])
	assert.Equal(t, []any{map[string]any{"bearer": []any{}}}, card["security"])
	assert.Equal(t, []any{map[string]any{"schemes": map[string]any{"bearer": map[string]any{"list": []any{}}}}}, card["securityRequirements"])

	body := []byte(`{"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "x"}}`)
	code, _ = f.post("/a2a/quick", body)
	assert.Equal(t, 401, code)
	code, _ = f.post("/a2a/quick", body, "Authorization", "Bearer wrong")
	assert.Equal(t, 401, code)
	code, a := f.post("/a2a/quick", body, "Authorization", "Bearer tok-1")
	assert.Equal(t, 200, code)
	require.NotNil(t, a.Error)
	assert.Equal(t, -32001, a.Error.Code)
}
