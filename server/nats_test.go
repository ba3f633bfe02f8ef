package server_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/natsbus"
	"github.com/batonhq/baton/registry"
	"github.com/batonhq/baton/server"
)

// The environment of the children this file starts: the test binary run
// again as a Go worker of echoFlow's agent on NATS, or as a server whose
// Go handler is slow (see runChild).
const (
	workerChildEnv = "SERVER_TEST_WORKER_NATS"
	serveChildEnv  = "SERVER_TEST_SERVE_DIR"
)

// runChild runs the child the environment asks for, if any: ok is false
// when the process is the test binary itself.
func runChild() (code int, ok bool) {
	if url := os.Getenv(workerChildEnv); url != "" {
		return runWorkerChild(url), true
	}
	if dir := os.Getenv(serveChildEnv); dir != "" {
		return runServeChild(dir), true
	}
	if spec := os.Getenv(orderChildEnv); spec != "" {
		return runOrderServer(spec), true
	}
	if spec := os.Getenv(chain4ChildEnv); spec != "" {
		return runChain4Child(spec), true
	}
	if url := os.Getenv(chain4FloorChildEnv); url != "" {
		return runChain4FloorChild(url), true
	}
	return 0, false
}

// runWorkerChild is a Go agent in its own process: a natsbus Worker for
// echoFlow's worker, until SIGTERM.
func runWorkerChild(url string) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	nc, err := nats.Connect(url)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer nc.Close()
	tr, err := natsbus.New(ctx, nc, natsbus.DefaultConfig())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer tr.Close()
	pid := os.Getpid()
	wk, err := natsbus.NewWorker(tr, map[string]registry.Handler{
		"worker": registry.HandlerFunc(func(_ context.Context, t *registry.Task) (registry.Outcome, error) {
			return registry.Outcome{Trigger: "done", Result: map[string]any{"pid": pid, "n": t.Input["n"]}}, nil
		}),
	}, natsbus.WorkerConfig{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println("worker ready")
	if err := wk.Run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// drainFlow's first agent is a slow Go handler; its second runs only once
// the server has started again.
const drainFlow = `workflow: drain
initial: FIRST
agents:
  slow: {}
  next: {}
states:
  FIRST: {agent: slow}
  SECOND: {agent: next}
  DONE: {terminal: true}
rules:
  - {id: one, from: slow, trigger: done, next: SECOND}
  - {id: two, from: next, trigger: done, next: DONE}
`

// runServeChild is a server on the data directory dir/data: its slow
// handler says "entered" on stdout and returns once dir/release exists;
// its next handler leaves dir/next-ran (it must not run during a drain).
func runServeChild(dir string) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	var once sync.Once
	err := server.Run(ctx, server.Config{
		WorkflowsDir: filepath.Join(dir, "workflows"), DataDir: filepath.Join(dir, "data"),
		HTTPAddr: "127.0.0.1:0", NATSListen: anyPort, GracePeriod: time.Minute,
		OnListen: func(a net.Addr) { fmt.Println("listening", a) },
		Handlers: map[string]registry.Handler{
			"slow": registry.HandlerFunc(func(ctx context.Context, _ *registry.Task) (registry.Outcome, error) {
				once.Do(func() { fmt.Println("entered") })
				for {
					if _, err := os.Stat(filepath.Join(dir, "release")); err == nil {
						return registry.Outcome{Trigger: "done", Result: map[string]any{"slow": "finished"}}, nil
					}
					select {
					case <-ctx.Done():
						return registry.Outcome{}, ctx.Err()
					case <-time.After(2 * time.Millisecond):
					}
				}
			}),
			"next": registry.HandlerFunc(func(context.Context, *registry.Task) (registry.Outcome, error) {
				_ = os.WriteFile(filepath.Join(dir, "next-ran"), nil, 0o600)
				return registry.Outcome{Trigger: "done"}, nil
			}),
		},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// startChild starts the test binary as a child with env; lines receives
// its stdout. The child is killed at the end of the test if still running.
func startChild(t *testing.T, env ...string) (*exec.Cmd, <-chan string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	lines := make(chan string, 16)
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			default:
			}
		}
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-drained
		_ = cmd.Wait()
	})
	return cmd, lines
}

// expectLine waits for a line of a child starting with prefix.
func expectLine(t *testing.T, lines <-chan string, prefix string) string {
	t.Helper()
	deadline := time.After(60 * time.Second)
	for {
		select {
		case l := <-lines:
			if strings.HasPrefix(l, prefix) {
				return l
			}
		case <-deadline:
			t.Fatalf("the child never said %q", prefix)
		}
	}
}

