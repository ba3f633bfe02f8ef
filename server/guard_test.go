package server_test

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/server"
)

// send sends a request as a browser or a program would, with the Host
// header host (the URL's when empty) and the headers hdr, and returns the
// status and the error code of the answer ("" for no error).
func (f *fixture) send(method, path, body, host string, hdr ...string) (int, string, string) {
	f.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, f.http.URL+path, rd)
	require.NoError(f.t, err)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if host != "" {
		req.Host = host
	}
	if f.token != "" {
		req.Header.Set("Authorization", "Bearer "+f.token)
	}
	for k := 0; k+1 < len(hdr); k += 2 {
		req.Header.Set(hdr[k], hdr[k+1])
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(f.t, err)
	defer resp.Body.Close()
	var out struct {
		Error struct{ Code, Field string }
	}
	data, err := io.ReadAll(resp.Body)
	require.NoError(f.t, err)
	if resp.StatusCode >= 400 && strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		require.NoError(f.t, json.Unmarshal(data, &out), "body %s", data)
	}
	return resp.StatusCode, out.Error.Code, out.Error.Field
}

func TestServer_RefusesCrossOriginChanges(t *testing.T) {
	f := newFixture(t)
	own := f.http.URL
	code, _ := f.do("POST", "/v1/workflows/echo/instances", map[string]any{"id": "target"})
	require.Equal(t, 201, code)
	changes := []struct{ name, path string }{
		{"start", "/v1/workflows/echo/instances"},
		{"cancel", "/v1/instances/target/cancel"},
		{"signal", "/v1/instances/target/signals/go"},
		{"select", "/v1/instances/target/select"},
		{"report", "/v1/reports"},
	}
	refused := []struct {
		name, field string
		hdr         []string
	}{
		{"cross-site", "Sec-Fetch-Site", []string{"Sec-Fetch-Site", "cross-site", "Origin", "https://evil.example"}},
		{"same site, another origin", "Sec-Fetch-Site", []string{"Sec-Fetch-Site", "same-site", "Origin", "http://127.0.0.1:1"}},
		{"cross-site, no Origin", "Sec-Fetch-Site", []string{"Sec-Fetch-Site", "cross-site"}},
		{"another Origin, no Sec-Fetch-Site", "Origin", []string{"Origin", "https://evil.example"}},
		{"another port, no Sec-Fetch-Site", "Origin", []string{"Origin", "http://127.0.0.1:1"}},
		{"an opaque Origin", "Origin", []string{"Origin", "null"}},
	}
	for _, ch := range changes {
		for _, tt := range refused {
			t.Run(ch.name+"/"+tt.name, func(t *testing.T) {
				// Without a body: what a no-cors fetch or a form sends.
				code, errCode, field := f.send("POST", ch.path, "", "", tt.hdr...)
				assert.Equal(t, http.StatusForbidden, code)
				assert.Equal(t, "cross_origin", errCode)
				assert.Equal(t, tt.field, field)
			})
		}
	}
	assert.Equal(t, "running", f.waitStatus("target", "running")["status"], "a refused cancel changed the instance")
	assert.Equal(t, 1, f.count(), "a refused start started an instance")

	allowed := []struct {
		name string
		hdr  []string
	}{
		{"a program (no browser headers)", nil},
		{"same-origin", []string{"Sec-Fetch-Site", "same-origin", "Origin", own}},
		{"typed by the user", []string{"Sec-Fetch-Site", "none"}},
		{"own Origin, no Sec-Fetch-Site", []string{"Origin", own}},
	}
	for k, tt := range allowed {
		t.Run("allowed/"+tt.name, func(t *testing.T) {
			code, errCode, _ := f.send("POST", "/v1/workflows/echo/instances", `{"id": "ok-`+string(rune('a'+k))+`"}`, "", tt.hdr...)
			assert.Equal(t, 201, code, errCode)
		})
	}
	t.Run("reads", func(t *testing.T) {
		// A page of another site cannot read the answer (no CORS headers),
		// and a read changes nothing.
		code, errCode, _ := f.send("GET", "/v1/instances", "", "", "Sec-Fetch-Site", "cross-site", "Origin", "https://evil.example")
		assert.Equal(t, 200, code, errCode)
	})
}

func TestServer_RefusesHostsOtherThanLoopback(t *testing.T) {
	f := newFixture(t)
	port := f.http.URL[strings.LastIndex(f.http.URL, ":"):]
	for _, host := range []string{"evil.example", "evil.example" + port, "rebind.localhost" + port, "localhost.evil.example", "10.0.0.1" + port, "0.0.0.0" + port} {
		for _, rq := range []struct{ method, path string }{
			{"GET", "/v1/instances"},
			{"POST", "/v1/workflows/echo/instances"},
			{"GET", "/ui/"},
			{"POST", "/ui/instances/x/cancel"},
			{"GET", "/metrics"},
			{"GET", "/openapi.json"},
			{"GET", "/nothing"},
		} {
			t.Run(host+rq.path, func(t *testing.T) {
				code, errCode, field := f.send(rq.method, rq.path, "", host, "Sec-Fetch-Site", "same-origin")
				assert.Equal(t, http.StatusForbidden, code)
				assert.Equal(t, "forbidden_host", errCode)
				assert.Equal(t, "Host", field)
			})
		}
	}
	for _, host := range []string{"localhost", "localhost" + port, "LocalHost" + port, "127.0.0.1", "127.0.0.1" + port, "127.1.2.3" + port, "[::1]", "[::1]" + port} {
		t.Run("allowed/"+host, func(t *testing.T) {
			code, errCode, _ := f.send("GET", "/v1/instances", "", host)
			assert.Equal(t, 200, code, errCode)
			code, _, _ = f.send("GET", "/ui/", "", host)
			assert.Equal(t, 200, code)
		})
	}
	t.Run("probes answer any Host", func(t *testing.T) {
		for _, path := range []string{"/healthz", "/readyz"} {
			code, _, _ := f.send("GET", path, "", "evil.example")
			assert.Equal(t, 200, code, path)
		}
	})
	assert.Equal(t, 0, f.count(), "a refused start started an instance")
}

// With tokens, a request needs its bearer token, which no page of another
// site can add: the origin and the Host are not checked.
func TestServer_TokensAuthenticateCrossOriginRequests(t *testing.T) {
	tokenFile := filepath.Join(t.TempDir(), "tokens")
	require.NoError(t, os.WriteFile(tokenFile, []byte("the-token\n"), 0o600))
	f := newFixture(t, func(c *server.Config) { c.TokenFile = tokenFile })
	code, errCode, _ := f.send("POST", "/v1/workflows/echo/instances", "", "", "Sec-Fetch-Site", "cross-site", "Origin", "https://evil.example")
	assert.Equal(t, 401, code, "no token")
	assert.Equal(t, "unauthorized", errCode)
	f.token = "the-token"
	code, errCode, _ = f.send("POST", "/v1/workflows/echo/instances", "", "", "Sec-Fetch-Site", "cross-site", "Origin", "https://evil.example")
	assert.Equal(t, 201, code, errCode)
	code, errCode, _ = f.send("GET", "/v1/instances", "", "baton.example.com")
	assert.Equal(t, 200, code, errCode)
}
