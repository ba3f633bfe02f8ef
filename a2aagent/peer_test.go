package a2aagent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/batonhq/baton/a2aagent"
	"github.com/batonhq/baton/internal/jspeers"
	"github.com/batonhq/baton/internal/proctest"
	"github.com/batonhq/baton/registry"
)

// peer is an A2A agent built on the official JavaScript SDK
// (internal/jspeers/a2a_agent_peer.mjs).
type peer struct {
	URL string
}

// startPeer starts the peer with env (A2A_VERSION, STREAMING, TOKEN).
func startPeer(t *testing.T, env ...string) peer {
	t.Helper()
	node := jspeers.Node(t)
	addr := proctest.FreeAddr(t)
	_, port, _ := net.SplitHostPort(addr)
	proctest.Start(t, append(env, "PORT="+port), "ready", node, jspeers.Script("a2a_agent_peer.mjs"))
	return peer{URL: "http://" + addr}
}

// call is one JSON-RPC call the peer was sent.
type call struct {
	Method        string         `json:"method"`
	Version       string         `json:"version"`
	Authorization string         `json:"authorization"`
	Traceparent   string         `json:"traceparent"`
	MessageID     string         `json:"messageId"`
	ContextID     string         `json:"contextId"`
	TaskID        string         `json:"taskId"`
	Params        map[string]any `json:"params"`
}

func (p peer) get(t *testing.T, path string, v any) {
	t.Helper()
	resp, err := http.Get(p.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
}

// calls lists the calls the peer was sent for messageID (its send, and the
// task calls that followed are not tied to it: all calls are returned when
// messageID is "").
func (p peer) calls(t *testing.T) []call {
	t.Helper()
	var cs []call
	p.get(t, "/_test/log", &cs)
	return cs
}

func (p peer) sent(t *testing.T, messageID string) call {
	t.Helper()
	for _, c := range p.calls(t) {
		if c.MessageID == messageID {
			return c
		}
	}
	t.Fatalf("the peer was sent no message %q", messageID)
	return call{}
}

// newAgent is an agent of the peer that polls every few milliseconds.
func newAgent(t *testing.T, url string, cfg a2aagent.Config) *a2aagent.Agent {
	t.Helper()
	cfg.URL = url
	if cfg.PollInterval == 0 {
		cfg.PollInterval, cfg.MaxPollInterval = 2*time.Millisecond, 20*time.Millisecond
	}
	a, err := a2aagent.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close() })
	return a
}

func work(instance string, step int, mode string) *registry.Task {
	return &registry.Task{
		Agent: "researcher", WorkflowID: "research", InstanceID: instance, State: "research", Step: step, Attempt: 1,
		IdempotencyKey: fmt.Sprintf("%s:%d", instance, step), Description: "find the facts",
		Input: map[string]any{"mode": mode, "question": "why?"}, Context: map[string]any{"topic": "sky"},
		Traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
	}
}

// dialects are the peers every behaviour is checked against: each protocol
// version, polled and streamed.
var dialects = []struct {
	name, version string
	env           []string
}{
	{"1.0", "1.0", nil},
	{"1.0_streaming", "1.0", []string{"STREAMING=1"}},
	{"0.3", "0.3", []string{"A2A_VERSION=0.3"}},
	{"0.3_streaming", "0.3", []string{"A2A_VERSION=0.3", "STREAMING=1"}},
}

