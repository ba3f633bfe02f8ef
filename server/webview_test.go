package server_test

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/server"
	"github.com/batonhq/baton/webview"
)

// page fetches a page of the server without following redirects.
func (f *fixture) page(method, path string, form url.Values, hdr ...string) (int, string, http.Header) {
	f.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, f.http.URL+path, body)
	require.NoError(f.t, err)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for k := 0; k+1 < len(hdr); k += 2 {
		req.Header.Set(hdr[k], hdr[k+1])
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	require.NoError(f.t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(f.t, err)
	return resp.StatusCode, string(data), resp.Header
}

func TestServer_WebViewListsAndActsThroughTheAPI(t *testing.T) {
	f := newFixture(t)
	code, _, hdr := f.page("GET", "/", nil)
	require.Equal(t, http.StatusFound, code)
	assert.Equal(t, server.ViewPath, hdr.Get("Location"))

	code, body := f.do("POST", "/v1/workflows/review/instances", map[string]any{"id": "held-1", "input": map[string]any{"mode": "hold"}})
	require.Equal(t, 201, code, body)
	f.waitStatus("held-1", "running")
	code, page, _ := f.page("GET", "/ui/?workflow=review&status=running", nil)
	require.Equal(t, 200, code)
	assert.Contains(t, page, `href="/ui/instances/held-1"`)
	code, page, _ = f.page("GET", "/ui/?workflow=echo", nil)
	require.Equal(t, 200, code)
	assert.NotContains(t, page, "held-1")

	code, page, _ = f.page("GET", "/ui/instances/held-1", nil)
	require.Equal(t, 200, code)
	assert.Contains(t, page, "class DRAFTING current")
	assert.Contains(t, page, "<option>boss</option>")

	// The selection goes through the API's own checks: an undeclared agent
	// is refused with the API's message, a declared one is taken.
	code, page, _ = f.page("POST", "/ui/instances/held-1/select", url.Values{"agent": {"ghost"}})
	assert.Equal(t, 400, code)
	assert.Contains(t, page, "names no agent of workflow review")
	code, _, _ = f.page("POST", "/ui/instances/held-1/select", url.Values{"agent": {"boss"}})
	require.Equal(t, 303, code)
	f.waitStatus("held-1", "completed") // the boss drafts, the checker declines
	code, page, _ = f.page("POST", "/ui/instances/held-1/cancel", url.Values{})
	assert.Equal(t, 409, code)
	assert.Contains(t, page, "has already finished")

	code, page, _ = f.page("GET", "/ui/workflows", nil)
	require.Equal(t, 200, code)
	assert.Contains(t, page, `href="/ui/?workflow=review&amp;version=1">1</a>`)
	code, _, _ = f.page("GET", "/ui/dead-letters?reason=rejected", nil)
	assert.Equal(t, 200, code)
}

func TestServer_WebViewAsksForTheServersToken(t *testing.T) {
	tokenFile := filepath.Join(t.TempDir(), "tokens")
	require.NoError(t, os.WriteFile(tokenFile, []byte("the-token\n"), 0o600))
	f := newFixture(t, func(c *server.Config) { c.TokenFile = tokenFile })
	code, _, hdr := f.page("GET", "/ui/", nil)
	require.Equal(t, 303, code)
	assert.True(t, strings.HasPrefix(hdr.Get("Location"), "/ui/login"), hdr.Get("Location"))
	code, _, _ = f.page("POST", "/ui/login", url.Values{"token": {"nope"}})
	assert.Equal(t, 401, code)
	code, _, hdr = f.page("POST", "/ui/login", url.Values{"token": {"the-token"}})
	require.Equal(t, 303, code)
	assert.Contains(t, hdr.Get("Set-Cookie"), "HttpOnly")
	code, _, _ = f.page("GET", "/ui/", nil, "Cookie", webview.TokenCookie+"=the-token")
	assert.Equal(t, 200, code)
}

// The view's event streams end when the server closes.
func TestServer_WebViewStreamsEndOnClose(t *testing.T) {
	f := newFixture(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", f.http.URL+"/ui/events", nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	lines := bufio.NewScanner(resp.Body)
	require.True(t, lines.Scan())
	code, body := f.do("POST", "/v1/workflows/echo/instances", map[string]any{})
	require.Equal(t, 201, code, body)
	changed := false
	for lines.Scan() {
		if lines.Text() == "event: changed" {
			changed = true
			break
		}
	}
	require.True(t, changed)
	f.srv.Close()
	for lines.Scan() {
	}
	assert.NoError(t, ctx.Err(), "the stream ended by the deadline, not by the close")
}
