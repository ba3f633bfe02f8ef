package mcpagent_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/batonhq/baton/internal/jspeers"
	"github.com/batonhq/baton/internal/proctest"
	"github.com/batonhq/baton/mcpagent"
	"github.com/batonhq/baton/registry"
)

// inputArgs sends the task's input as the arguments.
func inputArgs(t *registry.Task) (map[string]any, error) { return t.Input, nil }

func TestAgent_Handle_MapsEachAnswer(t *testing.T) {
	t.Parallel()
	cases := []struct {
		tool   string
		input  map[string]any
		result map[string]any
		usage  registry.Usage
	}{
		{
			tool:   "search",
			input:  map[string]any{"query": "tides", "limit": 1},
			result: map[string]any{"query": "tides", "hits": []any{map[string]any{"title": "tides 1"}}},
		},
		{tool: "text_json", result: map[string]any{"answer": 42.0, "unit": "widgets"}},
		{tool: "text", result: map[string]any{"text": "plain words"}},
		{
			tool:   "usage",
			result: map[string]any{"summary": "short"},
			usage:  registry.Usage{InputTokens: 120, OutputTokens: 30, Cost: 0.25},
		},
	}
	for _, c := range cases {
		t.Run(c.tool, func(t *testing.T) {
			transports(t, c.tool, func(t *testing.T, cfg mcpagent.Config) {
				cfg.Arguments = inputArgs
				a := newAgent(t, cfg)
				out, err := a.Handle(context.Background(), task(c.input))
				if err != nil {
					t.Fatalf("Handle: %v", err)
				}
				if out.Trigger != "done" {
					t.Errorf("trigger: got %q, want done", out.Trigger)
				}
				if !reflect.DeepEqual(out.Result, c.result) {
					t.Errorf("result: got %v, want %v", out.Result, c.result)
				}
				if out.Usage != c.usage {
					t.Errorf("usage: got %+v, want %+v", out.Usage, c.usage)
				}
			})
		})
	}
}

func TestAgent_Handle_IsErrorIsAToolError(t *testing.T) {
	t.Parallel()
	transports(t, "fail", func(t *testing.T, cfg mcpagent.Config) {
		a := newAgent(t, cfg)
		_, err := a.Handle(context.Background(), task(nil))
		wantKind(t, err, mcpagent.KindToolError, true)
		var te *mcpagent.ToolError
		if !errors.As(err, &te) || te.Message != "the index is down" {
			t.Fatalf("got %v, want a ToolError with the tool's text", err)
		}
	})
}

func TestAgent_Handle_ArgumentsTheSchemaRefusesAreNotSent(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		input map[string]any
		field string
	}{
		{"over the maximum", map[string]any{"query": "tides", "limit": 99}, "/limit"},
		{"wrong type", map[string]any{"query": 7}, "/query"},
		{"missing required", map[string]any{"limit": 2}, ""},
		{"not allowed", map[string]any{"query": "tides", "page": 2}, ""},
	}
	transports(t, "search", func(t *testing.T, cfg mcpagent.Config) {
		cfg.Arguments = inputArgs
		a := newAgent(t, cfg)
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				_, err := a.Handle(context.Background(), task(c.input))
				wantKind(t, err, mcpagent.KindInvalidArguments, false)
				var ae *mcpagent.ArgumentsError
				if !errors.As(err, &ae) {
					t.Fatalf("got %T %v, want an ArgumentsError", err, err)
				}
				if ae.Field != c.field || ae.Tool != "search" || ae.Reason == "" {
					t.Errorf("got %+v, want field %q of search with a reason", ae, c.field)
				}
			})
		}
	})
}

