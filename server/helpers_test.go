package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/server"
)

// reviewFlow is a workflow of HTTP agents: the writer answers at once
// (200), the checker later (202, then a report to /v1/reports), the boss
// may be selected by a user. Input mode "hold" makes the writer answer 202
// and never report, so that the instance stays at work.
const reviewFlow = `workflow: review
version: 1
description: A draft, checked
initial: DRAFTING
agents:
  writer: {url: "AGENTS/writer"}
  checker: {url: "AGENTS/checker"}
  boss: {url: "AGENTS/boss", selectable: true}
states:
  DRAFTING: {agent: writer}
  CHECKING: {agent: checker, timeout: 30s}
  DONE: {terminal: true}
  REJECTED: {terminal: true}
rules:
  - {id: drafted, from: writer, trigger: drafted, next: CHECKING}
  - {id: approved, from: checker, trigger: approved, next: DONE}
  - {id: declined, from: checker, trigger: declined, next: REJECTED}
`

// echoFlow has one external agent: its work waits on the transport.
const echoFlow = `workflow: echo
initial: WORKING
agents:
  worker: {}
states:
  WORKING: {agent: worker}
  DONE: {terminal: true}
rules:
  - {id: done, from: worker, trigger: done, next: DONE}
`

// agents is the HTTP agents of reviewFlow, served on loopback.
type agents struct {
	srv     *httptest.Server
	baton   string // the server's URL, for the checker's reports
	mu      sync.Mutex
	reports sync.WaitGroup
	calls   map[string]int
	traces  map[string]string // the last traceparent header, by agent
}

func newAgents(t testing.TB) *agents {
	a := &agents{calls: map[string]int{}, traces: map[string]string{}}
	a.srv = httptest.NewServer(http.HandlerFunc(a.serve))
	t.Cleanup(func() {
		a.reports.Wait()
		a.srv.Close()
	})
	return a
}

func (a *agents) serve(w http.ResponseWriter, r *http.Request) {
	var work struct {
		Content  map[string]any `json:"content"`
		Metadata struct {
			InstanceID string `json:"instance_id"`
			Step       int    `json:"step"`
		} `json:"metadata"`
	}
	if err := json.NewDecoder(r.Body).Decode(&work); err != nil {
		http.Error(w, err.Error(), 400)
		return
	}
	agent := strings.TrimPrefix(r.URL.Path, "/")
	a.mu.Lock()
	a.calls[agent]++
	a.traces[agent] = r.Header.Get("traceparent")
	baton := a.baton
	a.mu.Unlock()
	input, _ := work.Content["input"].(map[string]any)
	report := map[string]any{"instance_id": work.Metadata.InstanceID, "step": work.Metadata.Step, "agent": agent}
	switch agent {
	case "writer", "boss":
		if input["mode"] == "hold" && agent == "writer" {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		report["trigger"] = "drafted"
		report["result"] = map[string]any{"by": agent}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(report)
	case "checker":
		report["trigger"] = "declined"
		if input["approve"] == true {
			report["trigger"] = "approved"
		}
		w.WriteHeader(http.StatusAccepted)
		a.reports.Add(1)
		go func() {
			defer a.reports.Done()
			body, _ := json.Marshal(report)
			for range 50 { // the server may be restarting: bounded retries
				resp, err := http.Post(baton+"/v1/reports", "application/json", bytes.NewReader(body))
				if err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode == 200 {
						return
					}
				}
				time.Sleep(5 * time.Millisecond)
			}
		}()
	default:
		http.Error(w, "no such agent", 404)
	}
}

// workflowsDir writes the workflow files, their agents' URLs filled in.
func workflowsDir(t testing.TB, agentsURL string, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, src := range files {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(strings.ReplaceAll(src, "AGENTS", agentsURL)), 0o600))
	}
	return dir
}

// anyPort lets the embedded NATS server of a test listen on a free
// loopback port.
const anyPort = "127.0.0.1:0"