func TestAgent_Peer(t *testing.T) {
	for _, d := range dialects {
		t.Run(d.name, func(t *testing.T) {
			p := startPeer(t, d.env...)
			streaming := slices.Contains(d.env, "STREAMING=1")
			a := newAgent(t, p.URL, a2aagent.Config{})
			ctx := context.Background()

			t.Run("MessageAnswerCompletes", func(t *testing.T) {
				task := work("i-msg", 1, "message")
				out, err := a.Handle(ctx, task)
				if err != nil {
					t.Fatal(err)
				}
				want := map[string]any{"echo": map[string]any{"mode": "message", "question": "why?"}, "context": map[string]any{"topic": "sky"}}
				if out.Trigger != "completed" || !reflect.DeepEqual(out.Result, want) {
					t.Fatalf("got %q %v, want completed %v", out.Trigger, out.Result, want)
				}
				if want := (registry.Usage{InputTokens: 7, OutputTokens: 3, Cost: 0.5}); out.Usage != want {
					t.Fatalf("got usage %+v, want %+v", out.Usage, want)
				}
				c := p.sent(t, task.IdempotencyKey)
				if c.ContextID != "i-msg" || c.TaskID != "" {
					t.Fatalf("got contextId %q taskId %q, want i-msg and none", c.ContextID, c.TaskID)
				}
				wantVersion := ""
				if d.version == "1.0" {
					wantVersion = "1.0"
				}
				if c.Version != wantVersion {
					t.Fatalf("got A2A-Version %q, want %q", c.Version, wantVersion)
				}
				if c.Traceparent != task.Traceparent {
					t.Fatalf("got traceparent %q, want %q", c.Traceparent, task.Traceparent)
				}
				msg, _ := c.Params["message"].(map[string]any)
				parts, _ := msg["parts"].([]any)
				if len(parts) != 2 {
					t.Fatalf("got parts %v, want a text and a data part", parts)
				}
				data, _ := parts[1].(map[string]any)["data"].(map[string]any)
				for _, k := range []string{"input", "context", "previous_result", "item", "index"} {
					if _, ok := data[k]; !ok {
						t.Fatalf("the data part %v has no %s", data, k)
					}
				}
			})

			t.Run("TaskCompletes", func(t *testing.T) {
				out, err := a.Handle(ctx, work("i-done", 1, "complete"))
				if err != nil {
					t.Fatal(err)
				}
				id, _ := out.Result["task_id"].(string)
				if out.Trigger != "completed" || id == "" || out.Result["answer"] != int64(42) || out.Result["text"] != "part one\npart two" {
					t.Fatalf("got %q %v, want completed with answer 42, the text joined and task_id", out.Trigger, out.Result)
				}
				if out.Usage.InputTokens != 7 {
					t.Fatalf("got usage %+v, want the task's", out.Usage)
				}
				if streaming && !slices.ContainsFunc(p.calls(t), func(c call) bool { return c.Method == "SubscribeToTask" || c.Method == "tasks/resubscribe" }) {
					t.Fatal("a streaming peer's task was not followed over its stream")
				}
			})

			t.Run("InputRequiredThenContinues", func(t *testing.T) {
				first := work("i-ask", 1, "ask")
				out, err := a.Handle(ctx, first)
				if err != nil {
					t.Fatal(err)
				}
				id, _ := out.Result["task_id"].(string)
				wantData := map[string]any{"choices": []any{int64(2024), int64(2025)}}
				if out.Trigger != "input_required" || id == "" || out.Result["text"] != "which year?" || !reflect.DeepEqual(out.Result["data"], wantData) {
					t.Fatalf("got %q %v, want input_required with task_id, text and data", out.Trigger, out.Result)
				}
				// A person answers through a wait: the previous result is
				// the signal's data, and the agent remembers the task.
				next := work("i-ask", 3, "ask")
				next.Description, next.PreviousResult = "2025 please", map[string]any{"year": 2025}
				out, err = a.Handle(ctx, next)
				if err != nil {
					t.Fatal(err)
				}
				if out.Trigger != "completed" || out.Result["task_id"] != id || out.Result["year"] != int64(2025) || out.Result["said"] != "2025 please" {
					t.Fatalf("got %q %v, want task %s completed with the reply", out.Trigger, out.Result, id)
				}
				if c := p.sent(t, next.IdempotencyKey); c.TaskID != id {
					t.Fatalf("the reply went with taskId %q, want %q", c.TaskID, id)
				}
				// The task is over: the instance's next run starts another.
				again := work("i-ask", 5, "message")
				if _, err := a.Handle(ctx, again); err != nil {
					t.Fatal(err)
				}
				if c := p.sent(t, again.IdempotencyKey); c.TaskID != "" {
					t.Fatalf("a run after the completed task went with taskId %q, want none", c.TaskID)
				}
			})

			t.Run("ContinuesFromPreviousResultAfterRestart", func(t *testing.T) {
				out, err := a.Handle(ctx, work("i-restart", 1, "ask"))
				if err != nil {
					t.Fatal(err)
				}
				// Another agent value (an engine restarted) remembers
				// nothing; the input_required result handed straight back
				// to the agent names the task.
				fresh := newAgent(t, p.URL, a2aagent.Config{})
				next := work("i-restart", 2, "ask")
				next.From, next.PreviousResult = next.Agent, out.Result
				got, err := fresh.Handle(ctx, next)
				if err != nil {
					t.Fatal(err)
				}
				if got.Trigger != "completed" || got.Result["task_id"] != out.Result["task_id"] {
					t.Fatalf("got %q %v, want task %v completed", got.Trigger, got.Result, out.Result["task_id"])
				}
			})

			for _, tc := range []struct {
				mode, kind string
				retryable  bool
			}{
				{"fail", "agent_failed", true},
				{"auth", "auth_required", false},
			} {
				t.Run("Task_"+tc.mode, func(t *testing.T) {
					_, err := a.Handle(ctx, work("i-"+tc.mode, 1, tc.mode))
					if got := registry.KindOf(err); got != tc.kind {
						t.Fatalf("got kind %q (%v), want %q", got, err, tc.kind)
					}
					if got := registry.IsRetryable(err); got != tc.retryable {
						t.Fatalf("got retryable %v, want %v", got, tc.retryable)
					}
					var te *a2aagent.TaskError
					if !errors.As(err, &te) || te.Message == "" {
						t.Fatalf("got %v, want a TaskError with the agent's words", err)
					}
				})
			}

			t.Run("RejectedIsARejection", func(t *testing.T) {
				_, err := a.Handle(ctx, work("i-reject", 1, "reject"))
				var re *registry.RejectError
				if !errors.As(err, &re) || re.Reason != "not my kind of work" {
					t.Fatalf("got %v, want a rejection with the agent's reason", err)
				}
			})

			t.Run("CancelledRunCancelsTheTask", func(t *testing.T) {
				runCtx, cancel := context.WithCancel(ctx)
				defer cancel()
				done := make(chan error, 1)
				go func() {
					_, err := a.Handle(runCtx, work("i-slow", 1, "slow"))
					done <- err
				}()
				var working []string
				p.get(t, "/_test/working", &working) // answers once the task works
				cancel()
				if err := <-done; !errors.Is(err, context.Canceled) {
					t.Fatalf("got %v, want the context's error", err)
				}
				var cancelled []string
				p.get(t, "/_test/cancelled", &cancelled)
				if len(working) != 1 || !slices.Contains(cancelled, working[0]) {
					t.Fatalf("the peer cancelled %v, want %v", cancelled, working)
				}
			})
		})
	}
}

func TestAgent_Peer_Token(t *testing.T) {
	p := startPeer(t, "TOKEN=s3cret")
	ctx := context.Background()
	good := newAgent(t, p.URL, a2aagent.Config{Token: "s3cret"})
	task := work("i-tok", 1, "message")
	if _, err := good.Handle(ctx, task); err != nil {
		t.Fatal(err)
	}
	if c := p.sent(t, task.IdempotencyKey); c.Authorization != "Bearer s3cret" {
		t.Fatalf("got Authorization %q, want the bearer token", c.Authorization)
	}
	bad := newAgent(t, p.URL, a2aagent.Config{Token: "wrong"})
	_, err := bad.Handle(ctx, work("i-tok2", 1, "message"))
	if registry.KindOf(err) != "unauthorized" || registry.IsRetryable(err) {
		t.Fatalf("got %v (kind %q), want kind unauthorized, not retried", err, registry.KindOf(err))
	}
}
