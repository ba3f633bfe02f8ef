package webview_test

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"image/png"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/browsertest"
	"github.com/batonhq/baton/record"
	"github.com/batonhq/baton/registry"
)

// browser is a headless chromium tab (package internal/browsertest).
type browser = browsertest.Browser

func newBrowser(t *testing.T) *browser { return browsertest.New(t) }

// eval evaluates a JavaScript expression.
func eval[T any](b *browser, expr string) T {
	b.T.Helper()
	return browsertest.Eval[T](b, expr)
}

// live waits until the page's event stream is open.
func live() chromedp.Action[chromedp.Void] {
	return chromedp.Poll[chromedp.Void](`document.body.dataset.live === "open"`, chromedp.WithPollingInterval(20*time.Millisecond))
}

// The browser tests share one chromium and one engine: starting a browser
// is the slow part.
func TestBrowser(t *testing.T) {
	f := newFixture(t)
	b := newBrowser(t)
	t.Run("ListShowsANewInstanceLive", func(t *testing.T) { listShowsANewInstanceLive(b.In(t), f.in(t)) })
	t.Run("DiagramMarksTheCurrentState", func(t *testing.T) { diagramMarksTheCurrentState(b.In(t), f.in(t)) })
	t.Run("SignalFromThePageMovesTheInstanceOn", func(t *testing.T) { signalFromThePageMovesTheInstanceOn(b.In(t), f.in(t)) })
	t.Run("HostileResultIsShownAsText", func(t *testing.T) { hostileResultIsShownAsText(b.In(t), f.in(t)) })
	t.Run("InstancePageFollowsItsInstance", func(t *testing.T) { instancePageFollowsItsInstance(b.In(t), f.in(t)) })
	t.Run("InstancePageStreamsProgressThenShowsUsage", func(t *testing.T) { instancePageStreamsProgressThenShowsUsage(b.In(t), f.in(t)) })
	t.Run("ListShowsWhatEachInstanceWaitsOn", func(t *testing.T) { listShowsWhatEachInstanceWaitsOn(b.In(t), f.in(t)) })
	t.Run("CancelledInstanceIsGrey", func(t *testing.T) { cancelledInstanceIsGrey(b.In(t), f.in(t)) })
	t.Run("WaitingBoxShowsLiveProgress", func(t *testing.T) { waitingBoxShowsLiveProgress(b.In(t), f.in(t)) })
	t.Run("AgentsPageListsTheAgents", func(t *testing.T) { agentsPageListsTheAgents(b.In(t), f.in(t)) })
	t.Run("Screenshots", func(t *testing.T) { takeScreenshots(b.In(t)) })
}

// screenshots is where TestBrowser writes the pages' screenshots for the
// docs (go generate ./webview); without it they go to a temporary
// directory, and are still checked.
var screenshots = flag.String("screenshots", "", "write the pages' screenshots (PNG) to this directory")

