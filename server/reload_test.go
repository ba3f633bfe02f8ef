package server_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/batonhq/baton/server"
)

// reloadFixture is a server over a directory holding reviewFlow, and a
// count of the changes its subscribers were told of.
type reloadFixture struct {
	*fixture
	dir     string
	changes atomic.Int32
	changed chan struct{}
}

func newReloadFixture(t *testing.T, opts ...option) *reloadFixture {
	t.Helper()
	r := &reloadFixture{changed: make(chan struct{}, 16)}
	opts = append([]option{func(c *server.Config) {
		r.dir = c.WorkflowsDir // review.yaml and echo.yaml: echo is added later
		require.NoError(t, os.Remove(filepath.Join(r.dir, "echo.yaml")))
		c.WatchEvery = -1
	}}, opts...)
	r.fixture = newFixture(t, opts...)
	stop := r.srv.OnWorkflowsChanged(func() {
		r.changes.Add(1)
		r.changed <- struct{}{}
	})
	t.Cleanup(stop)
	return r
}

// write replaces a workflow file, the agents' URL filled in.
func (r *reloadFixture) write(name, src string) {
	r.t.Helper()
	src = strings.ReplaceAll(src, "AGENTS", r.agents.srv.URL)
	require.NoError(r.t, os.WriteFile(filepath.Join(r.dir, name), []byte(src), 0o600))
}

// start starts an instance of review that waits for its writer's report.
func (r *reloadFixture) start(id string) map[string]any {
	r.t.Helper()
	code, body := r.do("POST", "/v1/workflows/review/instances", map[string]any{"id": id, "input": map[string]any{"mode": "hold", "approve": true}})
	require.Equal(r.t, 201, code, "%v", body)
	return body
}

// finish reports the writer's draft of instance id: the checker approves.
func (r *reloadFixture) finish(id string) {
	r.t.Helper()
	code, body := r.do("POST", "/v1/reports", map[string]any{"instance_id": id, "step": 1, "agent": "writer", "trigger": "drafted"})
	require.Equal(r.t, 200, code)
	require.Equal(r.t, true, body["ok"], "%v", body)
}

// versions is what GET /v1/workflows says of review's versions.
func (r *reloadFixture) versions() []map[string]any {
	r.t.Helper()
	code, body := r.do("GET", "/v1/workflows", nil)
	require.Equal(r.t, 200, code)
	for _, w := range body["workflows"].([]any) {
		if w := w.(map[string]any); w["name"] == "review" {
			var out []map[string]any
			for _, v := range w["versions"].([]any) {
				out = append(out, v.(map[string]any))
			}
			return out
		}
	}
	r.t.Fatalf("no workflow review in %v", body)
	return nil
}

// waitChange waits for the subscribers to be told of a change.
func (r *reloadFixture) waitChange() {
	r.t.Helper()
	select {
	case <-r.changed:
	case <-time.After(20 * time.Second): // a bound, not a timing assertion
		r.t.Fatal("the workflows' change was not told")
	}
}

var (
	reviewV2 = strings.Replace(reviewFlow, "version: 1", "version: 2", 1)
	// reviewV2b is another source with version 2: an approval rejects.
	reviewV2b = strings.Replace(reviewV2, "{id: approved, from: checker, trigger: approved, next: DONE}",
		"{id: approved, from: checker, trigger: approved, next: REJECTED}", 1)
	// reviewBroken names an initial state that does not exist.
	reviewBroken = strings.Replace(strings.Replace(reviewFlow, "version: 1", "version: 3", 1), "initial: DRAFTING", "initial: DRAFTNG", 1)
)

