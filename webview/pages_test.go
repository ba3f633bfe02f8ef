package webview_test

import (
	"context"
	"encoding/json"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/record"
	"github.com/batonhq/baton/replay"
	"github.com/batonhq/baton/rules"
)

func TestInstancesPage_ListsFiltersAndPages(t *testing.T) {
	f := newFixture(t)
	a := f.start("alpha-1", map[string]any{"text": "first"})
	b := f.start("alpha-2", map[string]any{"text": "second"})
	c := f.start("beta-1", map[string]any{"text": "third"})
	for _, id := range []string{a, b, c} {
		f.waitState(id, "APPROVAL")
	}
	code, body, _ := f.get("")
	require.Equal(t, 200, code)
	for _, id := range []string{a, b, c} {
		assert.Contains(t, body, `href="/ui/instances/`+id+`"`)
	}
	assert.Contains(t, body, "desk</a>@2")
	assert.Contains(t, body, `status-waiting`)
	assert.Contains(t, body, `sse-connect="/ui/events"`)

	code, body, _ = f.get("?id=alpha")
	require.Equal(t, 200, code)
	assert.Contains(t, body, a)
	assert.NotContains(t, body, c)

	for query, want := range map[string]int{
		"?status=waiting&workflow=desk&version=2&state=APPROVAL": 3,
		"?status=completed":       0,
		"?version=1":              0,
		"?since=2000-01-01T00:00": 3,
		"?until=2000-01-01T00:00": 0,
		"?since=" + url.QueryEscape(time.Now().Add(time.Hour).UTC().Format(time.RFC3339)): 0,
	} {
		code, body, _ := f.get(query)
		require.Equal(t, 200, code, query)
		assert.Equal(t, want, strings.Count(body, `<tr id="row-`), query)
	}

	// Paging: one a page, the next link carries the filters and the cursor.
	seen := map[string]bool{}
	path := "?limit=1&workflow=desk"
	for range 4 {
		code, body, _ := f.get(path)
		require.Equal(t, 200, code)
		require.Equal(t, 1, strings.Count(body, `<tr id="row-`), body)
		for _, id := range []string{a, b, c} {
			if strings.Contains(body, `id="row-`+id+`"`) {
				assert.False(t, seen[id], "instance %s on two pages", id)
				seen[id] = true
			}
		}
		i := strings.Index(body, `<tr class="more"><td colspan="10"><a href="/ui/?`)
		if i < 0 {
			break
		}
		rest := body[i+len(`<tr class="more"><td colspan="10"><a href="/ui/`):]
		path = strings.ReplaceAll(rest[:strings.Index(rest, `"`)], "&amp;", "&")
		assert.Contains(t, path, "workflow=desk")
	}
	assert.Len(t, seen, 3)

	// The rows fragment is what the live update swaps in.
	code, body, _ = f.get("?fragment=rows&id=beta")
	require.Equal(t, 200, code)
	assert.True(t, strings.HasPrefix(body, `<tbody id="rows"`), body)
	assert.NotContains(t, body, "<html")
	assert.Contains(t, body, c)
}

func TestInstancesPage_BadFilterNamesTheField(t *testing.T) {
	f := newFixture(t)
	for query, field := range map[string]string{
		"?version=two":        "version",
		"?version=0":          "version",
		"?status=sleeping":    "status",
		"?since=yesterday":    "since",
		"?limit=100000":       "limit",
		"?until=2020-13-45T1": "until",
	} {
		code, body, _ := f.get(query)
		assert.Equal(t, 400, code, query)
		assert.Contains(t, body, field+" must", query)
	}
	code, body, _ := f.get("?cursor=not-a-cursor")
	assert.Equal(t, 503, code, body)
}

func TestInstancePage_ShowsDiagramTimelineContextAndHistory(t *testing.T) {
	f := newFixture(t)
	id := f.start("", map[string]any{"text": "please approve"})
	f.waitState(id, "APPROVAL")
	code, body, hdr := f.get("instances/" + id)
	require.Equal(t, 200, code)
	assert.Contains(t, hdr.Get("Content-Security-Policy"), "script-src 'self'")
	assert.Contains(t, body, `<pre class="mermaid" id="diagram">`)
	assert.Contains(t, body, `state &#34;WRITING (agent writer)&#34; as WRITING`)
	assert.Contains(t, body, "class APPROVAL current")
	assert.Contains(t, body, "class WRITING visited")
	assert.Contains(t, body, `<strong id="current-state">APPROVAL</strong>`)
	assert.Contains(t, body, "writer reported written")
	assert.Contains(t, body, "rule written fired (p5) → APPROVAL")
	assert.Contains(t, body, "waiting for approve, reject (timeout 1h0m0s)")
	assert.Contains(t, body, "please approve")
	assert.Contains(t, body, `action="/ui/instances/`+id+`/signal"`)
	assert.Contains(t, body, "<option>approve</option><option>reject</option>")
	assert.Contains(t, body, `sse-connect="/ui/events?instance=`+id+`"`)

	code, data, hdr := f.get("instances/" + id + "/history.json")
	require.Equal(t, 200, code)
	assert.Contains(t, hdr.Get("Content-Disposition"), "attachment")
	var entries []record.Entry
	require.NoError(t, json.Unmarshal([]byte(data), &entries))
	want, err := f.store.History(context.Background(), id)
	require.NoError(t, err)
	require.Len(t, entries, len(want))
	assert.Equal(t, want[0].Kind, entries[0].Kind)
	// The download is what wfrun replay reads, and replays as recorded.
	read, err := replay.ReadHistory(strings.NewReader(data))
	require.NoError(t, err)
	w, err := rules.Parse("desk.yaml", []byte(deskFlow))
	require.NoError(t, err)
	rep, err := replay.Check(w, read)
	require.NoError(t, err)
	assert.NotEmpty(t, rep.Steps)
	assert.Nil(t, rep.Divergence)

	code, body, _ = f.get("instances/" + id + "?fragment=live")
	require.Equal(t, 200, code)
	assert.True(t, strings.HasPrefix(body, `<div id="live"`), body)

	code, _, _ = f.get("instances/nope")
	assert.Equal(t, 404, code)
	code, _, _ = f.get("instances/nope/history.json")
	assert.Equal(t, 404, code)
}

