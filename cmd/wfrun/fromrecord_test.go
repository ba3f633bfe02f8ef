package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/batonhq/baton/boltstore"
	"github.com/batonhq/baton/server"
)

// TestScenario_StoreRoundTripsEveryExample runs each example's scenarios
// with --store, turns the recorded instance into a scenario with `wfrun
// scenario --store`, and tests it: it passes, so the replay takes the
// recorded path (its expect.states) to the recorded end.
func TestScenario_StoreRoundTripsEveryExample(t *testing.T) {
	paths, err := filepath.Glob("../../examples/*/scenarios/*.yaml")
	require.NoError(t, err)
	require.NotEmpty(t, paths)
	for _, path := range paths {
		t.Run(path, func(t *testing.T) {
			dir := t.TempDir()
			store := filepath.Join(dir, "baton.db")
			stdout, stderr, code := wfrun(t, "run", path, "--store", store)
			require.Equal(t, 0, code, stdout+stderr)
			id := rootInstance(t, store)
			if strings.HasSuffix(path, "approval/scenarios/approved.yaml") {
				_, stderr, code := wfrun(t, "scenario", id, "--store", store, "--workflow", "../../examples/refund/workflow.yaml")
				assert.Equal(t, 0, code)
				assert.Contains(t, stderr, "note: ../../examples/refund/workflow.yaml is workflow refund; instance "+id+" ran workflow approval")

				stdout, _, _ := wfrun(t, "__complete", "scenario", "--store", store, "")
				assert.Contains(t, stdout, id+"\tapproval SENT completed", "completion offers the stored ids")
			}

			orig := loadYAML(t, path)
			workflow := filepath.Join(filepath.Dir(path), orig["workflow"].(string))
			out := filepath.Join(dir, "scenarios", "recorded.yaml")
			require.NoError(t, os.MkdirAll(filepath.Dir(out), 0o755))
			stdout, stderr, code = wfrun(t, "scenario", id, "--store", store, "--workflow", workflow, "--out", out)
			require.Equal(t, 0, code, stdout+stderr)

			stdout, stderr, code = wfrun(t, "test", out)
			assert.Equal(t, 0, code, "%s%s\n%s", stdout, stderr, readFile(t, out))
			assert.Contains(t, stdout, "scenarios: 1 passed, 0 failed")
			got := loadYAML(t, out)
			if want, ok := orig["expect"].(map[string]any)["states"]; ok {
				assert.Equal(t, want, got["expect"].(map[string]any)["states"], "the recorded path")
			}
		})
	}
}

// rootInstance is the id of the one instance a scenario's run kept in
// store that no workflow state started.
func rootInstance(t *testing.T, store string) string {
	t.Helper()
	st, err := boltstore.OpenReadOnly(store)
	require.NoError(t, err)
	defer st.Close()
	snaps, err := st.Instances(context.Background())
	require.NoError(t, err)
	var roots []string
	for _, s := range snaps {
		if !strings.Contains(s.ID, "/") {
			roots = append(roots, s.ID)
		}
	}
	require.Len(t, roots, 1)
	return roots[0]
}

func loadYAML(t *testing.T, path string) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, yaml.Unmarshal([]byte(readFile(t, path)), &m))
	return m
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(data)
}

// deskFlow waits for a person between its writer and its sender.
const deskFlow = `workflow: desk
initial: DRAFTING
agents:
  writer: {url: "AGENTS/writer"}
  sender: {url: "AGENTS/sender"}
states:
  DRAFTING: {agent: writer, retry: {max: 2, backoff: [5ms]}}
  APPROVAL: {wait: {signals: [approved, rejected]}, timeout: 1h}
  SENDING: {agent: sender}
  SENT: {terminal: true}
  REJECTED: {terminal: true}
rules:
  - {id: drafted, from: writer, trigger: drafted, next: APPROVAL, context: {draft: result.text}}
  - {id: approved, from: APPROVAL, trigger: approved, next: SENDING, context: {by: result.by}}
  - {id: rejected, from: APPROVAL, trigger: rejected, next: REJECTED}
  - {id: sent, from: sender, trigger: sent, next: SENT, context: {message: result.id}}
`