// Files added, changed and broken while instances run: each valid change
// is current for new starts, a broken file keeps the version before it,
// and every instance finishes on the version it started on.
func TestServer_Reload_AddChangeBreakWhileInstancesRun(t *testing.T) {
	r := newReloadFixture(t)
	assert.EqualValues(t, 1, r.start("on-v1")["version"])

	r.write("review.yaml", reviewV2)
	require.NoError(t, r.srv.Reload(context.Background()))
	assert.EqualValues(t, 1, r.changes.Load())
	vs := r.versions()
	require.Len(t, vs, 2)
	assert.EqualValues(t, 2, vs[0]["version"])
	assert.Equal(t, true, vs[0]["current"])
	assert.EqualValues(t, 1, vs[1]["version"])
	assert.Equal(t, false, vs[1]["current"])
	assert.EqualValues(t, 2, r.start("on-v2")["version"])

	// The same version number with another source: told apart by hash.
	r.write("review.yaml", reviewV2b)
	require.NoError(t, r.srv.Reload(context.Background()))
	assert.EqualValues(t, 2, r.changes.Load())
	vs = r.versions()
	require.Len(t, vs, 3)
	assert.EqualValues(t, 2, vs[0]["version"])
	assert.Equal(t, true, vs[0]["current"])
	assert.EqualValues(t, 2, vs[1]["version"])
	assert.Equal(t, false, vs[1]["current"])
	assert.NotEqual(t, vs[0]["hash"], vs[1]["hash"])
	r.start("on-v2b")

	r.write("review.yaml", reviewBroken)
	err := r.srv.Reload(context.Background())
	var we *server.WorkflowError
	require.ErrorAs(t, err, &we)
	assert.Regexp(t, regexp.MustCompile(`review\.yaml:\d+:\d+: .*DRAFTNG`), err.Error(), "the error is positioned")
	assert.EqualValues(t, 2, r.changes.Load(), "a broken file changes nothing")
	assert.Equal(t, vs, r.versions())
	assert.EqualValues(t, 2, r.start("after-break")["version"])

	r.write("review.yaml", reviewV2b) // repaired: the version it was
	r.write("echo.yaml", echoFlow)
	require.NoError(t, r.srv.Reload(context.Background()))
	assert.EqualValues(t, 3, r.changes.Load())
	assert.Equal(t, vs, r.versions())
	code, _ := r.do("GET", "/v1/workflows/echo", nil)
	assert.Equal(t, 200, code)
	require.NoError(t, r.srv.Reload(context.Background()))
	assert.EqualValues(t, 3, r.changes.Load(), "a reload that finds nothing new tells nothing")

	for id, want := range map[string][2]any{
		"on-v1": {1, "DONE"}, "on-v2": {2, "DONE"}, "on-v2b": {2, "REJECTED"}, "after-break": {2, "REJECTED"},
	} {
		r.finish(id)
		got := r.waitStatus(id, "completed")
		assert.EqualValues(t, want[0], got["version"], id)
		assert.Equal(t, want[1], got["outcome"], id)
	}

	// Back to the first source: that version is current again.
	r.write("review.yaml", reviewFlow)
	require.NoError(t, r.srv.Reload(context.Background()))
	vs = r.versions()
	require.Len(t, vs, 3)
	assert.EqualValues(t, 1, vs[0]["version"])
	assert.Equal(t, true, vs[0]["current"])
	assert.Equal(t, false, vs[1]["current"])
	assert.Equal(t, false, vs[2]["current"])
}

// The server notices a changed file by itself, and logs a broken one with
// its positioned errors.
func TestServer_Reload_WatchesTheDirectory(t *testing.T) {
	core, logs := observer.New(zap.InfoLevel)
	r := newReloadFixture(t, func(c *server.Config) {
		c.WatchEvery = 5 * time.Millisecond
		c.Logger = zap.New(core)
	})
	r.write("review.yaml", reviewV2)
	r.waitChange()
	assert.EqualValues(t, 2, r.start("a")["version"])

	r.write("review.yaml", reviewBroken)
	deadline := time.Now().Add(20 * time.Second)
	for logs.FilterMessageSnippet("not loaded").Len() == 0 {
		require.True(t, time.Now().Before(deadline), "the broken file was not logged")
		time.Sleep(2 * time.Millisecond)
	}
	entry := logs.FilterMessageSnippet("not loaded").All()[0]
	assert.Regexp(t, `review\.yaml:\d+:\d+`, entry.ContextMap()["error"])
	assert.EqualValues(t, 2, r.start("b")["version"])
	assert.EqualValues(t, 1, r.changes.Load())
}

// A signal on Config.ReloadOn (SIGHUP in wfrun serve) reloads at once.
func TestServer_Reload_OnSignal(t *testing.T) {
	hup := make(chan os.Signal, 1)
	r := newReloadFixture(t, func(c *server.Config) { c.ReloadOn = hup })
	r.write("review.yaml", reviewV2)
	hup <- syscall.SIGHUP
	r.waitChange()
	assert.EqualValues(t, 2, r.start("a")["version"])
}

// A closed server reloads nothing.
func TestServer_Reload_AfterClose(t *testing.T) {
	r := newReloadFixture(t)
	r.srv.Close()
	assert.True(t, errors.Is(r.srv.Reload(context.Background()), server.ErrStopping))
}