// fixture is a server built with New, its API on an httptest server.
type fixture struct {
	t      testing.TB
	srv    *server.Server
	http   *httptest.Server
	agents *agents
	token  string
	data   string
}

type option func(*server.Config)

func newFixture(t testing.TB, opts ...option) *fixture {
	t.Helper()
	ag := newAgents(t)
	cfg := server.Config{
		WorkflowsDir: workflowsDir(t, ag.srv.URL, map[string]string{"review.yaml": reviewFlow, "echo.yaml": echoFlow}),
		DataDir:      t.TempDir(),
		NATSListen:   anyPort,
		// A process that is killed loses nothing the kernel has: only a
		// machine that goes down needs a sync per write.
		NATSSyncInterval: time.Second,
	}
	for _, o := range opts {
		o(&cfg)
	}
	s, err := server.New(context.Background(), cfg)
	require.NoError(t, err)
	hs := httptest.NewServer(s.Handler())
	ag.mu.Lock()
	ag.baton = hs.URL
	ag.mu.Unlock()
	f := &fixture{t: t, srv: s, http: hs, agents: ag, data: cfg.DataDir}
	t.Cleanup(func() {
		s.Close() // ends the event streams first
		hs.Close()
	})
	return f
}

// do sends a request and decodes the JSON answer.
func (f *fixture) do(method, path string, body any, hdr ...string) (int, map[string]any) {
	f.t.Helper()
	var rd io.Reader
	ct := ""
	switch b := body.(type) {
	case nil:
	case string:
		rd, ct = strings.NewReader(b), "application/json"
	case []byte:
		rd, ct = bytes.NewReader(b), "application/json"
	default:
		data, err := json.Marshal(b)
		require.NoError(f.t, err)
		rd, ct = bytes.NewReader(data), "application/json"
	}
	req, err := http.NewRequest(method, f.http.URL+path, rd)
	require.NoError(f.t, err)
	if ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	if f.token != "" {
		req.Header.Set("Authorization", "Bearer "+f.token)
	}
	for k := 0; k+1 < len(hdr); k += 2 {
		req.Header.Set(hdr[k], hdr[k+1])
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(f.t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(f.t, err)
	var out map[string]any
	if len(data) > 0 && data[0] == '{' {
		require.NoError(f.t, json.Unmarshal(data, &out), "body %s", data)
	}
	return resp.StatusCode, out
}

// errorOf is the error object of an error answer.
func errorOf(t *testing.T, body map[string]any) map[string]any {
	t.Helper()
	e, ok := body["error"].(map[string]any)
	require.True(t, ok, "not an error answer: %v", body)
	return e
}

// waitStatus polls the instance until its status is want (bounded).
func (f *fixture) waitStatus(id, want string) map[string]any {
	f.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		code, body := f.do("GET", "/v1/instances/"+id, nil)
		require.Equal(f.t, 200, code)
		if body["status"] == want {
			return body
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("instance %s: status %v, want %s", id, body["status"], want)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// count is the number of instances the server has.
func (f *fixture) count() int {
	f.t.Helper()
	code, body := f.do("GET", "/v1/instances?limit=1000", nil)
	require.Equal(f.t, 200, code)
	return len(body["instances"].([]any))
}

func newHTTP(t *testing.T, s *server.Server) *httptest.Server {
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(hs.Close)
	return hs
}

// history is the instance's history as the API answers it.
func (f *fixture) history(id string) []map[string]any {
	f.t.Helper()
	resp, err := http.Get(f.http.URL + "/v1/instances/" + id + "/history")
	require.NoError(f.t, err)
	defer resp.Body.Close()
	require.Equal(f.t, 200, resp.StatusCode)
	var out []map[string]any
	require.NoError(f.t, json.NewDecoder(resp.Body).Decode(&out))
	return out
}

// doURL sends a request to any URL and decodes the JSON answer; the code
// is 0 when no answer came.
func doURL(t *testing.T, method, url, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	require.NoError(t, err)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}
