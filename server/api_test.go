package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/boltstore"
	"github.com/batonhq/baton/check"
	"github.com/batonhq/baton/record"
	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/server"
)

func TestServer_Reports(t *testing.T) {
	f := newFixture(t)
	code, body := f.do("POST", "/v1/workflows/echo/instances", nil)
	require.Equal(t, 201, code)
	id := body["id"].(string)
	report := func(step int, agent string) map[string]any {
		return map[string]any{"instance_id": id, "step": step, "agent": agent, "trigger": "done", "result": map[string]any{"n": 1}}
	}
	tests := []struct {
		name   string
		body   any
		status int
		ok     bool
		code   string
		field  string
	}{
		{name: "malformed JSON", body: `{"instance_id":`, status: 400, field: "report"},
		{name: "missing identity", body: `{"trigger":"done"}`, status: 400, field: "instance_id"},
		{name: "wrong type", body: `{"instance_id":"x","step":"one","agent":"a","trigger":"t"}`, status: 400, field: "step"},
		{name: "two answers: a report the engine cannot take", body: `{"instance_id":"x","step":1,"agent":"a","trigger":"t","reject":"no"}`, status: 200, code: "invalid"},
		{name: "non-numeric usage", body: `{"instance_id":"x","step":1,"agent":"a","trigger":"t","usage":{"cost":"high"}}`, status: 200, code: "invalid"},
		{name: "progress beside an outcome", body: `{"instance_id":"x","step":1,"agent":"a","trigger":"t","progress":{"message":"m"}}`, status: 200, code: "invalid"},
		{name: "progress without identity", body: `{"progress":{"message":"m"}}`, status: 400, field: "instance_id"},
		{name: "unknown instance", body: map[string]any{"instance_id": "nope", "step": 1, "agent": "worker", "trigger": "done"}, status: 200, code: "unknown_instance"},
		{name: "wrong agent", body: report(1, "someone"), status: 200, code: "invalid"},
		{name: "a step not reached", body: report(7, "worker"), status: 200, code: "invalid"},
		{name: "a heartbeat for a step not reached", body: map[string]any{"instance_id": id, "step": 7, "agent": "worker", "heartbeat": true}, status: 200, code: "invalid"},
		{name: "a heartbeat for the run", body: map[string]any{"instance_id": id, "step": 1, "agent": "worker", "heartbeat": true}, status: 200, ok: true},
		{name: "the run's report", body: report(1, "worker"), status: 200, ok: true},
		{name: "again, for a finished run", body: report(1, "worker"), status: 200, code: "stale"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body := f.do("POST", "/v1/reports", tt.body)
			require.Equal(t, tt.status, code, "%v", body)
			if tt.status != 200 {
				assert.Equal(t, tt.field, errorOf(t, body)["field"])
				return
			}
			assert.Equal(t, tt.ok, body["ok"], "%v", body)
			if !tt.ok {
				assert.Equal(t, tt.code, body["code"])
				assert.NotEmpty(t, body["message"])
			}
		})
	}
	got := f.waitStatus(id, "completed")
	assert.Equal(t, "DONE", got["outcome"])
	code, body = f.do("POST", "/v1/reports", strings.Repeat(" ", 1<<20+1))
	assert.Equal(t, 413, code)
	req, _ := http.NewRequest("POST", f.http.URL+"/v1/reports", strings.NewReader(`{}`))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, 415, resp.StatusCode)
}

// sse reads server-sent events from a stream.
type sse struct {
	resp *http.Response
	sc   *bufio.Scanner
}

func openEvents(t *testing.T, f *fixture, query, lastID string) *sse {
	t.Helper()
	req, err := http.NewRequest("GET", f.http.URL+"/v1/events"+query, nil)
	require.NoError(t, err)
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	require.Equal(t, 200, resp.StatusCode)
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	t.Cleanup(func() { resp.Body.Close() })
	return &sse{resp: resp, sc: bufio.NewScanner(resp.Body)}
}

// next returns the next event's id line and data, or ok false at the end.
func (s *sse) next() (id string, ev server.Event, ok bool) {
	for s.sc.Scan() {
		line := s.sc.Text()
		switch {
		case strings.HasPrefix(line, "id: "):
			id = strings.TrimPrefix(line, "id: ")
		case strings.HasPrefix(line, "data: "):
			_ = json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &ev)
		case line == "" && id != "":
			return id, ev, true
		}
	}
	return "", ev, false
}

