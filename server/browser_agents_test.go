package server_test

import (
	"context"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/browsertest"
	"github.com/batonhq/baton/natsbus"
)

// An instance whose NATS agent nobody serves says so on its page and on
// the Agents page, until a consumer takes the work.
func TestBrowser_NoLiveConsumerIsSaid(t *testing.T) {
	f := newFixture(t)
	code, _ := f.do("POST", "/v1/workflows/echo/instances", map[string]any{"id": "lonely"})
	require.Equal(t, 201, code)
	f.waitStatus("lonely", "running")
	b := browsertest.New(t)

	b.Do(chromedp.Navigate(f.http.URL+"/ui/instances/lonely"), chromedp.WaitVisible(`#waiting-on`))
	box := browsertest.Eval[string](b, `document.getElementById("waiting-on").textContent`)
	assert.Contains(t, box, "worker (step 1, attempt 1, nats)")
	assert.Contains(t, box, "no live consumer for worker")

	b.Do(chromedp.Navigate(f.http.URL+"/ui/agents"), chromedp.WaitVisible(`#agent-worker`))
	assert.Equal(t, "no live consumer", browsertest.Eval[string](b, `document.querySelector("#agent-worker .not-live").textContent`))
	assert.Equal(t, "1", browsertest.Eval[string](b, `document.querySelector("#agent-worker .queued").textContent`))
	assert.Equal(t, "http", browsertest.Eval[string](b, `document.querySelector("#agent-writer").dataset.kind`))

	// A consumer takes the work.
	nc, err := nats.Connect(f.srv.NATSURL())
	require.NoError(t, err)
	defer nc.Close()
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	stream, err := js.Stream(ctx, natsbus.WorkStream("worker"))
	require.NoError(t, err)
	cons, err := stream.Consumer(ctx, "normal")
	require.NoError(t, err)
	msg, err := cons.Next(jetstream.FetchMaxWait(5 * time.Second))
	require.NoError(t, err)
	require.NotNil(t, msg)

	b.Do(chromedp.Navigate(f.http.URL+"/ui/agents"), chromedp.WaitVisible(`#agent-worker .live`))
	assert.Equal(t, "1", browsertest.Eval[string](b, `document.querySelector("#agent-worker .in-flight").textContent`))
	b.Do(chromedp.Navigate(f.http.URL+"/ui/instances/lonely"), chromedp.WaitVisible(`#waiting-on`))
	assert.Equal(t, 0, browsertest.Eval[int](b, `document.querySelectorAll("#waiting-on .no-consumer").length`))
	b.Do(chromedp.Navigate("about:blank"))
}