// TestScenario_ServerRoundTrip runs an instance on a real server with HTTP
// agents (a rate-limited writer retried, usage on its reply) and a signal,
// turns it into a scenario through the API, and tests it.
func TestScenario_ServerRoundTrip(t *testing.T) {
	var writerCalls atomic.Int64
	agents := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var work struct {
			Metadata struct {
				InstanceID string `json:"instance_id"`
				Step       int    `json:"step"`
			} `json:"metadata"`
		}
		if err := json.NewDecoder(r.Body).Decode(&work); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		agent := strings.TrimPrefix(r.URL.Path, "/")
		rep := map[string]any{"instance_id": work.Metadata.InstanceID, "step": work.Metadata.Step, "agent": agent}
		switch {
		case agent == "writer" && writerCalls.Add(1) == 1:
			rep["error"] = map[string]any{"message": "429 too many requests", "retryable": true, "kind": "rate_limited"}
		case agent == "writer":
			rep["trigger"], rep["result"] = "drafted", map[string]any{"text": "Dear customer", "words": 2}
			rep["usage"] = map[string]any{"input_tokens": 120, "output_tokens": 35, "cost": 0.0125, "model": "large-2"}
		default:
			rep["trigger"], rep["result"] = "sent", map[string]any{"id": "m-1"}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(rep)
	}))
	defer agents.Close()
	dir := t.TempDir()
	workflow := filepath.Join(dir, "desk.yaml")
	require.NoError(t, os.WriteFile(workflow, []byte(strings.ReplaceAll(deskFlow, "AGENTS", agents.URL)), 0o600))
	s, err := server.New(context.Background(), server.Config{WorkflowsDir: dir, DataDir: t.TempDir(), NATS: server.NoNATS})
	require.NoError(t, err)
	hs := httptest.NewServer(s.Handler())
	defer hs.Close()
	defer s.Close()

	_, stderr, code := wfrun(t, "start", "desk", "--id", "d-1", "--input", `{"ticket": "T-1"}`, "--server", hs.URL)
	require.Equal(t, 0, code, stderr)
	awaitStatus(t, hs.URL, "d-1", "waiting")
	_, stderr, code = wfrun(t, "scenario", "d-1", "--server", hs.URL)
	assert.Equal(t, 1, code, "a waiting instance is not a scenario yet")
	assert.Contains(t, stderr, "has not completed or failed")
	_, stderr, code = wfrun(t, "signal", "d-1", "approved", "--data", `{"by": "ana"}`, "--server", hs.URL)
	require.Equal(t, 0, code, stderr)
	awaitStatus(t, hs.URL, "d-1", "completed")

	out := filepath.Join(dir, "scenarios", "d-1.yaml")
	require.NoError(t, os.MkdirAll(filepath.Dir(out), 0o755))
	_, stderr, code = wfrun(t, "scenario", "d-1", "--server", hs.URL, "--workflow", workflow, "--out", out)
	require.Equal(t, 0, code, stderr)
	text := readFile(t, out)
	assert.Contains(t, text, "workflow: ../desk.yaml")
	assert.Contains(t, text, "kind: rate_limited")
	assert.Contains(t, text, "model: large-2")
	assert.Contains(t, text, "usage:\n    tokens: 155\n    cost: 0.0125", "expect.usage")
	assert.Contains(t, text, "signal: approved")
	assert.Contains(t, text, "states: [DRAFTING, APPROVAL, SENDING, SENT]")
	stdout, stderr, code := wfrun(t, "test", out)
	assert.Equal(t, 0, code, "%s%s\n%s", stdout, stderr, text)

	// Without --out the scenario goes to stdout and names <workflow>.yaml.
	stdout, _, code = wfrun(t, "scenario", "d-1", "--server", hs.URL)
	require.Equal(t, 0, code)
	assert.Contains(t, stdout, "workflow: desk.yaml")

	stdout, _, _ = wfrun(t, "__complete", "scenario", "--server", hs.URL, "d-")
	assert.Contains(t, stdout, "d-1\tdesk completed")

	_, stderr, code = wfrun(t, "scenario", "nope", "--server", hs.URL)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "404 unknown_instance")
}