// until reads events until one of type want (bounded by count).
func (s *sse) until(t *testing.T, want string) []server.Event {
	t.Helper()
	var evs []server.Event
	for range 100 {
		_, ev, ok := s.next()
		require.True(t, ok, "the stream ended before %s", want)
		evs = append(evs, ev)
		if ev.Type == want {
			return evs
		}
	}
	t.Fatalf("no %s event in 100", want)
	return nil
}

func TestServer_Events_StreamFilterAndResume(t *testing.T) {
	f := newFixture(t)
	code, body := f.do("POST", "/v1/workflows/echo/instances", nil) // another instance's events are filtered out
	require.Equal(t, 201, code)
	other := body["id"].(string)
	code, body = f.do("POST", "/v1/workflows/review/instances", map[string]any{"id": "ev-1", "input": map[string]any{"mode": "hold"}})
	require.Equal(t, 201, code)
	stream := openEvents(t, f, "?workflow=review&instance=ev-1", "")
	code, _ = f.do("POST", "/v1/instances/ev-1/cancel", nil)
	require.Equal(t, 202, code)
	evs := stream.until(t, "cancelled")
	last := evs[len(evs)-1]
	assert.Equal(t, "ev-1", last.Instance)
	assert.Equal(t, "review", last.Workflow)
	assert.Equal(t, 1, last.Version)
	assert.NotZero(t, last.ID)
	code, _ = f.do("POST", "/v1/instances/"+other+"/cancel", nil)
	require.Equal(t, 202, code)

	// Resuming from 0 replays the kept events of the instance, in order.
	replay := openEvents(t, f, "?instance=ev-1", "0")
	evs = replay.until(t, "cancelled")
	ids := make([]uint64, len(evs))
	types := make([]string, len(evs))
	for k, ev := range evs {
		ids[k], types[k] = ev.ID, ev.Type
		assert.Equal(t, "ev-1", ev.Instance)
	}
	// Every event the engine tells reaches the stream with its fields.
	assert.Equal(t, []string{"instance_started", "state_changed", "run_started", "cancelled"}, types)
	assert.Equal(t, "DRAFTING", evs[2].State)
	assert.Equal(t, "writer", evs[2].Agent)
	assert.Equal(t, 1, evs[2].Attempt)
	assert.Equal(t, "start", evs[2].Reason)
	assert.Contains(t, evs[3].Error, "cancelled")
	assert.True(t, slices.IsSorted(ids))
	// Resuming after the last event replays nothing of it: the other
	// instance's cancellation comes next.
	after := openEvents(t, f, "", "0")
	all := after.until(t, "cancelled")
	resumed := openEvents(t, f, "", jsonID(all[len(all)-1].ID))
	next := resumed.until(t, "cancelled")
	assert.Equal(t, other, next[len(next)-1].Instance)

	code, body = f.do("GET", "/v1/events", nil, "Last-Event-ID", "x")
	assert.Equal(t, 400, code)
	assert.Equal(t, "Last-Event-ID", errorOf(t, body)["field"])
}

func jsonID(n uint64) string { b, _ := json.Marshal(n); return string(b) }

func TestServer_Events_EndOnClose(t *testing.T) {
	f := newFixture(t)
	stream := openEvents(t, f, "", "")
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			if _, _, ok := stream.next(); !ok {
				return
			}
		}
	}()
	f.srv.Close()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the stream did not end when the server closed")
	}
}

func TestServer_Workflows_And_Graph(t *testing.T) {
	f := newFixture(t)
	code, body := f.do("GET", "/v1/workflows", nil)
	require.Equal(t, 200, code)
	wfs := body["workflows"].([]any)
	require.Len(t, wfs, 2)
	first := wfs[0].(map[string]any)
	assert.Equal(t, "echo", first["name"])
	review := wfs[1].(map[string]any)
	assert.Equal(t, "A draft, checked", review["description"])
	v := review["versions"].([]any)[0].(map[string]any)
	assert.EqualValues(t, 1, v["version"])
	assert.Len(t, v["hash"], 64)
	assert.Equal(t, true, v["current"])

	tests := []struct {
		path   string
		status int
		has    string
	}{
		{"/v1/workflows/review/graph", 200, "stateDiagram"},
		{"/v1/workflows/review/graph?format=mermaid", 200, "DRAFTING"},
		{"/v1/workflows/review/graph?format=dot", 200, "digraph"},
		{"/v1/workflows/review/graph?format=svg", 400, ""},
		{"/v1/workflows/review/graph?version=x", 400, ""},
		{"/v1/workflows/review/graph?version=3", 404, ""},
		{"/v1/workflows/nope/graph", 404, ""},
	}
	for _, tt := range tests {
		code, body := f.do("GET", tt.path, nil)
		assert.Equal(t, tt.status, code, tt.path)
		if tt.has != "" {
			assert.Contains(t, body["graph"], tt.has, tt.path)
		} else {
			errorOf(t, body)
		}
	}
}