func TestAgent_Handle_ArgumentsThatFailOrAreNotJSON(t *testing.T) {
	t.Parallel()
	cfg := stdioConfig(t, "echo")
	missing := errors.New("input.question is missing")
	cfg.Arguments = func(*registry.Task) (map[string]any, error) { return nil, missing }
	a := newAgent(t, cfg)
	_, err := a.Handle(context.Background(), task(nil))
	wantKind(t, err, mcpagent.KindInvalidArguments, false)
	if !errors.Is(err, missing) || !errors.Is(err, mcpagent.ErrInvalidArguments) || !strings.Contains(err.Error(), "input.question is missing") {
		t.Errorf("got %v, want the expression's error", err)
	}
	cfg.Arguments = func(*registry.Task) (map[string]any, error) { return map[string]any{"c": make(chan int)}, nil }
	b := newAgent(t, cfg)
	_, err = b.Handle(context.Background(), task(nil))
	wantKind(t, err, mcpagent.KindInvalidArguments, false)
}

func TestAgent_Handle_DefaultArgumentsAreTheEnvironment(t *testing.T) {
	t.Parallel()
	a := newAgent(t, stdioConfig(t, "echo"))
	tk := task(map[string]any{"q": "a"})
	tk.PreviousResult = map[string]any{"n": 1}
	tk.Item, tk.Index, tk.HasItem = "x", 2, true
	out, err := a.Handle(context.Background(), tk)
	if err != nil {
		t.Fatalf("Handle: %v", err)
	}
	want := map[string]any{"input": map[string]any{"q": "a"}, "previous_result": map[string]any{"n": 1.0}, "item": "x", "index": 2.0}
	if !reflect.DeepEqual(out.Result, want) {
		t.Errorf("got %v, want %v", out.Result, want)
	}
}

func TestAgent_Handle_UnknownToolIsPermanent(t *testing.T) {
	t.Parallel()
	transports(t, "serch", func(t *testing.T, cfg mcpagent.Config) {
		a := newAgent(t, cfg)
		_, err := a.Handle(context.Background(), task(nil))
		wantKind(t, err, mcpagent.KindUnknownTool, false)
		var ue *mcpagent.UnknownToolError
		if !errors.As(err, &ue) || ue.Suggestion != "search" {
			t.Fatalf("got %v, want an UnknownToolError suggesting search", err)
		}
	})
}

func TestAgent_Stdio_RestartsAServerThatExitedMidCall(t *testing.T) {
	t.Parallel()
	cfg := stdioConfig(t, "process")
	cfg.Arguments = inputArgs
	a := newAgent(t, cfg)
	first := pidOf(t, a)
	_, err := a.Handle(context.Background(), task(map[string]any{"exit": true}))
	wantKind(t, err, mcpagent.KindTransport, true)
	second := pidOf(t, a)
	if second == first {
		t.Fatalf("pid: got %d again, want a new process", second)
	}
	if err := a.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	for _, pid := range []int{first, second} {
		if !gone(pid) {
			t.Errorf("process %d is still there after Close", pid)
		}
	}
}

func TestAgent_Stdio_NonJSONOnStdoutFailsTheCallAndRestarts(t *testing.T) {
	t.Parallel()
	cfg := stdioConfig(t, "process")
	cfg.Arguments = inputArgs
	a := newAgent(t, cfg)
	first := pidOf(t, a)
	_, err := a.Handle(context.Background(), task(map[string]any{"garbage": true}))
	wantKind(t, err, mcpagent.KindTransport, true)
	if second := pidOf(t, a); second == first {
		t.Fatalf("pid: got %d again, want a new process", second)
	}
}

func TestAgent_Stdio_CloseStopsTheServer(t *testing.T) {
	t.Parallel()
	cfg := stdioConfig(t, "process")
	cfg.Arguments = inputArgs
	a := newAgent(t, cfg)
	pid := pidOf(t, a)
	if err := a.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if !gone(pid) {
		t.Fatalf("process %d is still there after Close", pid)
	}
	if err := a.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := a.Handle(context.Background(), task(nil)); !errors.Is(err, mcpagent.ErrClosed) {
		t.Fatalf("Handle after Close: got %v, want ErrClosed", err)
	}
}

