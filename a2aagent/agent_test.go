package a2aagent_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/batonhq/baton/a2aagent"
	"github.com/batonhq/baton/registry"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fake is an A2A agent written in Go for what the JavaScript peer cannot
// be made to do: answer with HTTP errors, garbage, stale states.
type fake struct {
	t     testing.TB
	srv   *httptest.Server
	card  func(w http.ResponseWriter, r *http.Request)
	rpc   func(w http.ResponseWriter, method string, id json.RawMessage, params json.RawMessage)
	mu    sync.Mutex
	calls []string // the methods called, in order
	cards atomic.Int64
}

func newFake(t testing.TB) *fake {
	f := &fake{t: t}
	f.card = func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, map[string]any{
			"name": "fake",
			"supportedInterfaces": []any{
				map[string]any{"url": f.srv.URL + "/rpc", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
			},
		})
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/agent-card.json", func(w http.ResponseWriter, r *http.Request) {
		f.cards.Add(1)
		f.card(w, r)
	})
	mux.HandleFunc("POST /rpc", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			t.Errorf("the agent was sent %v", err)
		}
		f.mu.Lock()
		f.calls = append(f.calls, req.Method)
		f.mu.Unlock()
		f.rpc(w, req.Method, req.ID, req.Params)
	})
	f.srv = httptest.NewServer(mux)
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fake) called() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func result(w http.ResponseWriter, id json.RawMessage, v any) {
	writeJSON(w, 200, map[string]any{"jsonrpc": "2.0", "id": id, "result": v})
}

func taskJSON(id, state string, extra map[string]any) map[string]any {
	tk := map[string]any{"id": id, "contextId": "c", "status": map[string]any{"state": state}}
	for k, v := range extra {
		tk[k] = v
	}
	return tk
}

func TestAgent_Failures(t *testing.T) {
	for _, tc := range []struct {
		name      string
		card      func(w http.ResponseWriter, r *http.Request)
		rpc       func(w http.ResponseWriter, method string, id, params json.RawMessage)
		kind      string
		retryable bool
		is        error
	}{
		{name: "500", rpc: status(500), kind: "transport", retryable: true},
		{name: "503", rpc: status(503), kind: "transport", retryable: true},
		{name: "408", rpc: status(408), kind: "transport", retryable: true},
		{name: "429", rpc: status(429), kind: "transport", retryable: true},
		{name: "401", rpc: status(401), kind: "unauthorized"},
		{name: "403", rpc: status(403), kind: "unauthorized"},
		{name: "400", rpc: status(400), kind: "transport"},
		{name: "card401", card: cardStatus(401), kind: "unauthorized"},
		{name: "card503", card: cardStatus(503), kind: "transport", retryable: true},
		{name: "cardNotFound", card: cardStatus(404), kind: "agent_error", is: a2aagent.ErrCard},
		{name: "cardGarbage", card: cardBody(`{"name":`), kind: "agent_error", is: a2aagent.ErrCard},
		{name: "cardNoJSONRPC", card: cardBody(`{"supportedInterfaces":[{"url":"http://x","protocolBinding":"GRPC","protocolVersion":"1.0"}]}`), kind: "agent_error", is: a2aagent.ErrCard},
		{name: "cardVersion2", card: cardBody(`{"url":"http://x","protocolVersion":"2.0"}`), kind: "agent_error", is: a2aagent.ErrCard},
		{name: "noAnswer", rpc: hangUp, kind: "transport", retryable: true},
		{name: "rpcError", rpc: rpcError(-32001, "Task not found"), kind: "agent_error", retryable: true},
		{name: "rpcErrorIn400", rpc: rpcErrorStatus(400, -32602, "bad params"), kind: "agent_error", retryable: true},
		{name: "notJSON", rpc: raw(200, "<html>hi</html>"), kind: "invalid_result", retryable: true, is: a2aagent.ErrAnswer},
		{name: "wrongID", rpc: raw(200, `{"jsonrpc":"2.0","id":"other","result":{"message":{"parts":[]}}}`), kind: "invalid_result", retryable: true, is: a2aagent.ErrAnswer},
		{name: "nullResult", rpc: results(nil), kind: "invalid_result", retryable: true, is: a2aagent.ErrAnswer},
		{name: "neither", rpc: results(map[string]any{"foo": 1}), kind: "invalid_result", retryable: true, is: a2aagent.ErrAnswer},
		{name: "unknownState", rpc: results(map[string]any{"task": taskJSON("t1", "TASK_STATE_DANCING", nil)}), kind: "invalid_result", retryable: true, is: a2aagent.ErrAnswer},
		{name: "taskWithoutID", rpc: results(map[string]any{"task": taskJSON("", "TASK_STATE_WORKING", nil)}), kind: "invalid_result", retryable: true, is: a2aagent.ErrAnswer},
		{name: "messageWithoutParts", rpc: results(map[string]any{"message": map[string]any{"messageId": "m"}}), kind: "invalid_result", retryable: true, is: a2aagent.ErrAnswer},
		{name: "tooLarge", rpc: raw(200, `{"x":"`+strings.Repeat("a", a2aagent.MaxBody)+`"}`), kind: "invalid_result", retryable: true},
		{name: "canceled", rpc: results(map[string]any{"task": taskJSON("t1", "canceled", nil)}), kind: "cancelled", is: a2aagent.ErrTask},
		{name: "getTaskOfAnother", rpc: func(w http.ResponseWriter, method string, id, _ json.RawMessage) {
			if method == "SendMessage" {
				result(w, id, map[string]any{"task": taskJSON("t1", "TASK_STATE_WORKING", nil)})
				return
			}
			result(w, id, taskJSON("t2", "TASK_STATE_COMPLETED", nil))
		}, kind: "invalid_result", retryable: true, is: a2aagent.ErrAnswer},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t)
			if tc.card != nil {
				f.card = tc.card
			}
			f.rpc = tc.rpc
			if f.rpc == nil {
				f.rpc = results(map[string]any{"message": map[string]any{"parts": []any{}}})
			}
			a := newAgent(t, f.srv.URL, a2aagent.Config{})
			_, err := a.Handle(context.Background(), work("i", 1, ""))
			if err == nil {
				t.Fatal("got no error")
			}
			if got := registry.KindOf(err); got != tc.kind {
				t.Fatalf("got kind %q (%v), want %q", got, err, tc.kind)
			}
			if got := registry.IsRetryable(err); got != tc.retryable {
				t.Fatalf("got retryable %v (%v), want %v", got, err, tc.retryable)
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Fatalf("got %v, want %v", err, tc.is)
			}
		})
	}
}

