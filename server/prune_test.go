package server_test

import (
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/server"
)

// storeModes are the two stores a server keeps instances in: NATS
// JetStream (the embedded server) and the bbolt file without NATS.
var storeModes = []struct {
	name string
	opts []option
}{
	{"nats", nil},
	{"bbolt", []option{func(c *server.Config) { c.NATS, c.NATSListen = server.NoNATS, "" }}},
}

// finishedAndRunning starts a review instance that completes and an echo
// instance that stays running, and returns their ids.
func finishedAndRunning(t *testing.T, f *fixture) (string, string) {
	t.Helper()
	code, body := f.do("POST", "/v1/workflows/review/instances", map[string]any{"id": "done", "input": map[string]any{"approve": true}})
	require.Equal(t, 201, code)
	f.waitStatus("done", "completed")
	code, body = f.do("POST", "/v1/workflows/echo/instances", map[string]any{"id": "running"})
	require.Equal(t, 201, code, "%v", body)
	return "done", "running"
}

// TestServer_Prune deletes finished instances from a running server's
// store, bbolt or NATS, through the API: never a running one, never one
// updated after the cutoff.
func TestServer_Prune(t *testing.T) {
	for _, m := range storeModes {
		t.Run(m.name, func(t *testing.T) {
			f := newFixture(t, m.opts...)
			done, running := finishedAndRunning(t, f)

			code, body := f.do("POST", "/v1/prune", map[string]any{"before": "2000-01-01T00:00:00Z"})
			require.Equal(t, 200, code, "%v", body)
			assert.EqualValues(t, 0, body["pruned"], "nothing is that old")

			code, body = f.do("POST", "/v1/prune", map[string]any{"older_than": "0s"})
			require.Equal(t, 200, code, "%v", body)
			assert.EqualValues(t, 1, body["pruned"])
			code, _ = f.do("GET", "/v1/instances/"+done, nil)
			assert.Equal(t, 404, code, "the pruned instance")
			code, _ = f.do("GET", "/v1/instances/"+done+"/history", nil)
			assert.Equal(t, 404, code, "the pruned instance's history")
			code, body = f.do("GET", "/v1/instances/"+running, nil)
			require.Equal(t, 200, code)
			assert.Equal(t, "running", body["status"])
			assert.Equal(t, 1, f.count())

			// The server goes on: the pruned id starts a new instance.
			code, _ = f.do("POST", "/v1/workflows/review/instances", map[string]any{"id": done, "input": map[string]any{"approve": true}})
			require.Equal(t, 201, code)
			f.waitStatus(done, "completed")
			started := 0
			for _, e := range f.history(done) {
				if e["kind"] == "started" {
					started++
				}
			}
			assert.Equal(t, 1, started, "the new instance's history holds nothing of the pruned one")
			assert.Equal(t, 2, f.count())
		})
	}
}

func TestServer_Prune_Refused(t *testing.T) {
	f := newFixture(t)
	for _, bad := range []struct {
		body  any
		field string
	}{
		{map[string]any{}, "before"},
		{map[string]any{"before": "yesterday"}, "before"},
		{map[string]any{"older_than": "-1h"}, "older_than"},
		{map[string]any{"older_than": "a month"}, "older_than"},
		{map[string]any{"before": "2026-01-02T15:04:05Z", "older_than": "1h"}, "older_than"},
		{map[string]any{"before": 3}, "before"},
		{map[string]any{"after": "2026-01-02T15:04:05Z"}, "after"},
	} {
		code, body := f.do("POST", "/v1/prune", bad.body)
		assert.Equal(t, 400, code, "%v", bad.body)
		assert.Equal(t, bad.field, errorOf(t, body)["field"], "%v", bad.body)
	}
	code, body := f.do("GET", "/v1/prune", nil)
	assert.Equal(t, 405, code, "%v", body)
}

// TestServer_Retention prunes finished instances past the retention on its
// own, and keeps running ones.
func TestServer_Retention(t *testing.T) {
	for _, m := range storeModes {
		t.Run(m.name, func(t *testing.T) {
			f := newFixture(t, append(m.opts, func(c *server.Config) {
				c.Retain, c.PruneEvery = time.Nanosecond, 5*time.Millisecond
			})...)
			code, body := f.do("POST", "/v1/workflows/echo/instances", map[string]any{"id": "running"})
			require.Equal(t, 201, code, "%v", body)
			code, body = f.do("POST", "/v1/workflows/review/instances", map[string]any{"id": "done", "input": map[string]any{"approve": true}})
			require.Equal(t, 201, code, "%v", body)
			done, running := "done", "running"
			deadline := time.Now().Add(10 * time.Second)
			for {
				code, _ := f.do("GET", "/v1/instances/"+done, nil)
				if code == 404 {
					break
				}
				require.Equal(t, 200, code)
				require.False(t, time.Now().After(deadline), "the finished instance was not pruned")
				time.Sleep(2 * time.Millisecond)
			}
			code, body = f.do("GET", "/v1/instances/"+running, nil)
			require.Equal(t, 200, code)
			assert.Equal(t, "running", body["status"])
		})
	}
}

func TestConfig_RetentionRefused(t *testing.T) {
	for _, c := range []struct {
		cfg   server.Config
		field string
	}{
		{server.Config{WorkflowsDir: "w", Retain: -time.Hour}, "retain"},
		{server.Config{WorkflowsDir: "w", Retain: time.Hour, PruneEvery: -time.Minute}, "prune-every"},
	} {
		var ce *server.ConfigError
		require.ErrorAs(t, c.cfg.Validate(), &ce)
		assert.Equal(t, c.field, ce.Field)
	}
}

// TestServer_List_PagesInStartOrder pages through instances newest first,
// in the order they were started, on either store: each exactly once,
// filters applied by the store and by the server (waiting, version).
func TestServer_List_PagesInStartOrder(t *testing.T) {
	for _, m := range storeModes {
		t.Run(m.name, func(t *testing.T) {
			f := newFixture(t, m.opts...)
			var want []string
			for k := range 7 {
				id := fmt.Sprintf("e%d", k)
				code, _ := f.do("POST", "/v1/workflows/echo/instances", map[string]any{"id": id})
				require.Equal(t, 201, code)
				want = append([]string{id}, want...)
			}
			for _, limit := range []int{1, 3, 7, 8} {
				var seen []string
				cursor := ""
				for range 20 {
					path := fmt.Sprintf("/v1/instances?workflow=echo&status=running&limit=%d", limit)
					if cursor != "" {
						path += "&cursor=" + url.QueryEscape(cursor)
					}
					code, page := f.do("GET", path, nil)
					require.Equal(t, 200, code, "%v", page)
					require.LessOrEqual(t, len(page["instances"].([]any)), limit)
					for _, in := range page["instances"].([]any) {
						seen = append(seen, in.(map[string]any)["id"].(string))
					}
					if page["next"] == nil {
						break
					}
					cursor = page["next"].(string)
				}
				assert.Equal(t, want, seen, "limit %d", limit)
			}
			code, page := f.do("GET", "/v1/instances?status=waiting", nil)
			require.Equal(t, 200, code)
			assert.Empty(t, page["instances"])
			code, page = f.do("GET", "/v1/instances?status=cancelled", nil)
			require.Equal(t, 200, code)
			assert.Empty(t, page["instances"])
		})
	}
}