// GET /v1/workflows/{name} answers a version with what wfrun check proves
// of it: the same report as check.Check on the file.
func TestServer_Workflow_HasItsCheckReport(t *testing.T) {
	f := newFixture(t)
	code, body := f.do("GET", "/v1/workflows/review", nil)
	require.Equal(t, 200, code, "%v", body)
	assert.Equal(t, "review", body["name"])
	assert.EqualValues(t, 1, body["version"])
	assert.Equal(t, true, body["current"])
	require.Len(t, body["versions"], 1)

	w, err := rules.Parse("review.yaml", []byte(strings.ReplaceAll(reviewFlow, "AGENTS", f.agents.srv.URL)))
	require.NoError(t, err)
	want := check.Check(w)
	report, ok := body["check"].(map[string]any)
	require.True(t, ok, "got check %v, want an object", body["check"])
	assert.Equal(t, want.Summary, report["summary"])
	assert.Len(t, report["findings"], len(want.Findings))

	for path, status := range map[string]int{
		"/v1/workflows/review?version=1": 200,
		"/v1/workflows/review?version=3": 404,
		"/v1/workflows/review?version=x": 400,
		"/v1/workflows/nope":             404,
	} {
		code, body := f.do("GET", path, nil)
		assert.Equal(t, status, code, path)
		if status != 200 {
			errorOf(t, body)
		}
	}
}

func TestServer_DeadLetters_PagedNewestFirst(t *testing.T) {
	ag := newAgents(t)
	data := t.TempDir()
	st, err := boltstore.Open(filepath.Join(data, server.StoreFile))
	require.NoError(t, err)
	for k := range 5 {
		require.NoError(t, st.AddDeadLetter(context.Background(), record.DeadLetter{MessageID: "m" + string(rune('0'+k)), Reason: "ttl_expired", At: time.Now(),
			Instance: []string{"i-a", "i-b"}[k%2], Step: k + 1}))
	}
	require.NoError(t, st.Close())
	s, err := server.New(context.Background(), server.Config{
		WorkflowsDir: workflowsDir(t, ag.srv.URL, map[string]string{"echo.yaml": echoFlow}), DataDir: data, NATS: server.NoNATS,
	})
	require.NoError(t, err)
	defer s.Close()
	f := &fixture{t: t, srv: s}
	f.http = newHTTP(t, s)
	var seqs []float64
	path := "/v1/dead-letters?limit=2"
	for range 5 {
		code, page := f.do("GET", path, nil)
		require.Equal(t, 200, code)
		for _, d := range page["dead_letters"].([]any) {
			seqs = append(seqs, d.(map[string]any)["seq"].(float64))
		}
		if page["next"] == nil {
			break
		}
		path = "/v1/dead-letters?limit=2&cursor=" + page["next"].(string)
	}
	assert.Equal(t, []float64{5, 4, 3, 2, 1}, seqs)
	code, body := f.do("GET", "/v1/dead-letters?cursor=x", nil)
	assert.Equal(t, 400, code)
	assert.Equal(t, "cursor", errorOf(t, body)["field"])

	// ?instance= keeps the dead letters of one instance's work.
	code, page := f.do("GET", "/v1/dead-letters?instance=i-b", nil)
	require.Equal(t, 200, code)
	var steps []float64
	for _, d := range page["dead_letters"].([]any) {
		assert.Equal(t, "i-b", d.(map[string]any)["instance"])
		steps = append(steps, d.(map[string]any)["step"].(float64))
	}
	assert.Equal(t, []float64{4, 2}, steps)
}