func status(code int) func(http.ResponseWriter, string, json.RawMessage, json.RawMessage) {
	return raw(code, "no")
}

func raw(code int, body string) func(http.ResponseWriter, string, json.RawMessage, json.RawMessage) {
	return func(w http.ResponseWriter, _ string, _, _ json.RawMessage) {
		w.WriteHeader(code)
		_, _ = io.WriteString(w, body)
	}
}

func results(v any) func(http.ResponseWriter, string, json.RawMessage, json.RawMessage) {
	return func(w http.ResponseWriter, _ string, id, _ json.RawMessage) { result(w, id, v) }
}

func rpcError(code int, msg string) func(http.ResponseWriter, string, json.RawMessage, json.RawMessage) {
	return rpcErrorStatus(200, code, msg)
}

func rpcErrorStatus(status, code int, msg string) func(http.ResponseWriter, string, json.RawMessage, json.RawMessage) {
	return func(w http.ResponseWriter, _ string, id, _ json.RawMessage) {
		writeJSON(w, status, map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": code, "message": msg}})
	}
}

func hangUp(w http.ResponseWriter, _ string, _, _ json.RawMessage) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err == nil {
		conn.Close()
	}
}

func cardStatus(code int) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(code) }
}

func cardBody(body string) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, body) }
}

func TestAgent_RPCErrorNamesItsCode(t *testing.T) {
	f := newFake(t)
	f.rpc = rpcError(-32001, "Task not found")
	a := newAgent(t, f.srv.URL, a2aagent.Config{})
	_, err := a.Handle(context.Background(), work("i", 1, ""))
	var re *a2aagent.RPCError
	if !errors.As(err, &re) || re.Code != -32001 || !strings.Contains(err.Error(), "-32001") {
		t.Fatalf("got %v, want an RPCError with code -32001 in its message", err)
	}
}

