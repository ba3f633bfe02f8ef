package webview_test

import (
	"context"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/registry"
)

// The list's Waiting on column names the agent at work or the signals a
// wait takes.
func listShowsWhatEachInstanceWaitsOn(b *browser, f *fixture) {
	t := b.T
	f.waitState(f.start("wo-wait", map[string]any{"text": "x"}), "APPROVAL")
	f.waitState(f.start("wo-run", map[string]any{"mode": "hold"}), "WRITING")
	b.Do(chromedp.Navigate(f.base+"?id=wo-"), chromedp.WaitVisible(`tr[id="row-wo-run"]`))
	assert.Equal(t, "Waiting on", eval[string](b, `document.querySelectorAll("table.instances thead th")[4].textContent`))
	assert.Equal(t, "signal approve|reject", eval[string](b, `document.querySelector('tr[id="row-wo-wait"] td.waiting-on').textContent`))
	assert.Equal(t, "writer", eval[string](b, `document.querySelector('tr[id="row-wo-run"] td.waiting-on').textContent`))
}

// A cancelled instance is grey in the list, with no error: a cancel is no
// failure.
func cancelledInstanceIsGrey(b *browser, f *fixture) {
	t := b.T
	id := f.start("grey-1", map[string]any{"mode": "hold"})
	f.waitState(id, "WRITING")
	h, err := f.eng.Instance(id)
	require.NoError(t, err)
	require.NoError(t, h.CancelWith(context.Background(), "sent twice"))
	b.Do(chromedp.Navigate(f.base+"?id=grey-"), chromedp.WaitVisible(`tr[id="row-grey-1"][data-status="cancelled"]`))
	assert.Equal(t, "rgb(55, 65, 81)", eval[string](b, `getComputedStyle(document.querySelector('tr[id="row-grey-1"] .status')).color`))
	assert.Equal(t, "rgb(229, 231, 235)", eval[string](b, `getComputedStyle(document.querySelector('tr[id="row-grey-1"] .status')).backgroundColor`))
	assert.Empty(t, eval[string](b, `document.querySelector('tr[id="row-grey-1"] td.err').textContent`))
	assert.Empty(t, eval[string](b, `document.querySelector('tr[id="row-grey-1"] td.waiting-on').textContent`), "a cancelled instance waits on nothing")
}

// The box atop the instance page says what it waits on, and shows the
// run's progress as it comes.
func waitingBoxShowsLiveProgress(b *browser, f *fixture) {
	t := b.T
	id := f.start("", map[string]any{"mode": "stream"})
	b.Do(chromedp.Navigate(f.base+"instances/"+id), chromedp.WaitVisible(`#waiting-on`), live())
	box := eval[string](b, `document.getElementById("waiting-on").textContent`)
	assert.Contains(t, box, "writer (step 1, attempt 1, go)")
	assert.Contains(t, box, "since ")
	assert.NotContains(t, box, "deadline", "WRITING has no timeout")
	assert.Equal(t, 0, eval[int](b, `document.querySelectorAll("#waiting-on .no-consumer").length`), "a Go handler always has its worker")

	require.NoError(t, f.eng.Progress(context.Background(), id, 1, "writer", registry.Progress{Message: "reading <the> brief"}))
	b.Do(chromedp.Poll[chromedp.Void](`document.querySelector("#waiting-on .pending-progress")?.textContent === "reading <the> brief"`, chromedp.WithPollingInterval(20*time.Millisecond)))

	f.answer <- registry.Outcome{Trigger: "written", Result: map[string]any{"text": "done"}}
	b.Do(chromedp.Poll[chromedp.Void](`document.querySelector("#waiting-on .pending-wait") !== null`, chromedp.WithPollingInterval(20*time.Millisecond)))
	box = eval[string](b, `document.getElementById("waiting-on").textContent`)
	assert.Contains(t, box, "signal approve | reject")
	assert.Contains(t, box, "deadline", "APPROVAL has a timeout")
}

// The Agents page, linked from the nav, lists every agent.
func agentsPageListsTheAgents(b *browser, f *fixture) {
	t := b.T
	b.Do(chromedp.Navigate(f.base), chromedp.WaitVisible(`nav a[href="/ui/agents"]`), chromedp.Click(`nav a[href="/ui/agents"]`), chromedp.WaitVisible(`table.agents`))
	assert.Equal(t, "page", eval[string](b, `document.querySelector('nav a[href="/ui/agents"]').getAttribute("aria-current")`))
	assert.Equal(t, []string{"agent-boss", "agent-writer"}, eval[[]string](b, `Array.from(document.querySelectorAll("table.agents tbody tr")).map(r => r.id)`))
	assert.Equal(t, "go", eval[string](b, `document.querySelector("#agent-writer").dataset.kind`))
	assert.Equal(t, "desk", eval[string](b, `document.querySelector("#agent-writer td:nth-child(3)").textContent`))
}
