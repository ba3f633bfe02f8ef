package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/server"
)

// reviewFlow's writer answers at once (200), its checker later (202, then
// a report to the server).
const reviewFlow = `workflow: review
initial: DRAFTING
agents:
  writer: {url: "AGENTS/writer", secret_env: WFRUN_TEST_SECRET}
  checker: {url: "AGENTS/checker"}
states:
  DRAFTING: {agent: writer, retry: {max: 3, backoff: [5ms]}}
  CHECKING: {agent: checker, timeout: 30s}
  DONE: {terminal: true}
  REJECTED: {terminal: true}
rules:
  - {id: drafted, from: writer, trigger: drafted, next: CHECKING}
  - {id: approved, from: checker, trigger: approved, next: DONE}
  - {id: declined, from: checker, trigger: declined, next: REJECTED}
`

// httpAgents serves reviewFlow's agents on loopback.
type httpAgents struct {
	srv     *httptest.Server
	baton   atomic.Value // the server's URL, for the checker's reports
	hold    atomic.Bool  // the writer answers 202 and never reports
	badSigs atomic.Int64
	reports sync.WaitGroup
}

func newHTTPAgents(t *testing.T) *httpAgents {
	a := &httpAgents{}
	a.baton.Store("")
	a.srv = httptest.NewServer(http.HandlerFunc(a.serve))
	t.Cleanup(func() {
		a.reports.Wait()
		a.srv.Close()
	})
	return a
}

