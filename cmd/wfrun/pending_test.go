package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/ops"
	"github.com/batonhq/baton/server"
)

// gateFlow: the writer drafts (held: it never reports), then a person
// approves or rejects.
const gateFlow = `workflow: gate
initial: DRAFTING
agents:
  writer: {url: "AGENTS/writer", secret_env: WFRUN_TEST_SECRET}
states:
  DRAFTING: {agent: writer, timeout: 1h}
  APPROVAL: {wait: {signals: [approve, reject]}, timeout: 2h}
  DONE: {terminal: true}
  REJECTED: {terminal: true}
rules:
  - {id: drafted, from: writer, trigger: drafted, next: APPROVAL}
  - {id: approve, from: APPROVAL, trigger: approve, next: DONE}
  - {id: reject, from: APPROVAL, trigger: reject, next: REJECTED}
`

func gateServer(t *testing.T) string {
	t.Helper()
	ag := newHTTPAgents(t)
	ag.hold.Store(true)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "gate.yaml"), []byte(strings.ReplaceAll(gateFlow, "AGENTS", ag.srv.URL)), 0o600))
	t.Setenv("WFRUN_TEST_SECRET", "e2e-secret")
	s, err := server.New(context.Background(), server.Config{WorkflowsDir: dir, DataDir: t.TempDir(), NATS: server.NoNATS})
	require.NoError(t, err)
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(func() {
		hs.Close()
		s.Close()
	})
	ag.baton.Store(hs.URL)
	t.Setenv("BATON_SERVER", hs.URL)
	return hs.URL
}

// getJSON is wfrun get -o json of id.
func getJSON(t *testing.T, id string) ops.Instance {
	t.Helper()
	stdout, stderr, code := wfrun(t, "get", id, "-o", "json")
	require.Equal(t, 0, code, stderr)
	var in ops.Instance
	require.NoError(t, json.Unmarshal([]byte(stdout), &in))
	return in
}

// untilStatus polls wfrun get until id has status (bounded).
func untilStatus(t *testing.T, id, status string) ops.Instance {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		in := getJSON(t, id)
		if in.Status == status {
			return in
		}
		if time.Now().After(deadline) {
			t.Fatalf("instance %s is %s, want %s", id, in.Status, status)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestGet_PrintsWhatTheInstanceWaitsOn(t *testing.T) {
	gateServer(t)
	_, stderr, code := wfrun(t, "start", "gate", "--id", "g-1")
	require.Equal(t, 0, code, stderr)
	in := getJSON(t, "g-1")
	require.Len(t, in.Pending, 1)
	p := in.Pending[0]
	assert.Equal(t, "http", p.Transport)

	stdout, stderr, code := wfrun(t, "get", "g-1")
	require.Equal(t, 0, code, stderr)
	want := "pending:   waiting for `writer` (step 1, attempt 1) since " + clockOf(p.Since) + ", deadline " + clockOf(*p.Deadline) + " [http]\n"
	assert.Contains(t, stdout, want)
}

func TestWatch_PrintsALineWhenTheInstanceEntersAWait(t *testing.T) {
	base := gateServer(t)
	_, stderr, code := wfrun(t, "start", "gate", "--id", "g-2")
	require.Equal(t, 0, code, stderr)

	type result struct {
		stdout string
		code   int
	}
	done := make(chan result, 1)
	// The watch's output is read as it comes: the signal is sent once the
	// watch has shown the wait. Sent earlier, the instance may have left
	// the wait before the watch looked at it, and no line is owed.
	out := &awaitWriter{want: "waiting for signal", seen: make(chan struct{})}
	go func() {
		var errOut bytes.Buffer
		err := run(context.Background(), []string{"watch", "g-2"}, strings.NewReader(""), out, &errOut)
		done <- result{out.String(), exitCode(err)}
	}()
	// The writer's report, as an agent would send it.
	resp, err := http.Post(base+"/v1/reports", "application/json", bytes.NewReader([]byte(`{"instance_id": "g-2", "step": 1, "agent": "writer", "trigger": "drafted"}`)))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	in := untilStatus(t, "g-2", "waiting")
	require.Len(t, in.Pending, 1)
	w := in.Pending[0]
	select {
	case <-out.seen:
	case got := <-done:
		t.Fatalf("watch ended before the wait, with %d:\n%s", got.code, got.stdout)
	case <-time.After(20 * time.Second):
		t.Fatalf("watch showed no wait:\n%s", out.String())
	}

	_, stderr, code = wfrun(t, "signal", "g-2", "approve")
	require.Equal(t, 0, code, stderr)
	var got result
	select {
	case got = <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("watch did not end")
	}
	assert.Equal(t, 0, got.code, got.stdout)
	line := "waiting for signal approve|reject since " + clockOf(w.Since) + ", deadline " + clockOf(*w.Deadline)
	assert.Equal(t, 1, strings.Count(got.stdout, line), "one line for the wait:\n%s", got.stdout)
	assert.Contains(t, got.stdout, "g-2 completed in DONE")
}

func TestPendingLine(t *testing.T) {
	since := time.Date(2026, 11, 24, 10, 2, 11, 0, time.Local)
	deadline := since.Add(2 * time.Minute)
	tests := []struct {
		name string
		p    ops.Pending
		want string
	}{
		{"run", ops.Pending{Kind: "run", Agent: "seller", Step: 3, Attempt: 2, Since: since, Deadline: &deadline, Transport: "nats"},
			"waiting for `seller` (step 3, attempt 2) since 10:02:11, deadline 10:04:11 [nats]"},
		{"go run with progress", ops.Pending{Kind: "run", Agent: "writer", Step: 1, Attempt: 1, Since: since, Transport: "go", Progress: &ops.Progress{At: since}},
			"waiting for `writer` (step 1, attempt 1) since 10:02:11"},
		{"wait", ops.Pending{Kind: "wait", Signals: []string{"approve", "reject"}, Since: since},
			"waiting for signal approve|reject since 10:02:11"},
		{"child", ops.Pending{Kind: "child", Agent: "kyc", Child: "p/KYC/1", Since: since},
			"waiting for child p/KYC/1 (workflow kyc) since 10:02:11"},
		{"foreach", ops.Pending{Kind: "foreach", Agent: "reviewer", Step: 5, Attempt: 1, Since: since, Transport: "http"},
			"waiting for `reviewer` (item, step 5, attempt 1) since 10:02:11 [http]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, pendingLine(tt.p))
		})
	}
	p := tests[1].p
	p.Progress.Message = "drafting"
	assert.Equal(t, "waiting for `writer` (step 1, attempt 1) since 10:02:11: drafting", pendingLine(p))
	assert.Equal(t, "completed through on_limit (max_steps reached)", onLimitNote(ops.Instance{OnLimit: "max_steps"}))
	assert.Empty(t, onLimitNote(ops.Instance{}))
}

// awaitWriter keeps what is written to it and closes seen once it holds
// want.
type awaitWriter struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	want string
	seen chan struct{}
	once sync.Once
}

func (w *awaitWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n, err := w.buf.Write(p)
	if strings.Contains(w.buf.String(), w.want) {
		w.once.Do(func() { close(w.seen) })
	}
	return n, err
}

func (w *awaitWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}