// The server on its embedded NATS server, its agent a Go worker in
// another process: the work goes out over NATS and the reports come back
// over NATS.
func TestServer_NATS_GoWorkerInAnotherProcess(t *testing.T) {
	f := newFixture(t)
	url := f.srv.NATSURL()
	require.True(t, strings.HasPrefix(url, "nats://127.0.0.1:"), url)
	cmd, lines := startChild(t, workerChildEnv+"="+url)
	expectLine(t, lines, "worker ready")
	const n = 20
	ids := make([]string, n)
	for k := range n {
		code, body := f.do("POST", "/v1/workflows/echo/instances", map[string]any{"input": map[string]any{"n": k}})
		require.Equal(t, 201, code, "%v", body)
		ids[k] = body["id"].(string)
	}
	for _, id := range ids {
		f.waitStatus(id, "completed")
	}
	hist := f.history(ids[n-1])
	var ran bool
	for _, e := range hist {
		if e["kind"] == "agent_run" && e["agent"] == "worker" {
			res := e["result"].(map[string]any)
			assert.EqualValues(t, cmd.Process.Pid, res["pid"], "the run was the child's")
			assert.EqualValues(t, n-1, res["n"])
			ran = true
		}
	}
	assert.True(t, ran, "history %v", hist)
	code, body := f.do("GET", "/readyz", nil)
	assert.Equal(t, 200, code, "%v", body)
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	require.NoError(t, cmd.Wait(), "the worker drains and exits 0 on SIGTERM")
}

// On SIGTERM the server lets a Go handler's run under way finish within
// the grace period, commits its outcome, starts no other run and exits 0;
// the next start goes on from there.
func TestServer_SIGTERM_DrainsRunsThenResumes(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server process")
	}
	dir := t.TempDir()
	flows := filepath.Join(dir, "workflows")
	require.NoError(t, os.MkdirAll(flows, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(flows, "drain.yaml"), []byte(drainFlow), 0o600))
	cmd, lines := startChild(t, serveChildEnv+"="+dir)
	addr := strings.TrimPrefix(expectLine(t, lines, "listening "), "listening ")
	f := &fixture{t: t, http: nil}
	base := "http://" + addr
	code, body := doURL(t, "POST", base+"/v1/workflows/drain/instances", `{"id":"d-1"}`)
	require.Equal(t, 201, code, "%v", body)
	expectLine(t, lines, "entered")
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	// The server stops taking new instances at once (its API stops
	// listening, or answers 503 until it does).
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(2 * time.Millisecond) {
		code, _ := doURL(t, "GET", base+"/readyz", "")
		if code != 200 {
			break
		}
		require.True(t, time.Now().Before(deadline), "still ready after SIGTERM")
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "release"), nil, 0o600))
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err := <-exited:
		require.NoError(t, err, "a graceful stop exits 0")
	case <-time.After(60 * time.Second):
		t.Fatal("the server did not exit after its handler finished")
	}
	_, err := os.Stat(filepath.Join(dir, "next-ran"))
	require.True(t, errors.Is(err, os.ErrNotExist), "the next run did not start during the drain")

	// The next start: the slow run is not run again, the next one runs.
	var slowRuns int
	s, err := server.New(context.Background(), server.Config{
		WorkflowsDir: flows, DataDir: filepath.Join(dir, "data"), NATSListen: anyPort,
		Handlers: map[string]registry.Handler{
			"slow": registry.HandlerFunc(func(context.Context, *registry.Task) (registry.Outcome, error) {
				slowRuns++
				return registry.Outcome{Trigger: "done"}, nil
			}),
			"next": registry.HandlerFunc(func(context.Context, *registry.Task) (registry.Outcome, error) {
				return registry.Outcome{Trigger: "done"}, nil
			}),
		},
	})
	require.NoError(t, err)
	f.srv, f.http = s, newHTTP(t, s)
	defer s.Close()
	got := f.waitStatus("d-1", "completed")
	assert.Equal(t, "DONE", got["outcome"])
	runs := 0
	for _, e := range f.history("d-1") {
		if e["kind"] == "agent_run" && e["agent"] == "slow" {
			runs++
			assert.Equal(t, "finished", e["result"].(map[string]any)["slow"], "the drained run's outcome was committed")
		}
	}
	assert.Equal(t, 1, runs)
	s.Close()
	assert.Zero(t, slowRuns)
}

// An embedded NATS server's port that is taken stops the start with an
// error naming the flag.
func TestNew_NATSPortTaken(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	ag := newAgents(t)
	_, err = server.New(context.Background(), server.Config{
		WorkflowsDir: workflowsDir(t, ag.srv.URL, map[string]string{"echo.yaml": echoFlow}),
		DataDir:      t.TempDir(), NATSListen: ln.Addr().String(),
	})
	var ce *server.ConfigError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "nats-listen", ce.Field)
}