// takeScreenshots draws every page of a small demo and keeps a PNG of each.
func takeScreenshots(b *browser) {
	t := b.T
	dir := *screenshots
	if dir == "" {
		dir = t.TempDir()
	}
	require.NoError(t, os.MkdirAll(dir, 0o755))
	f := newFixture(t)
	ctx := context.Background()
	for id, input := range map[string]map[string]any{
		"req-1001": {"text": "New laptop for the support team"},
		"req-1002": {"text": "Conference tickets"},
		"req-1003": {"text": "Renew the on-call pager licence"},
		"req-1004": {"text": "Two more GPU nodes"},
		"req-1005": {"text": "Translate the handbook", "mode": "fail"},
		"req-1006": {"text": "Quarterly report", "mode": "hold"},
		"req-1007": {"text": "Office plants"},
	} {
		f.start(id, input)
	}
	for _, id := range []string{"req-1001", "req-1002", "req-1003", "req-1004", "req-1007"} {
		f.waitState(id, "APPROVAL")
	}
	require.NoError(t, f.eng.Signal(ctx, "req-1001", "approve", map[string]any{"by": "dana"}))
	require.NoError(t, f.eng.Signal(ctx, "req-1002", "reject", map[string]any{"by": "sam", "why": "over budget"}))
	h, err := f.eng.Instance("req-1007")
	require.NoError(t, err)
	require.NoError(t, h.Cancel(ctx))
	f.waitState("req-1001", "DONE")
	f.waitState("req-1002", "REJECTED")
	for k, reason := range []string{"ttl_expired", "rejected"} {
		require.NoError(t, f.store.AddDeadLetter(ctx, record.DeadLetter{
			MessageID: fmt.Sprintf("msg-%d", k+1), Type: "HANDOFF", From: "writer", To: "boss", Reason: reason,
			Instance: "req-1006", Step: 1, At: time.Now(), Attempts: k + 1, LastError: "the boss's mailbox is full",
			Content: map[string]any{"task_description": "Quarterly report"},
		}))
	}
	drawn := chromedp.Poll[chromedp.Void](`document.body.dataset.diagrams === "drawn"`)
	for _, shot := range []struct {
		name, path string
		ready      chromedp.Action[chromedp.Void]
	}{
		{"web-instances.png", "", chromedp.WaitVisible(`tr[id="row-req-1007"]`)},
		{"web-instance.png", "instances/req-1003", drawn},
		{"web-instance-failed.png", "instances/req-1005", drawn},
		{"web-dead-letters.png", "dead-letters", chromedp.WaitVisible(`table.dead-letters`)},
		{"web-workflows.png", "workflows", chromedp.WaitVisible(`table.workflows`)},
		{"web-workflow.png", "workflows/desk", drawn},
	} {
		b.Do(chromedp.Navigate(f.base+shot.path), shot.ready)
		ctx, cancel := context.WithTimeout(b.Ctx, time.Minute)
		data, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		cancel()
		require.NoError(t, err, shot.name)
		img, err := png.Decode(bytes.NewReader(data))
		require.NoError(t, err, shot.name)
		assert.Equal(t, 1280, img.Bounds().Dx(), shot.name)
		require.NoError(t, os.WriteFile(filepath.Join(dir, shot.name), data, 0o644))
	}
	b.Do(chromedp.Navigate("about:blank"))
}

func listShowsANewInstanceLive(b *browser, f *fixture) {
	t := b.T
	f.waitState(f.start("list-1", map[string]any{"text": "x"}), "APPROVAL")
	b.Do(chromedp.Navigate(f.base+"?id=list-"), chromedp.WaitVisible(`tr[id="row-list-1"]`), live())
	f.start("list-2", map[string]any{"text": "y"})
	b.Do(chromedp.WaitVisible(`tr[id="row-list-2"][data-status="waiting"]`))
	assert.Equal(t, 2, eval[int](b, `document.querySelectorAll("#rows tr[id^=row-]").length`))
}

func diagramMarksTheCurrentState(b *browser, f *fixture) {
	t := b.T
	id := f.start("", map[string]any{"text": "x"})
	f.waitState(id, "APPROVAL")
	b.Do(chromedp.Navigate(f.base+"instances/"+id), chromedp.Poll[chromedp.Void](`document.body.dataset.diagrams === "drawn"`))
	current := eval[[]string](b, `Array.from(document.querySelectorAll("#diagram svg g.current")).map(g => g.textContent.trim())`)
	require.Len(t, current, 1, "one state marked current")
	assert.Contains(t, current[0], "APPROVAL")
	visited := eval[[]string](b, `Array.from(document.querySelectorAll("#diagram svg g.visited")).map(g => g.textContent.trim())`)
	require.Len(t, visited, 1)
	assert.Contains(t, visited[0], "WRITING (agent writer)", "the state's name stays in its box")
}

func signalFromThePageMovesTheInstanceOn(b *browser, f *fixture) {
	t := b.T
	id := f.start("", map[string]any{"text": "x"})
	f.waitState(id, "APPROVAL")
	b.Do(
		chromedp.Navigate(f.base+"instances/"+id),
		chromedp.WaitVisible(`form.signal`),
		chromedp.SetValue(`form.signal select[name=name]`, "reject"),
		chromedp.SetValue(`form.signal textarea[name=data]`, `{"why": "too late"}`),
		chromedp.Click(`form.signal button`),
		chromedp.WaitVisible(`#status .status-completed`),
	)
	f.waitState(id, "REJECTED")
	assert.Equal(t, "REJECTED", eval[string](b, `document.getElementById("state").textContent`))
	assert.Contains(t, eval[string](b, `document.body.textContent`), "signal reject received")
}