func TestServer_Tokens(t *testing.T) {
	tokenFile := filepath.Join(t.TempDir(), "tokens")
	require.NoError(t, os.WriteFile(tokenFile, []byte("\n  first-token  \n\nsecond-token\n"), 0o600))
	f := newFixture(t, func(c *server.Config) { c.TokenFile = tokenFile })
	tests := []struct {
		name, path, auth string
		status           int
	}{
		{"missing", "/v1/instances", "", 401},
		{"wrong", "/v1/instances", "Bearer nope", 401},
		{"prefix of a token", "/v1/instances", "Bearer first", 401},
		{"not bearer", "/v1/instances", "Basic Zmlyc3QtdG9rZW4=", 401},
		{"first token", "/v1/instances", "Bearer first-token", 200},
		{"second token", "/v1/workflows", "Bearer second-token", 200},
		{"scheme in lower case", "/v1/instances", "bearer first-token", 200},
		{"scheme in upper case", "/v1/workflows", "BEARER second-token", 200},
		{"spaces after the scheme", "/v1/workflows", "bEaReR   second-token", 200},
		{"no space after the scheme", "/v1/instances", "Bearerfirst-token", 401},
		{"scheme only", "/v1/instances", "Bearer ", 401},
		{"another scheme ending in bearer", "/v1/instances", "XBearer first-token", 401},
		{"events need one", "/v1/events", "", 401},
		{"healthz needs none", "/healthz", "", 200},
		{"readyz needs none", "/readyz", "", 200},
		{"metrics need none", "/metrics", "", 200},
		{"openapi needs none", "/openapi.json", "", 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest("GET", f.http.URL+tt.path, nil)
			if tt.auth != "" {
				req.Header.Set("Authorization", tt.auth)
			}
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			defer resp.Body.Close()
			assert.Equal(t, tt.status, resp.StatusCode)
			if tt.status == 401 {
				var body map[string]any
				require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
				assert.Equal(t, "unauthorized", errorOf(t, body)["code"])
				assert.NotContains(t, errorOf(t, body)["message"], "first-token")
			}
		})
	}
	code, _ := f.do("POST", "/v1/workflows/echo/instances", nil)
	assert.Equal(t, 401, code)
	f.token = "second-token"
	assert.Equal(t, 0, f.count(), "a refused start changes nothing")
}

func TestServer_Routes_NotFoundAndMethod(t *testing.T) {
	f := newFixture(t)
	code, body := f.do("GET", "/v2/nothing", nil)
	assert.Equal(t, 404, code)
	assert.Equal(t, "not_found", errorOf(t, body)["code"])
	code, body = f.do("DELETE", "/v1/instances/x", nil)
	assert.Equal(t, 405, code)
	assert.Equal(t, "method_not_allowed", errorOf(t, body)["code"])
	code, body = f.do("GET", "/v1/reports", nil)
	assert.Equal(t, 405, code)
}

func TestServer_HealthMetricsOpenAPI(t *testing.T) {
	f := newFixture(t)
	code, body := f.do("GET", "/healthz", nil)
	assert.Equal(t, 200, code)
	assert.Equal(t, "ok", body["status"])
	code, body = f.do("GET", "/readyz", nil)
	assert.Equal(t, 200, code)
	assert.Equal(t, "ready", body["status"])
	code, _ = f.do("POST", "/v1/workflows/review/instances", map[string]any{"input": map[string]any{"approve": true}})
	require.Equal(t, 201, code)
	resp, err := http.Get(f.http.URL + "/metrics")
	require.NoError(t, err)
	text, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, name := range []string{
		"go_goroutines", "baton_bus_", `baton_instances_started_total{version="1",workflow="review"} 1`,
		`baton_instances_running{workflow="review"}`, `baton_instances_running{workflow="echo"} 0`,
	} {
		assert.Contains(t, string(text), name)
	}
	code, body = f.do("GET", "/openapi.json", nil)
	assert.Equal(t, 200, code)
	assert.Equal(t, "3.1.0", body["openapi"])
	f.srv.Close()
	code, _ = f.do("GET", "/readyz", nil)
	assert.Equal(t, 503, code)
}

func TestServer_DeferredRunWithoutReportTimesOut(t *testing.T) {
	f := newFixture(t, func(c *server.Config) { c.ReportWait = 10 * time.Millisecond })
	code, body := f.do("POST", "/v1/workflows/review/instances", map[string]any{"input": map[string]any{"mode": "hold"}})
	require.Equal(t, 201, code)
	got := f.waitStatus(body["id"].(string), "failed")
	assert.Contains(t, got["error"], "answered 202 but sent no report within 10ms")
	// A run that reported in time is left alone.
	code, body = f.do("POST", "/v1/workflows/review/instances", map[string]any{"input": map[string]any{"approve": true}})
	require.Equal(t, 201, code)
	f.waitStatus(body["id"].(string), "completed")
}