func TestAgent_CardIsCachedFiveMinutes(t *testing.T) {
	f := newFake(t)
	f.rpc = results(map[string]any{"message": map[string]any{"parts": []any{map[string]any{"text": "hi"}}}})
	var mu sync.Mutex
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	a := newAgent(t, f.srv.URL, a2aagent.Config{Now: func() time.Time { mu.Lock(); defer mu.Unlock(); return now }})
	run := func() {
		t.Helper()
		if _, err := a.Handle(context.Background(), work("i", 1, "")); err != nil {
			t.Fatal(err)
		}
	}
	run()
	run()
	if got := f.cards.Load(); got != 1 {
		t.Fatalf("got %d card reads for two runs, want 1", got)
	}
	mu.Lock()
	now = now.Add(a2aagent.DefaultCardTTL - time.Second)
	mu.Unlock()
	run()
	if got := f.cards.Load(); got != 1 {
		t.Fatalf("got %d card reads within the TTL, want 1", got)
	}
	mu.Lock()
	now = now.Add(time.Second)
	mu.Unlock()
	run()
	if got := f.cards.Load(); got != 2 {
		t.Fatalf("got %d card reads after the TTL, want 2", got)
	}
}

func TestAgent_CardAtTheOlderPath(t *testing.T) {
	var srv *httptest.Server
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/agent.json", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, 200, map[string]any{"url": srv.URL + "/v03", "protocolVersion": "0.3.0", "preferredTransport": "JSONRPC"})
	})
	var method, version string
	mux.HandleFunc("POST /v03", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		method, version = req.Method, r.Header.Get("A2A-Version")
		result(w, req.ID, map[string]any{"kind": "message", "messageId": "m", "parts": []any{map[string]any{"kind": "data", "data": map[string]any{"ok": true}}}})
	})
	srv = httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	a := newAgent(t, srv.URL, a2aagent.Config{})
	out, err := a.Handle(context.Background(), work("i", 1, ""))
	if err != nil {
		t.Fatal(err)
	}
	if method != "message/send" || version != "" || out.Result["ok"] != true {
		t.Fatalf("got method %q, A2A-Version %q, result %v; want message/send, none, ok", method, version, out.Result)
	}
}

// An agent answers a send that does not wait before it reads the message:
// the task it continues still shows the input-required status of the turn
// before. That status is not the run's answer.
func TestAgent_StaleInputRequiredIsFollowed(t *testing.T) {
	f := newFake(t)
	asked := map[string]any{"messageId": "ask-1", "parts": []any{map[string]any{"text": "which year?"}}}
	var gets atomic.Int64
	f.rpc = func(w http.ResponseWriter, method string, id, params json.RawMessage) {
		var p struct {
			Message struct {
				MessageID, TaskID string
			}
		}
		_ = json.Unmarshal(params, &p)
		switch {
		case method == "SendMessage" && p.Message.TaskID == "":
			result(w, id, map[string]any{"task": taskJSON("t1", "TASK_STATE_INPUT_REQUIRED", map[string]any{
				"status": map[string]any{"state": "TASK_STATE_INPUT_REQUIRED", "message": asked},
			})})
		case method == "SendMessage":
			// The continuation's answer: the old status, our message last.
			result(w, id, map[string]any{"task": taskJSON("t1", "TASK_STATE_INPUT_REQUIRED", map[string]any{
				"status":  map[string]any{"state": "TASK_STATE_INPUT_REQUIRED", "message": asked},
				"history": []any{map[string]any{"messageId": "first"}, asked, map[string]any{"messageId": p.Message.MessageID}},
			})})
		case method == "GetTask" && gets.Add(1) == 1:
			result(w, id, taskJSON("t1", "TASK_STATE_INPUT_REQUIRED", map[string]any{
				"status": map[string]any{"state": "TASK_STATE_INPUT_REQUIRED", "message": asked},
			}))
		default:
			result(w, id, taskJSON("t1", "TASK_STATE_COMPLETED", map[string]any{
				"artifacts": []any{map[string]any{"parts": []any{map[string]any{"data": map[string]any{"year": 2025}}}}},
			}))
		}
	}
	a := newAgent(t, f.srv.URL, a2aagent.Config{})
	out, err := a.Handle(context.Background(), work("i", 1, ""))
	if err != nil || out.Trigger != "input_required" {
		t.Fatalf("got %q %v, want input_required", out.Trigger, err)
	}
	out, err = a.Handle(context.Background(), work("i", 2, ""))
	if err != nil {
		t.Fatal(err)
	}
	if out.Trigger != "completed" || out.Result["year"] != int64(2025) {
		t.Fatalf("got %q %v, want the continued task completed", out.Trigger, out.Result)
	}
}