// The instance's page redraws itself when its instance moves; the details
// an operator opened stay open.
func instancePageFollowsItsInstance(b *browser, f *fixture) {
	t := b.T
	id := f.start("", map[string]any{"mode": "hold"})
	f.waitState(id, "WRITING")
	b.Do(chromedp.Navigate(f.base+"instances/"+id), chromedp.WaitVisible(`form.select`), live(),
		chromedp.Click(`#entry-2 summary`), chromedp.Poll[chromedp.Void](`document.getElementById("entry-2").open`))
	h, err := f.eng.Instance(id)
	require.NoError(t, err)
	require.NoError(t, h.Select(context.Background(), "boss", "the writer is away"))
	b.Do(chromedp.Poll[chromedp.Void](`document.getElementById("state").textContent === "APPROVAL"`))
	assert.True(t, eval[bool](b, `document.getElementById("entry-2").open`), "the opened details closed")
	assert.Contains(t, eval[string](b, `document.body.textContent`), "a user handed the step from writer to boss")
}

// A long model call shows its message and its streamed text as they
// come, then the usage of its report.
func instancePageStreamsProgressThenShowsUsage(b *browser, f *fixture) {
	t := b.T
	ctx := context.Background()
	id := f.start("", map[string]any{"mode": "stream"})
	b.Do(chromedp.Navigate(f.base+"instances/"+id), chromedp.WaitVisible(`#state`), live())
	require.Equal(t, 0, eval[int](b, `document.querySelectorAll("#progress").length`))

	require.NoError(t, f.eng.Progress(ctx, id, 1, "writer", registry.Progress{Message: "searching flights"}))
	b.Do(chromedp.Poll[chromedp.Void](`document.querySelector("#progress-1 .progress-message")?.textContent === "searching flights"`, chromedp.WithPollingInterval(20*time.Millisecond)))
	for _, delta := range []string{"Three flights ", "leave before noon", "."} {
		require.NoError(t, f.eng.Progress(ctx, id, 1, "writer", registry.Progress{Delta: delta}))
	}
	b.Do(chromedp.Poll[chromedp.Void](`document.querySelector("#progress-1 .progress-text")?.textContent === "Three flights leave before noon."`, chromedp.WithPollingInterval(20*time.Millisecond)))
	assert.Equal(t, "searching flights", eval[string](b, `document.querySelector("#progress-1 .progress-message").textContent`), "the message stays")

	f.answer <- registry.Outcome{Trigger: "written", Result: map[string]any{"text": "Three flights"}, Usage: registry.Usage{InputTokens: 900, OutputTokens: 120, Cost: 0.02, Model: "small"}}
	b.Do(chromedp.Poll[chromedp.Void](`document.getElementById("usage") !== null && document.getElementById("progress") === null`, chromedp.WithPollingInterval(20*time.Millisecond)))
	usage := eval[string](b, `document.getElementById("usage").textContent`)
	assert.Contains(t, usage, "900 tokens in, 120 out, cost 0.02")
	assert.Contains(t, usage, "writer: 900 in, 120 out, cost 0.02")
	assert.Equal(t, "APPROVAL", eval[string](b, `document.getElementById("state").textContent`))
}

func hostileResultIsShownAsText(b *browser, f *fixture) {
	t := b.T
	hostile := `<script>window.pwned = 1</script>"><img src=x onerror="window.pwned = 2">`
	id := f.start("", map[string]any{"text": hostile})
	f.waitState(id, "APPROVAL")
	b.Do(chromedp.Navigate(f.base+"instances/"+id), chromedp.Poll[chromedp.Void](`document.body.dataset.diagrams === "drawn"`), live())
	assert.True(t, eval[bool](b, `window.pwned === undefined`), "the hostile string ran")
	assert.Equal(t, 0, eval[int](b, `document.querySelectorAll("main img, main script").length`))
	shown := eval[string](b, `document.getElementById("context").textContent`)
	assert.Contains(t, shown, `<script>window.pwned = 1</script>`)
	assert.Contains(t, shown, `<img src=x onerror=\"window.pwned = 2\">`)
	// A live update redraws the page from the server: still text.
	f.start("other", map[string]any{"text": hostile})
	b.Do(chromedp.Navigate(f.base), chromedp.WaitVisible(`tr[id="row-other"]`))
	assert.True(t, eval[bool](b, `window.pwned === undefined`))
}