// Hostile strings from user data (an id, the input, a result) are shown as
// text, never as markup.
func TestPages_EscapeUserData(t *testing.T) {
	f := newFixture(t)
	hostile := `<script>alert("x")</script>"><img src=x onerror=alert(1)>`
	id := f.start(`"><img src=x onerror=alert(2)>`, map[string]any{"text": hostile})
	f.waitState(id, "APPROVAL")
	for _, path := range []string{"", "?fragment=rows", "instances/" + url.PathEscape(id), "instances/" + url.PathEscape(id) + "?fragment=live"} {
		code, body, _ := f.get(path)
		require.Equal(t, 200, code, path)
		assert.NotContains(t, body, "<script>alert", path)
		assert.NotContains(t, body, "<img", path)
	}
	_, body, _ := f.get("instances/" + url.PathEscape(id))
	assert.Contains(t, body, `&lt;script&gt;alert(\&#34;x\&#34;)&lt;/script&gt;\&#34;&gt;&lt;img src=x onerror=alert(1)&gt;`)
	assert.Contains(t, body, `<code>&#34;&gt;&lt;img src=x onerror=alert(2)&gt;</code>`)
	assert.Contains(t, body, `href="/ui/instances/%22%3E%3Cimg%20src=x%20onerror=alert%282%29%3E/history.json"`)
}

func TestDeadLettersPage_FiltersByReasonAndLinksInstances(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	for k, reason := range []string{"ttl_expired", "rejected", "ttl_expired"} {
		require.NoError(t, f.store.AddDeadLetter(ctx, record.DeadLetter{
			MessageID: "m" + string(rune('a'+k)), Type: "HANDOFF", From: "writer", To: "boss", Reason: reason,
			Instance: "inst-" + string(rune('a'+k)), Step: 1, At: time.Now(), Attempts: k + 1, LastError: "<b>gone</b>",
		}))
	}
	code, body, _ := f.get("dead-letters")
	require.Equal(t, 200, code)
	assert.Equal(t, 3, strings.Count(body, `href="/ui/instances/inst-`))
	assert.Contains(t, body, "&lt;b&gt;gone&lt;/b&gt;")
	code, body, _ = f.get("dead-letters?reason=rejected")
	require.Equal(t, 200, code)
	assert.Equal(t, 1, strings.Count(body, `href="/ui/instances/inst-`))
	assert.Contains(t, body, `href="/ui/instances/inst-b"`)
	code, _, _ = f.get("dead-letters?cursor=x")
	assert.Equal(t, 400, code)
}

func TestWorkflowPages_ShowVersionsSourceDiagramAndCounts(t *testing.T) {
	f := newFixture(t)
	f.waitState(f.start("", map[string]any{"text": "x"}), "APPROVAL")
	code, body, _ := f.get("workflows")
	require.Equal(t, 200, code)
	assert.Contains(t, body, `href="/ui/workflows/desk"`)
	assert.Contains(t, body, "A request written, then approved by a person")
	assert.Contains(t, body, `href="/ui/?workflow=desk&amp;version=2">1</a>`)
	code, body, _ = f.get("workflows/desk?version=2")
	require.Equal(t, 200, code)
	assert.Contains(t, body, "stateDiagram-v2")
	assert.Contains(t, body, "APPROVAL: {wait: {signals: [approve, reject]}, timeout: 1h}")
	// What wfrun check proves of the version, finding by finding.
	assert.Contains(t, body, "states 4/4 reachable, outcomes [DONE REJECTED], worst case 1 run")
	assert.Contains(t, body, "<code>desk.yaml:10:3</code> APPROVAL: outcome timeout matches no rule")
	assert.Contains(t, body, "state WRITING runs agent writer with no timeout and no heartbeat")
	code, _, _ = f.get("workflows/nope")
	assert.Equal(t, 404, code)
	code, _, _ = f.get("workflows/desk?version=9")
	assert.Equal(t, 404, code)
}

func TestStatic_ServesTheVendoredLibraries(t *testing.T) {
	f := newFixture(t)
	for _, name := range []string{"htmx.min.js", "sse.min.js", "mermaid.min.js", "app.js", "app.css"} {
		code, body, hdr := f.get("static/" + name)
		require.Equal(t, 200, code, name)
		assert.NotEmpty(t, body, name)
		assert.NotEmpty(t, hdr.Get("Content-Type"), name)
	}
	code, _, _ := f.get("static/nope.js")
	assert.Equal(t, 404, code)
	code, _, _ = f.get("no/such/page")
	assert.Equal(t, 404, code)
}
