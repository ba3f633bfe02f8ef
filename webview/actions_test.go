package webview_test

import (
	"bufio"
	"context"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/webview"
)

func TestActions_SignalMovesAWaitingInstanceOn(t *testing.T) {
	f := newFixture(t)
	id := f.start("", map[string]any{"text": "x"})
	f.waitState(id, "APPROVAL")

	code, body, _ := f.post("instances/"+id+"/signal", url.Values{"name": {"approve"}, "data": {"[1]"}})
	assert.Equal(t, 400, code)
	assert.Contains(t, body, "data: must be a JSON object")
	code, body, _ = f.post("instances/"+id+"/signal", url.Values{"name": {"approve"}, "data": {"{"}})
	assert.Equal(t, 400, code)
	assert.Contains(t, body, "data: not valid JSON")

	code, _, hdr := f.post("instances/"+id+"/signal", url.Values{"name": {"approve"}, "data": {`{"by": "ops"}`}})
	require.Equal(t, 303, code)
	assert.Equal(t, "/ui/instances/"+id+"?done=signal", hdr.Get("Location"))
	f.waitState(id, "DONE")
	_, body, _ = f.get("instances/" + id + "?done=signal")
	assert.Contains(t, body, "The signal was sent.")
	assert.Contains(t, body, "signal approve received")
	assert.Contains(t, body, "class DONE current")
	assert.NotContains(t, body, `class="actions"`, "a finished instance offers no action")

	// Refused: nothing changes, the reason is shown with 409.
	code, body, _ = f.post("instances/"+id+"/signal", url.Values{"name": {"reject"}})
	assert.Equal(t, 409, code)
	assert.Contains(t, body, `id="action-error"`)
	code, _, _ = f.post("instances/"+id+"/cancel", nil)
	assert.Equal(t, 409, code)
	code, _, _ = f.post("instances/nope/cancel", nil)
	assert.Equal(t, 404, code)
}

func TestActions_SelectAndCancel(t *testing.T) {
	f := newFixture(t)
	held := f.start("", map[string]any{"mode": "hold"})
	f.waitState(held, "WRITING")
	_, body, _ := f.get("instances/" + held)
	assert.Contains(t, body, `action="/ui/instances/`+held+`/select"`)
	assert.Contains(t, body, "<option>boss</option>")

	code, body, _ := f.post("instances/"+held+"/select", url.Values{"agent": {""}})
	assert.Equal(t, 400, code)
	assert.Contains(t, body, "agent: choose an agent")
	code, _, _ = f.post("instances/"+held+"/select", url.Values{"agent": {"boss"}, "explanation": {"the writer is away"}})
	require.Equal(t, 303, code)
	f.waitState(held, "APPROVAL")
	_, body, _ = f.get("instances/" + held)
	assert.Contains(t, body, "a user handed the step from writer to boss: the writer is away")

	code, _, _ = f.post("instances/"+held+"/cancel", nil)
	require.Equal(t, 303, code)
	_, body, _ = f.get("instances/" + held)
	assert.Contains(t, body, "status-cancelled")
	assert.Contains(t, body, "class APPROVAL failed")
}

func TestActions_RefuseAnotherOrigin(t *testing.T) {
	f := newFixture(t)
	id := f.start("", map[string]any{"text": "x"})
	f.waitState(id, "APPROVAL")
	code, _, _ := f.post("instances/"+id+"/cancel", nil, "Origin", "https://evil.example")
	assert.Equal(t, 403, code)
	code, _, _ = f.post("instances/"+id+"/cancel", nil, "Sec-Fetch-Site", "cross-site")
	assert.Equal(t, 403, code)
	f.waitState(id, "APPROVAL")
}

func TestAuth_AsksForTheTokenOnceAndKeepsItInACookie(t *testing.T) {
	f := newFixture(t, webview.WithTokenCheck(func(tok string) bool { return tok == "s3cret" }))
	id := f.start("", map[string]any{"text": "x"})
	f.waitState(id, "APPROVAL")

	code, _, hdr := f.get("instances/" + id)
	require.Equal(t, 303, code)
	assert.Equal(t, "/ui/login?next="+url.QueryEscape("/ui/instances/"+id), hdr.Get("Location"))
	for _, path := range []string{"?fragment=rows", "events", "instances/" + id + "/history.json?fragment=x"} {
		code, _, _ = f.get(path)
		assert.Equal(t, 401, code, path)
	}
	code, _, _ = f.post("instances/"+id+"/cancel", nil)
	assert.Equal(t, 401, code)
	code, _, _ = f.get("static/htmx.min.js")
	assert.Equal(t, 200, code, "the libraries need no token")

	code, body, hdr := f.post("login", url.Values{"token": {"wrong"}, "next": {"/ui/instances/" + id}})
	assert.Equal(t, 401, code)
	assert.Contains(t, body, "That token is not valid.")
	assert.Empty(t, hdr.Values("Set-Cookie"))

	code, _, hdr = f.post("login", url.Values{"token": {" s3cret "}, "next": {"https://evil.example/"}})
	require.Equal(t, 303, code)
	assert.Equal(t, "/ui/", hdr.Get("Location"), "never sent to another site")
	cookie := hdr.Get("Set-Cookie")
	assert.Contains(t, cookie, webview.TokenCookie+"=s3cret")
	assert.Contains(t, cookie, "HttpOnly")
	assert.Contains(t, cookie, "SameSite=Strict")
	assert.Contains(t, cookie, "Path=/ui/")

	code, body, _ = f.get("instances/"+id, "Cookie", webview.TokenCookie+"=s3cret")
	require.Equal(t, 200, code)
	assert.Contains(t, body, id)
	code, _, _ = f.get("", "Cookie", webview.TokenCookie+"=nope")
	assert.Equal(t, 303, code)
	code, _, _ = f.post("instances/"+id+"/signal", url.Values{"name": {"approve"}}, "Cookie", webview.TokenCookie+"=s3cret")
	assert.Equal(t, 303, code)
	f.waitState(id, "DONE")
}

// The event stream says "changed" when an instance moves, and ends when
// the backend shuts down: nothing waits for a timeout.
func TestEvents_StreamChangesAndEndOnClose(t *testing.T) {
	f := newFixture(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", f.base+"events", nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode)
	assert.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	lines := bufio.NewScanner(resp.Body)
	require.True(t, lines.Scan())
	assert.Equal(t, ": baton web view", lines.Text())

	f.start("", map[string]any{"text": "x"})
	got := false
	for lines.Scan() {
		if lines.Text() == "event: changed" {
			got = true
			break
		}
	}
	require.True(t, got, "no changed event: %v", lines.Err())

	f.local.Close()
	for lines.Scan() {
	}
	assert.NoError(t, ctx.Err(), "the stream ended by the deadline, not by the close")
}