func (a *httpAgents) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	agent := strings.TrimPrefix(r.URL.Path, "/")
	if agent == "writer" && !verifySig([]byte("e2e-secret"), body, r.Header.Get("Baton-Signature")) {
		a.badSigs.Add(1)
		http.Error(w, "bad signature", 401)
		return
	}
	var work struct {
		Content  map[string]any `json:"content"`
		Metadata struct {
			InstanceID string `json:"instance_id"`
			Step       int    `json:"step"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(body, &work); err != nil {
		http.Error(w, err.Error(), 400)
		return
	}
	input, _ := work.Content["input"].(map[string]any)
	report := map[string]any{"instance_id": work.Metadata.InstanceID, "step": work.Metadata.Step, "agent": agent}
	if agent == "writer" {
		if a.hold.Load() {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		report["trigger"] = "drafted"
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(report)
		return
	}
	report["trigger"] = "declined"
	if input["approve"] == true {
		report["trigger"] = "approved"
	}
	w.WriteHeader(http.StatusAccepted)
	a.reports.Add(1)
	go func() {
		defer a.reports.Done()
		data, _ := json.Marshal(report)
		for range 2000 { // an agent retries its report while the server restarts (bounded: 10s)
			resp, err := http.Post(a.baton.Load().(string)+"/v1/reports", "application/json", bytes.NewReader(data))
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
}

var e2eWait = 40 * time.Second

func verifySig(secret, body []byte, header string) bool {
	// Independent of package httpagent: what an agent in any language does.
	return header == signature(secret, body)
}

// child is `wfrun serve` running as a child process.
type child struct {
	cmd     *exec.Cmd
	url     string
	drained chan struct{}
}

func startServe(t *testing.T, args ...string) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"serve", "--http", "127.0.0.1:0", "--nats-listen", "127.0.0.1:0"}, args...)...)
	cmd.Env = append(os.Environ(), childEnv+"=1", "WFRUN_TEST_SECRET=e2e-secret")
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	c := &child{cmd: cmd, drained: make(chan struct{})}
	addr := make(chan string, 1)
	go func() {
		defer close(c.drained)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if rest, ok := strings.CutPrefix(sc.Text(), "wfrun: serving the HTTP API on "); ok {
				addr <- strings.Fields(rest)[0]
			}
		}
	}()
	select {
	case c.url = <-addr:
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("wfrun serve did not start")
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-c.drained
		_ = cmd.Wait()
	})
	return c
}

func (c *child) kill(t *testing.T) {
	require.NoError(t, c.cmd.Process.Signal(syscall.SIGKILL))
	<-c.drained
	_ = c.cmd.Wait()
}

// TestServe_KilledMidRunResumesEveryInstance starts 1 000 instances
// through the API of `wfrun serve`, kills the server with SIGKILL in the
// middle, starts it again on the same data directory and checks that
// every instance completes with the outcome its input calls for.
func TestServe_KilledMidRunResumesEveryInstance(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server process")
	}
	const total = 1000
	ag := newHTTPAgents(t)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "review.yaml"), []byte(strings.ReplaceAll(reviewFlow, "AGENTS", ag.srv.URL)), 0o600))
	data := t.TempDir()
	srv := startServe(t, "--workflows", dir, "--data", data)
	ag.baton.Store(srv.url)

	var (
		next     atomic.Int64
		accepted atomic.Int64
		base     atomic.Value
		wg       sync.WaitGroup
		failures = make(chan string, total)
	)
	base.Store(srv.url)
	client := &http.Client{Timeout: 10 * time.Second}
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				k := next.Add(1) - 1
				if k >= total {
					return
				}
				body := fmt.Sprintf(`{"id":"e2e-%04d","input":{"approve":%t}}`, k, k%2 == 0)
				ok := false
				for attempt := 0; attempt < 2000 && !ok; attempt++ { // retried through the restart, same id
					resp, err := client.Post(base.Load().(string)+"/v1/workflows/review/instances", "application/json", strings.NewReader(body))
					if err == nil {
						_, _ = io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
						ok = resp.StatusCode == 201 || resp.StatusCode == 200
					}
					if !ok {
						time.Sleep(5 * time.Millisecond)
					}
				}
				if !ok {
					failures <- fmt.Sprintf("e2e-%04d never started", k)
					continue
				}
				accepted.Add(1)
			}
		}()
	}
	// Kill the server in the middle of the starts.
	for deadline := time.Now().Add(60 * time.Second); accepted.Load() < total/2 && time.Now().Before(deadline); {
		time.Sleep(2 * time.Millisecond)
	}
	srv.kill(t)
	killedAt := accepted.Load()
	srv = startServe(t, "--workflows", dir, "--data", data)
	ag.baton.Store(srv.url)
	base.Store(srv.url)
	wg.Wait()
	close(failures)
	for f := range failures {
		t.Error(f)
	}
	t.Logf("killed after %d starts had been answered", killedAt)

	// Every instance completes, with the outcome its input asked for.
	var page struct {
		Instances []server.Instance `json:"instances"`
	}
	completed := 0
	for deadline := time.Now().Add(e2eWait); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		// A list that answers late (the restarted server is busy resuming
		// on a loaded machine) is asked again until the deadline.
		resp, err := client.Get(srv.url + "/v1/instances?status=completed&limit=1000")
		if err != nil {
			t.Logf("list: %v (asked again)", err)
			continue
		}
		page.Instances = nil
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&page))
		resp.Body.Close()
		if completed = len(page.Instances); completed == total {
			break
		}
	}
	if completed != total {
		resp, err := client.Get(srv.url + "/v1/instances?limit=1000")
		require.NoError(t, err)
		var running struct {
			Instances []server.Instance `json:"instances"`
		}
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&running))
		resp.Body.Close()
		shown := 0
		for _, in := range running.Instances {
			if in.Status != "completed" && shown < 3 {
				shown++
				h, _ := client.Get(srv.url + "/v1/instances/" + in.ID + "/history")
				hist, _ := io.ReadAll(h.Body)
				h.Body.Close()
				t.Logf("%s %s step %d: %s", in.ID, in.State, in.Step, hist)
			}
		}
		t.Fatalf("%d of %d instances completed", completed, total)
	}
	for _, in := range page.Instances {
		var k int
		_, err := fmt.Sscanf(in.ID, "e2e-%04d", &k)
		require.NoError(t, err)
		want := "REJECTED"
		if k%2 == 0 {
			want = "DONE"
		}
		assert.Equal(t, want, in.Outcome, in.ID)
	}
	assert.Zero(t, ag.badSigs.Load(), "every call to the writer is signed")

	// A graceful stop exits 0.
	require.NoError(t, srv.cmd.Process.Signal(syscall.SIGTERM))
	<-srv.drained
	assert.NoError(t, srv.cmd.Wait())
}

func TestWatch_FollowsALiveInstance(t *testing.T) {
	ag := newHTTPAgents(t)
	ag.hold.Store(true)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "review.yaml"), []byte(strings.ReplaceAll(reviewFlow, "AGENTS", ag.srv.URL)), 0o600))
	t.Setenv("WFRUN_TEST_SECRET", "e2e-secret")
	s, err := server.New(context.Background(), server.Config{WorkflowsDir: dir, DataDir: t.TempDir(), NATS: server.NoNATS})
	require.NoError(t, err)
	hs := httptest.NewServer(s.Handler())
	defer hs.Close()
	defer s.Close()
	ag.baton.Store(hs.URL)

	tests := []struct {
		name    string
		approve bool
		cancel  bool
		code    int
		has     string
	}{
		{name: "completes", approve: true, code: 0, has: "completed in DONE"},
		{name: "cancelled", cancel: true, code: 1, has: "cancelled"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stdout, _, code := wfrun(t, "start", "review", "--server", hs.URL, "--input", fmt.Sprintf(`{"approve":%t}`, tt.approve), "-o", "json")
			require.Equal(t, 0, code, stdout)
			var started struct{ ID string }
			require.NoError(t, json.Unmarshal([]byte(stdout), &started))
			var (
				out  syncBuffer
				done = make(chan int, 1)
			)
			go func() {
				err := run(context.Background(), []string{"watch", started.ID, "--server", hs.URL}, strings.NewReader(""), &out, io.Discard)
				done <- exitCode(err)
			}()
			// The instance moves on only once watch follows it.
			for deadline := time.Now().Add(10 * time.Second); !strings.Contains(out.String(), "state_changed") && time.Now().Before(deadline); {
				time.Sleep(2 * time.Millisecond)
			}
			require.Contains(t, out.String(), "state_changed", "watch prints the steps so far")
			if tt.cancel {
				_, _, code := wfrun(t, "cancel", started.ID, "--server", hs.URL)
				require.Equal(t, 0, code)
			} else {
				report := fmt.Sprintf(`{"instance_id":%q,"step":1,"agent":"writer","trigger":"drafted"}`, started.ID)
				resp, err := http.Post(hs.URL+"/v1/reports", "application/json", strings.NewReader(report))
				require.NoError(t, err)
				resp.Body.Close()
			}
			select {
			case code := <-done:
				assert.Equal(t, tt.code, code, out.String())
			case <-time.After(20 * time.Second):
				t.Fatal("watch did not end with its instance")
			}
			assert.Contains(t, out.String(), tt.has)
			// Watching a finished instance ends at once, with the same verdict.
			_, _, code = wfrun(t, "watch", started.ID, "--server", hs.URL)
			assert.Equal(t, tt.code, code)
		})
	}
}

// syncBuffer is a bytes.Buffer safe for one writer and one reader.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