func TestAgent_DeadlineCancelsTheTask(t *testing.T) {
	f := newFake(t)
	cancelled := make(chan string, 1)
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) }) // before the server closes
	f.rpc = func(w http.ResponseWriter, method string, id, params json.RawMessage) {
		switch method {
		case "GetTask":
			<-stop // never answers: the run's deadline ends the wait
		case "CancelTask":
			var p struct{ ID string }
			_ = json.Unmarshal(params, &p)
			cancelled <- p.ID
			result(w, id, taskJSON(p.ID, "TASK_STATE_CANCELED", nil))
		case "SendMessage":
			result(w, id, map[string]any{"task": taskJSON("t1", "TASK_STATE_SUBMITTED", nil)})
		}
	}
	a := newAgent(t, f.srv.URL, a2aagent.Config{})
	task := work("i", 1, "")
	task.Deadline = time.Now().Add(500 * time.Millisecond)
	_, err := a.Handle(context.Background(), task)
	if !errors.Is(err, a2aagent.ErrTimeout) || registry.KindOf(err) != "timeout" {
		t.Fatalf("got %v (kind %q), want ErrTimeout of kind timeout", err, registry.KindOf(err))
	}
	select {
	case id := <-cancelled:
		if id != "t1" {
			t.Fatalf("got CancelTask of %q, want t1", id)
		}
	default:
		t.Fatal("the task was not cancelled")
	}
}

// A stream that sends garbage is left for polling: the run still ends.
func TestAgent_GarbageStreamFallsBackToPolling(t *testing.T) {
	f := newFake(t)
	f.card = func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, 200, map[string]any{
			"supportedInterfaces": []any{map[string]any{"url": f.srv.URL + "/rpc", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}},
			"capabilities":        map[string]any{"streaming": true},
		})
	}
	f.rpc = func(w http.ResponseWriter, method string, id, _ json.RawMessage) {
		switch method {
		case "SendMessage":
			result(w, id, map[string]any{"task": taskJSON("t1", "TASK_STATE_WORKING", nil)})
		case "SubscribeToTask":
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, "data: {not json\n\n")
		default:
			result(w, id, taskJSON("t1", "TASK_STATE_COMPLETED", nil))
		}
	}
	a := newAgent(t, f.srv.URL, a2aagent.Config{})
	out, err := a.Handle(context.Background(), work("i", 1, ""))
	if err != nil || out.Trigger != "completed" || out.Result["task_id"] != "t1" {
		t.Fatalf("got %q %v %v, want completed", out.Trigger, out.Result, err)
	}
	if got := f.called(); strings.Join(got, ",") != "SendMessage,SubscribeToTask,GetTask" {
		t.Fatalf("got calls %v, want send, subscribe, get", got)
	}
}

func TestAgent_MessageWithoutDataIsItsText(t *testing.T) {
	f := newFake(t)
	f.rpc = results(map[string]any{"message": map[string]any{"parts": []any{
		map[string]any{"text": "one"}, map[string]any{"data": []any{1, 2}}, map[string]any{"text": "two"},
	}}})
	a := newAgent(t, f.srv.URL, a2aagent.Config{})
	out, err := a.Handle(context.Background(), work("i", 1, ""))
	if err != nil || out.Trigger != "completed" || out.Result["text"] != "one\ntwo" || len(out.Result) != 1 {
		t.Fatalf("got %q %v %v, want completed with {text}", out.Trigger, out.Result, err)
	}
}

func TestAgent_Closed(t *testing.T) {
	a, err := a2aagent.New(a2aagent.Config{URL: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Fatalf("a second Close: %v", err)
	}
	if _, err := a.Handle(context.Background(), work("i", 1, "")); !errors.Is(err, a2aagent.ErrClosed) {
		t.Fatalf("got %v, want ErrClosed", err)
	}
}

func TestNew_RefusesBadConfig(t *testing.T) {
	for _, tc := range []struct {
		cfg   a2aagent.Config
		field string
	}{
		{a2aagent.Config{}, "url"},
		{a2aagent.Config{URL: "ftp://x"}, "url"},
		{a2aagent.Config{URL: "http://"}, "url"},
		{a2aagent.Config{URL: "http://x", Token: "a\nb"}, "token"},
		{a2aagent.Config{URL: "http://x", PollInterval: -1}, "poll_interval"},
	} {
		_, err := a2aagent.New(tc.cfg)
		var ce *a2aagent.ConfigError
		if !errors.As(err, &ce) || ce.Field != tc.field || !errors.Is(err, a2aagent.ErrConfig) {
			t.Fatalf("New(%+v): got %v, want a ConfigError on %s", tc.cfg, err, tc.field)
		}
	}
}

// A run that ends while its message is on its way still reads the answer,
// and cancels the task the message started.
func TestAgent_RunEndedDuringTheSendCancelsTheTask(t *testing.T) {
	f := newFake(t)
	ctx, end := context.WithCancel(context.Background())
	defer end()
	cancelled := make(chan string, 1)
	f.rpc = func(w http.ResponseWriter, method string, id, params json.RawMessage) {
		switch method {
		case "SendMessage":
			end() // the run ends before the answer goes out
			result(w, id, map[string]any{"task": taskJSON("t1", "TASK_STATE_SUBMITTED", nil)})
		case "CancelTask":
			var p struct{ ID string }
			_ = json.Unmarshal(params, &p)
			cancelled <- p.ID
			result(w, id, taskJSON(p.ID, "TASK_STATE_CANCELED", nil))
		default:
			result(w, id, taskJSON("t1", "TASK_STATE_WORKING", nil))
		}
	}
	a := newAgent(t, f.srv.URL, a2aagent.Config{})
	if _, err := a.Handle(ctx, work("i", 1, "")); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want the context's error", err)
	}
	select {
	case id := <-cancelled:
		if id != "t1" {
			t.Fatalf("got CancelTask of %q, want t1", id)
		}
	default:
		t.Fatal("the task was not cancelled")
	}
}