func TestAgent_Stdio_ConcurrentRunsShareOneServer(t *testing.T) {
	t.Parallel()
	cfg := stdioConfig(t, "process")
	cfg.Arguments = inputArgs
	a := newAgent(t, cfg)
	const runs = 6
	pids := make([]int, runs)
	var wg sync.WaitGroup
	for i := range runs {
		wg.Go(func() {
			out, err := a.Handle(context.Background(), task(nil))
			if err != nil {
				t.Errorf("Handle: %v", err)
				return
			}
			pid, _ := out.Result["pid"].(float64)
			pids[i] = int(pid)
		})
	}
	wg.Wait()
	for _, p := range pids[1:] {
		if p != pids[0] {
			t.Fatalf("pids: got %v, want one server", pids)
		}
	}
}

func TestAgent_Handle_IsBoundedByTheContext(t *testing.T) {
	t.Parallel()
	transports(t, "process", func(t *testing.T, cfg mcpagent.Config) {
		cfg.Arguments = inputArgs
		a := newAgent(t, cfg)
		first := pidOf(t, a)
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		_, err := a.Handle(ctx, task(map[string]any{"hang": true}))
		wantKind(t, err, mcpagent.KindTransport, true)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("got %v, want the context's deadline", err)
		}
		if again := pidOf(t, a); again != first {
			t.Fatalf("pid: got %d, want the same server %d: a call's context is not the server's", again, first)
		}
	})
}

func TestAgent_Close_FailsTheRunUnderWay(t *testing.T) {
	t.Parallel()
	cfg := stdioConfig(t, "process")
	cfg.Arguments = inputArgs
	a := newAgent(t, cfg)
	pid := pidOf(t, a)
	errc := make(chan error, 1)
	go func() {
		_, err := a.Handle(context.Background(), task(map[string]any{"hang": true}))
		errc <- err
	}()
	if err := a.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := <-errc; err == nil {
		t.Fatal("the run under way: got no error, want one")
	}
	if !gone(pid) {
		t.Fatalf("process %d is still there after Close", pid)
	}
}

func TestAgent_HTTP_SendsTheToken(t *testing.T) {
	t.Parallel()
	url := httpPeer(t, "MCP_TOKEN=s3cret")
	a := newAgent(t, mcpagent.Config{URL: url, Tool: "text", Token: "s3cret"})
	if _, err := a.Handle(context.Background(), task(nil)); err != nil {
		t.Fatalf("with the token: %v", err)
	}
	b := newAgent(t, mcpagent.Config{URL: url, Tool: "text", Token: "wrong"})
	_, err := b.Handle(context.Background(), task(nil))
	wantKind(t, err, mcpagent.KindTransport, true)
	if !errors.Is(err, mcpagent.ErrTransport) {
		t.Fatalf("got %v, want ErrTransport", err)
	}
}

func TestAgent_HTTP_ServerExitedMidCall(t *testing.T) {
	t.Parallel()
	cfg := mcpagent.Config{URL: httpPeer(t), Tool: "process", Arguments: inputArgs}
	a := newAgent(t, cfg)
	pidOf(t, a)
	_, err := a.Handle(context.Background(), task(map[string]any{"exit": true}))
	wantKind(t, err, mcpagent.KindTransport, true)
	_, err = a.Handle(context.Background(), task(nil))
	wantKind(t, err, mcpagent.KindTransport, true)
}

func TestAgent_HTTP_NonJSONAnswers(t *testing.T) {
	t.Parallel()
	cases := map[string]http.HandlerFunc{
		"html": func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			_, _ = w.Write([]byte("<html>nope</html>"))
		},
		"broken json": func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":{`))
		},
		"not found": http.NotFound,
	}
	for name, h := range cases {
		t.Run(name, func(t *testing.T) {
			url := serve(t, h)
			a := newAgent(t, mcpagent.Config{URL: url, Tool: "text"})
			_, err := a.Handle(context.Background(), task(nil))
			wantKind(t, err, mcpagent.KindTransport, true)
		})
	}
}

// serve serves h on 127.0.0.1 until the test ends.
func serve(t *testing.T, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close(); <-done })
	return "http://" + ln.Addr().String() + "/mcp"
}

