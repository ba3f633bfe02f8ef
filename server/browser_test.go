package server_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/browsertest"
)

// in is the fixture reporting to t (a subtest).
func (f *fixture) in(t *testing.T) *fixture {
	c := *f
	c.t = t
	return &c
}

// attackPage is what a page of another site can send to a server on
// loopback without asking the user: no-cors fetches, which need no
// permission from the server, with no body or a text/plain one. It notes
// how each fetch ended in the body's data-sent attribute: "opaque" when
// the server answered.
const attackPage = `<!doctype html><title>elsewhere</title><body><script>
const target = %q;
const post = (path, body) => fetch(target + path, body === undefined
  ? {method: "POST", mode: "no-cors"}
  : {method: "POST", mode: "no-cors", headers: {"Content-Type": "text/plain"}, body});
Promise.allSettled([
  post("/v1/workflows/echo/instances"),
  post("/v1/workflows/echo/instances", '{"id": "evil"}'),
  post("/v1/instances/target/cancel"),
  post("/v1/instances/target/signals/go"),
  post("/ui/instances/target/cancel"),
]).then(rs => { document.body.dataset.sent = rs.map(r => r.status === "fulfilled" ? r.value.type : "failed").join(","); });
</script></body>`

// A page of another origin, in a real browser, cannot start or cancel
// instances on a server without tokens, nor read it through a name of its
// own pointed at loopback; the server's own web view still acts.
func TestBrowser_OtherOriginsCannotActOnTheServer(t *testing.T) {
	f := newFixture(t)
	code, _ := f.do("POST", "/v1/workflows/echo/instances", map[string]any{"id": "target"})
	require.Equal(t, 201, code)
	f.waitStatus("target", "running")

	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, attackPage, f.http.URL)
	}))
	t.Cleanup(elsewhere.Close)
	port := func(u string) string { return u[strings.LastIndex(u, ":")+1:] }
	// evil.test stands for an attacker's name whose DNS answers 127.0.0.1.
	b := browsertest.New(t, chromedp.Flag("host-resolver-rules", "MAP evil.test 127.0.0.1"))

	for _, origin := range []struct{ name, url string }{
		{"another site", "http://evil.test:" + port(elsewhere.URL) + "/"},
		{"another port of the same host", elsewhere.URL + "/"},
	} {
		t.Run(origin.name, func(t *testing.T) {
			b, f := b.In(t), f.in(t)
			b.Do(chromedp.Navigate(origin.url),
				chromedp.Poll[chromedp.Void](`document.body.dataset.sent !== undefined`, chromedp.WithPollingInterval(20*time.Millisecond)))
			assert.Equal(t, "opaque,opaque,opaque,opaque,opaque", browsertest.Eval[string](b, `document.body.dataset.sent`),
				"every request reached the server")
			assert.Equal(t, 1, f.count(), "a page of another origin started an instance")
			assert.Equal(t, "running", f.waitStatus("target", "running")["status"])
		})
	}

	t.Run("a name pointed at loopback", func(t *testing.T) {
		b := b.In(t)
		b.Do(chromedp.Navigate("http://evil.test:" + port(f.http.URL) + "/ui/instances/target"))
		assert.Contains(t, browsertest.Eval[string](b, `document.body.textContent`), "forbidden_host")
		b.Do(chromedp.Navigate("http://evil.test:" + port(f.http.URL) + "/v1/instances"))
		assert.NotContains(t, browsertest.Eval[string](b, `document.body.textContent`), "target")
	})

	t.Run("the server's own pages", func(t *testing.T) {
		b, f := b.In(t), f.in(t)
		b.Do(chromedp.Navigate(f.http.URL + "/ui/instances/target"))
		started := browsertest.Eval[int](b, `fetch("/v1/workflows/echo/instances", {method: "POST",
			headers: {"Content-Type": "application/json"}, body: '{"id": "own"}'}).then(r => r.status)`, chromedp.EvalAwaitPromise)
		assert.Equal(t, 201, started, "a start from the server's own origin")
		b.Do(chromedp.Click(`form.cancel button`), chromedp.WaitVisible(`#status .status-cancelled`))
		f.waitStatus("target", "cancelled")
	})
}