// awaitStatus polls the instance until it has status (bounded: 10s).
func awaitStatus(t *testing.T, base, id, status string) {
	t.Helper()
	last := ""
	for range 2000 {
		stdout, _, code := wfrun(t, "get", id, "-o", "json", "--server", base)
		if code == 0 {
			var in instance
			require.NoError(t, json.Unmarshal([]byte(stdout), &in))
			if last = in.Status; last == status {
				return
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("instance %s is %s, want %s", id, last, status)
}

func TestScenario_UsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"scenario", "i-1"},
		{"scenario", "i-1", "--store", "x.db", "--server", "http://127.0.0.1:1"},
		{"scenario"},
	} {
		_, _, code := wfrun(t, args...)
		assert.Equal(t, 2, code, "%v", args)
	}
	_, stderr, code := wfrun(t, "scenario", "i-1", "--store", filepath.Join(t.TempDir(), "none.db"))
	assert.Equal(t, 1, code, stderr)
}

// TestScenario_NATSRoundTrip turns instances an engine kept in a NATS store
// into scenarios with `wfrun scenario --nats`, a document review with its
// kyc child among them, and tests them: each passes on its recorded path.
func TestScenario_NATSRoundTrip(t *testing.T) {
	fx := natsStoreWithRuns(t)
	snaps, err := fx.store.Instances(context.Background())
	require.NoError(t, err)
	files := map[string]string{
		"refund":          "../../examples/refund/workflow.yaml",
		"document-review": "../../examples/document-review/workflow.yaml",
	}
	tested := 0
	for _, s := range snaps {
		file, ok := files[s.Workflow]
		if !ok || strings.Contains(s.ID, "/") {
			continue // a child: its parent's scenario holds it
		}
		out := filepath.Join(t.TempDir(), "recorded.yaml")
		stdout, stderr, code := wfrun(t, "scenario", s.ID, "--nats", fx.url, "--prefix", "wf", "--workflow", file, "--out", out)
		require.Equal(t, 0, code, stdout+stderr)
		stdout, stderr, code = wfrun(t, "test", out)
		assert.Equal(t, 0, code, "%s%s\n%s", stdout, stderr, readFile(t, out))
		assert.Contains(t, stdout, "scenarios: 1 passed, 0 failed")
		if s.Workflow == "document-review" {
			assert.Contains(t, readFile(t, out), "kyc", "the child's replies are in the scenario")
		}
		tested++
	}
	assert.Equal(t, 3, tested, "two refunds and a document review")

	stdout, _, _ := wfrun(t, "__complete", "scenario", "--nats", fx.url, "--prefix", "wf", "")
	assert.Contains(t, stdout, snaps[0].ID, "completion offers the stored ids")

	for _, args := range [][]string{
		{"scenario", "i-1", "--nats", fx.url, "--store", "x.db"},
		{"scenario", "i-1", "--store", "x.db", "--prefix", "wf"},
	} {
		_, _, code := wfrun(t, args...)
		assert.Equal(t, 2, code, "%v", args)
	}
	_, stderr, code := wfrun(t, "scenario", "i-1", "--nats", closedPort(t))
	assert.Equal(t, 1, code, stderr)
	_, stderr, code = wfrun(t, "scenario", "no-such-instance", "--nats", fx.url, "--prefix", "wf")
	assert.Equal(t, 1, code, stderr)
}