func TestAgent_Stdio_CommandThatCannotStart(t *testing.T) {
	t.Parallel()
	a := newAgent(t, mcpagent.Config{Command: []string{"./no-such-server"}, Dir: t.TempDir(), Tool: "x"})
	_, err := a.Handle(context.Background(), task(nil))
	wantKind(t, err, mcpagent.KindTransport, true)
}

func TestNew_RefusesBadConfig(t *testing.T) {
	cases := []struct {
		name  string
		cfg   mcpagent.Config
		field string
	}{
		{"neither", mcpagent.Config{Tool: "t"}, "url"},
		{"both", mcpagent.Config{URL: "http://127.0.0.1:1/mcp", Command: []string{"x"}, Tool: "t"}, "url"},
		{"not http", mcpagent.Config{URL: "ftp://127.0.0.1/mcp", Tool: "t"}, "url"},
		{"no host", mcpagent.Config{URL: "http:///mcp", Tool: "t"}, "url"},
		{"empty program", mcpagent.Config{Command: []string{""}, Tool: "t"}, "command"},
		{"token for stdio", mcpagent.Config{Command: []string{"x"}, Token: "s", Tool: "t"}, "token"},
		{"no tool", mcpagent.Config{URL: "http://127.0.0.1:1/mcp"}, "tool"},
		{"negative timeout", mcpagent.Config{URL: "http://127.0.0.1:1/mcp", Tool: "t", Timeout: -1}, "timeout"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := mcpagent.New(c.cfg)
			var ce *mcpagent.ConfigError
			if !errors.As(err, &ce) || ce.Field != c.field || !errors.Is(err, mcpagent.ErrInvalidConfig) {
				t.Fatalf("got %v, want a ConfigError on %s", err, c.field)
			}
		})
	}
}

func TestAgent_ListsToolsOncePerSession(t *testing.T) {
	t.Parallel()
	cfg := stdioConfig(t, "process")
	cfg.Arguments = inputArgs
	a := newAgent(t, cfg)
	for range 3 {
		out, err := a.Handle(context.Background(), task(nil))
		if err != nil {
			t.Fatalf("Handle: %v", err)
		}
		if out.Result["lists"] != 1.0 {
			t.Fatalf("tools/list requests: got %v, want 1", out.Result["lists"])
		}
	}
	_, err := a.Handle(context.Background(), task(map[string]any{"exit": true}))
	wantKind(t, err, mcpagent.KindTransport, true)
	out, err := a.Handle(context.Background(), task(nil))
	if err != nil || out.Result["lists"] != 1.0 {
		t.Fatalf("the restarted server: got %v, %v; want one tools/list request", out.Result, err)
	}
}