// The stream's events, not polling, settle the run: with polling an hour
// apart, only an event can end it in time.
func TestAgent_StreamEventSettlesTheRun(t *testing.T) {
	for _, tc := range []struct {
		name, version, send, subscribe, working, event string
	}{
		{"1.0", "1.0", "SendMessage", "SubscribeToTask",
			`{"task":{"id":"t1","status":{"state":"TASK_STATE_WORKING"}}}`,
			`{"statusUpdate":{"taskId":"t1","status":{"state":"TASK_STATE_COMPLETED"}}}`},
		{"0.3", "0.3", "message/send", "tasks/resubscribe",
			`{"kind":"task","id":"t1","status":{"state":"working"}}`,
			`{"kind":"status-update","taskId":"t1","status":{"state":"completed"},"final":true}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t)
			stop := make(chan struct{})
			t.Cleanup(func() { close(stop) }) // before the server closes
			f.card = func(w http.ResponseWriter, _ *http.Request) {
				writeJSON(w, 200, map[string]any{
					"supportedInterfaces": []any{map[string]any{"url": f.srv.URL + "/rpc", "protocolBinding": "JSONRPC", "protocolVersion": tc.version}},
					"capabilities":        map[string]any{"streaming": true},
				})
			}
			f.rpc = func(w http.ResponseWriter, method string, id, _ json.RawMessage) {
				switch method {
				case tc.send:
					result(w, id, json.RawMessage(tc.working))
				case tc.subscribe:
					w.Header().Set("Content-Type", "text/event-stream")
					for _, ev := range []string{tc.working, `{"artifactUpdate":{"taskId":"t1","artifact":{"parts":[]}}}`, tc.event} {
						_, _ = io.WriteString(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":"+string(id)+",\"result\":"+ev+"}\n\n")
						http.NewResponseController(w).Flush()
					}
					<-stop // the stream stays open: the event must do
				default:
					result(w, id, json.RawMessage(`{"id":"t1","status":{"state":"completed"},"artifacts":[{"parts":[{"data":{"ok":true}}]}]}`))
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			a := newAgent(t, f.srv.URL, a2aagent.Config{PollInterval: time.Hour})
			out, err := a.Handle(ctx, work("i", 1, ""))
			if err != nil || out.Result["ok"] != true {
				t.Fatalf("got %v %v, want the completed task", out.Result, err)
			}
			if got := strings.Join(f.called(), ","); got != tc.send+","+tc.subscribe+","+map[string]string{"1.0": "GetTask", "0.3": "tasks/get"}[tc.version] {
				t.Fatalf("got calls %s, want send, subscribe, get", got)
			}
		})
	}
}

// A run that has ended sends nothing, even when the card is at hand.
func TestAgent_EndedRunSendsNothing(t *testing.T) {
	f := newFake(t)
	f.rpc = results(map[string]any{"message": map[string]any{"parts": []any{map[string]any{"text": "hi"}}}})
	a := newAgent(t, f.srv.URL, a2aagent.Config{})
	if _, err := a.Handle(context.Background(), work("i", 1, "")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := a.Handle(ctx, work("i", 2, "")); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want the context's error", err)
	}
	if got := f.called(); len(got) != 1 {
		t.Fatalf("got calls %v, want only the first run's send", got)
	}
}