func TestAgent_Stdio_RestartsAServerKilledWhileIdle(t *testing.T) {
	t.Parallel()
	cfg := stdioConfig(t, "process")
	cfg.Arguments = inputArgs
	a := newAgent(t, cfg)
	first := pidOf(t, a)
	if err := syscall.Kill(first, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// The agent may not have seen the death yet: the next run then fails
	// with kind transport, and the one after starts the server again.
	for attempt := 1; ; attempt++ {
		out, err := a.Handle(context.Background(), task(nil))
		if err == nil {
			if pid, _ := out.Result["pid"].(float64); int(pid) == first || pid == 0 {
				t.Fatalf("pid: got %v, want a new process", out.Result["pid"])
			}
			return
		}
		wantKind(t, err, mcpagent.KindTransport, true)
		if attempt == 2 {
			t.Fatalf("run %d after the kill: %v", attempt, err)
		}
	}
}

func TestAgent_HTTP_ReconnectsToARestartedServer(t *testing.T) {
	node := jspeers.Node(t)
	addr := proctest.FreeAddr(t)
	peer := proctest.Start(t, nil, "listening", node, jspeers.Script(peerScript), "--http", addr)
	a := newAgent(t, mcpagent.Config{URL: "http://" + addr + "/mcp", Tool: "process", Arguments: inputArgs})
	first := pidOf(t, a)
	if err := peer.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ { // the port is free once the process is gone
		c, err := net.Dial("tcp", addr)
		if err != nil {
			break
		}
		c.Close()
		if i == 5000 {
			t.Fatal("the killed server still listens")
		}
		time.Sleep(time.Millisecond)
	}
	proctest.Start(t, nil, "listening", node, jspeers.Script(peerScript), "--http", addr)
	// The first run may still use the old session, which the new server
	// does not know: kind transport, and the next run opens a new one.
	for attempt := 1; ; attempt++ {
		out, err := a.Handle(context.Background(), task(nil))
		if err == nil {
			if pid, _ := out.Result["pid"].(float64); int(pid) == first {
				t.Fatalf("pid: got %d, want the new server", first)
			}
			return
		}
		wantKind(t, err, mcpagent.KindTransport, true)
		if attempt == 2 {
			t.Fatalf("run %d after the restart: %v", attempt, err)
		}
	}
}

func TestAgent_SessionOutlivesTheFirstRunsContext(t *testing.T) {
	t.Parallel()
	transports(t, "process", func(t *testing.T, cfg mcpagent.Config) {
		cfg.Arguments = inputArgs
		a := newAgent(t, cfg)
		ctx, cancel := context.WithCancel(context.Background())
		out, err := a.Handle(ctx, task(nil))
		cancel()
		if err != nil {
			t.Fatalf("Handle: %v", err)
		}
		if again := pidOf(t, a); float64(again) != out.Result["pid"] {
			t.Fatalf("pid: got %d, want the first run's %v", again, out.Result["pid"])
		}
		out, err = a.Handle(context.Background(), task(nil))
		if err != nil || out.Result["lists"] != 1.0 {
			t.Fatalf("got %v, %v; want the session the first run opened", out.Result, err)
		}
	})
}

func TestAgent_Stdio_ProgramRelativeToDir(t *testing.T) {
	t.Parallel()
	node := jspeers.Node(t)
	dir := t.TempDir()
	script := "#!/bin/sh\nexec '" + node + "' '" + jspeers.Script(peerScript) + "'\n"
	if err := os.WriteFile(filepath.Join(dir, "server.sh"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	a := newAgent(t, mcpagent.Config{Command: []string{"./server.sh"}, Dir: dir, Tool: "text"})
	out, err := a.Handle(context.Background(), task(nil))
	if err != nil || out.Result["text"] != "plain words" {
		t.Fatalf("got %v, %v; want the server's answer", out.Result, err)
	}
}

func TestAgent_Handle_JSONRPCErrorAnswers(t *testing.T) {
	t.Parallel()
	transports(t, "throw", func(t *testing.T, cfg mcpagent.Config) {
		cfg.Arguments = inputArgs
		a := newAgent(t, cfg)
		_, err := a.Handle(context.Background(), task(map[string]any{"message": "the index is locked"}))
		wantKind(t, err, mcpagent.KindToolError, true)
		var te *mcpagent.ToolError
		if !errors.As(err, &te) || te.Code != -32603 || !strings.Contains(te.Message, "the index is locked") {
			t.Fatalf("got %v, want a ToolError with code -32603 and the tool's message", err)
		}
		_, err = a.Handle(context.Background(), task(map[string]any{"code": -32602, "message": "limit too high"}))
		wantKind(t, err, mcpagent.KindInvalidArguments, false)
	})
}

func TestAgent_Stdio_LogsTheServersStderr(t *testing.T) {
	t.Parallel()
	core, logs := observer.New(zap.InfoLevel)
	cfg := stdioConfig(t, "process")
	cfg.Logger = zap.New(core)
	a := newAgent(t, cfg)
	pid := pidOf(t, a)
	if err := a.Close(); err != nil { // the line was written before the server answered; Close waits for the copy
		t.Fatal(err)
	}
	want := fmt.Sprintf("mcp tools server %d on stdio", pid)
	for _, e := range logs.FilterMessage("mcpagent: server stderr").All() {
		if e.ContextMap()["line"] == want {
			return
		}
	}
	t.Fatalf("log: got %v, want the line %q", logs.All(), want)
}
