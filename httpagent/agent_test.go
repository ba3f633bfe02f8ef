package httpagent_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/goleak"

	"github.com/batonhq/baton/httpagent"
	"github.com/batonhq/baton/registry"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func task() *registry.Task {
	return &registry.Task{
		Agent: "seller", WorkflowID: "refund", Version: 1, InstanceID: "i-1", State: "REVIEWING",
		Step: 3, Attempt: 1, IdempotencyKey: "i-1:3", Priority: 5,
		Input: map[string]any{"order_id": "o-1"}, Traceparent: "00-0123456789abcdef0123456789abcdef-0123456789abcdef-01",
	}
}

func serve(t *testing.T, h http.HandlerFunc) string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

func TestAgent_Handle_AnswerClasses(t *testing.T) {
	report := `{"instance_id":"i-1","step":3,"agent":"seller","trigger":"reviewed","result":{"approval":"APPROVED"}}`
	tests := []struct {
		name      string
		status    int
		body      string
		trigger   string
		deferred  bool
		retryable bool
		kind      string
		errHas    string
	}{
		{name: "200 with a report", status: 200, body: report, trigger: "reviewed"},
		{name: "200 with an error report", status: 200, body: `{"instance_id":"i-1","step":3,"agent":"seller","error":{"message":"rate limited","retryable":true,"kind":"rate_limited"}}`, retryable: true, kind: "rate_limited", errHas: "rate limited"},
		{name: "200 not a report", status: 200, body: `{"hello":1}`, retryable: true, kind: "invalid_result", errHas: "hello"},
		{name: "200 not JSON", status: 200, body: `<html>`, retryable: true, kind: "invalid_result", errHas: "without a report"},
		{name: "200 report of another step", status: 200, body: strings.Replace(report, `"step":3`, `"step":4`, 1), retryable: true, kind: "invalid_result", errHas: "step is 4, not 3"},
		{name: "200 report of another agent", status: 200, body: strings.Replace(report, `"agent":"seller"`, `"agent":"payment"`, 1), retryable: true, kind: "invalid_result", errHas: `agent is "payment"`},
		{name: "200 heartbeat", status: 200, body: `{"instance_id":"i-1","step":3,"agent":"seller","heartbeat":true}`, retryable: true, kind: "invalid_result", errHas: "heartbeat"},
		{name: "200 progress", status: 200, body: `{"instance_id":"i-1","step":3,"agent":"seller","progress":{"message":"still at it"}}`, retryable: true, kind: "invalid_result", errHas: "progress ends no run"},
		{name: "200 with negative usage", status: 200, body: strings.Replace(report, `}}`, `},"usage":{"cost":-1}}`, 1), retryable: true, kind: "invalid_result", errHas: "usage.cost"},
		{name: "202", status: 202, deferred: true},
		{name: "400", status: 400, body: "bad work", retryable: false, kind: "transport", errHas: "answered 400: bad work"},
		{name: "404", status: 404, retryable: false, kind: "transport", errHas: "answered 404"},
		{name: "408", status: 408, retryable: true, kind: "transport", errHas: "408"},
		{name: "429", status: 429, retryable: true, kind: "transport", errHas: "429"},
		{name: "500", status: 500, retryable: true, kind: "transport", errHas: "500"},
		{name: "503", status: 503, retryable: true, kind: "transport", errHas: "503"},
		{name: "302 is not followed", status: 302, retryable: false, kind: "transport", errHas: "302"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			url := serve(t, func(w http.ResponseWriter, r *http.Request) {
				if tt.status == 302 {
					w.Header().Set("Location", "/elsewhere")
				}
				w.WriteHeader(tt.status)
				io.WriteString(w, tt.body)
			})
			a, err := httpagent.New(url)
			require.NoError(t, err)
			out, err := a.Handle(context.Background(), task())
			switch {
			case tt.deferred:
				assert.ErrorIs(t, err, registry.ErrDeferred)
			case tt.trigger != "":
				require.NoError(t, err)
				assert.Equal(t, tt.trigger, out.Trigger)
				assert.Equal(t, "APPROVED", out.Result["approval"])
			default:
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.errHas)
				assert.Equal(t, tt.retryable, registry.IsRetryable(err), "retryable")
				assert.Equal(t, tt.kind, registry.KindOf(err), "kind")
			}
		})
	}
}

func TestAgent_Handle_RequestHeadersAndSignature(t *testing.T) {
	secret := []byte("s3cret")
	type seen struct {
		header http.Header
		body   []byte
	}
	got := make(chan seen, 1)
	url := serve(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- seen{r.Header.Clone(), b}
		w.WriteHeader(202)
	})
	a, err := httpagent.New(url, httpagent.WithSecret(secret))
	require.NoError(t, err)
	_, err = a.Handle(context.Background(), task())
	require.ErrorIs(t, err, registry.ErrDeferred)
	s := <-got
	assert.Equal(t, "application/json", s.header.Get("Content-Type"))
	assert.Equal(t, "i-1:3", s.header.Get("Baton-Idempotency-Key"))
	assert.Equal(t, task().Traceparent, s.header.Get("traceparent"))
	// Verified here independently of the package's own helper.
	mac := hmacHex(secret, s.body)
	assert.Equal(t, "sha256="+mac, s.header.Get("Baton-Signature"))
	assert.True(t, httpagent.Verify(secret, s.body, s.header.Get("Baton-Signature")))
	assert.False(t, httpagent.Verify([]byte("other"), s.body, s.header.Get("Baton-Signature")))
	// The body is the work message: a HANDOFF with the task in it.
	var msg map[string]any
	require.NoError(t, json.Unmarshal(s.body, &msg))
	assert.Equal(t, "HANDOFF", msg["message_type"])
	md := msg["metadata"].(map[string]any)
	assert.Equal(t, "i-1", md["instance_id"])
	assert.Equal(t, "i-1:3", md["idempotency_key"])
}

func TestAgent_Handle_NoSecretNoSignature(t *testing.T) {
	got := make(chan http.Header, 1)
	url := serve(t, func(w http.ResponseWriter, r *http.Request) { got <- r.Header.Clone(); w.WriteHeader(202) })
	a, _ := httpagent.New(url)
	tk := task()
	tk.Traceparent = ""
	_, _ = a.Handle(context.Background(), tk)
	h := <-got
	assert.Empty(t, h.Get("Baton-Signature"))
	assert.Regexp(t, `^00-[0-9a-f]{32}-[0-9a-f]{16}-01$`, h.Get("traceparent"), "a valid traceparent even when the task has none")
}

func TestAgent_Handle_OversizeAnswerRefused(t *testing.T) {
	url := serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(200)
		io.WriteString(w, `{"instance_id":"i-1","step":3,"agent":"seller","trigger":"ok","result":{"x":"`+strings.Repeat("a", httpagent.MaxBody)+`"}}`)
	})
	a, _ := httpagent.New(url)
	_, err := a.Handle(context.Background(), task())
	require.ErrorIs(t, err, httpagent.ErrTooLarge)
	assert.True(t, registry.IsRetryable(err))
}

func TestAgent_Handle_OversizeWorkNotSent(t *testing.T) {
	called := make(chan struct{}, 1)
	url := serve(t, func(w http.ResponseWriter, r *http.Request) { called <- struct{}{} })
	a, _ := httpagent.New(url)
	tk := task()
	tk.Context = map[string]any{"big": strings.Repeat("b", httpagent.MaxBody)}
	_, err := a.Handle(context.Background(), tk)
	require.ErrorIs(t, err, httpagent.ErrTooLarge)
	assert.False(t, registry.IsRetryable(err))
	assert.Len(t, called, 0)
}

func TestAgent_Handle_RefusedConnection(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	a, _ := httpagent.New("http://" + addr + "/agent")
	_, err = a.Handle(context.Background(), task())
	require.Error(t, err)
	assert.True(t, registry.IsRetryable(err))
	assert.Equal(t, "transport", registry.KindOf(err))
}

func TestAgent_Handle_NoAnswerBeforeDeadline(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	a, _ := httpagent.New(srv.URL)
	tk := task()
	tk.Deadline = time.Now().Add(20 * time.Millisecond)
	_, err := a.Handle(context.Background(), tk)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no answer before the deadline")
	assert.True(t, registry.IsRetryable(err))
	assert.Equal(t, "transport", registry.KindOf(err))
}

func TestAgent_Handle_EngineClosing(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	a, _ := httpagent.New(srv.URL)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(5*time.Millisecond, cancel)
	_, err := a.Handle(ctx, task())
	assert.True(t, errors.Is(err, context.Canceled), "got %v", err)
}

func TestNew_RefusesNonHTTP(t *testing.T) {
	_, err := httpagent.New("ftp://x")
	assert.Error(t, err)
}

func TestVerify(t *testing.T) {
	secret, body := []byte("k"), []byte(`{"a":1}`)
	sig := httpagent.Sign(secret, body)
	tests := []struct {
		name   string
		header string
		want   bool
	}{
		{"valid", sig, true},
		{"surrounding space", " " + sig + " ", true},
		{"no prefix", strings.TrimPrefix(sig, "sha256="), false},
		{"wrong hex", "sha256=zz", false},
		{"other body", httpagent.Sign(secret, []byte(`{"a":2}`)), false},
		{"empty", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { assert.Equal(t, tt.want, httpagent.Verify(secret, body, tt.header)) })
	}
}

// A call made within a span (the run's, when the engine traces) carries
// that span's trace context, in the header and in the work alike.
func TestAgent_Handle_TraceparentFromTheContext(t *testing.T) {
	got := make(chan *http.Request, 1)
	url := serve(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(b))
		got <- r
		w.WriteHeader(202)
	})
	a, err := httpagent.New(url)
	require.NoError(t, err)
	tid, _ := trace.TraceIDFromHex("0af7651916cd43dd8448eb211c80319c")
	sid, _ := trace.SpanIDFromHex("b7ad6b7169203331")
	ctx := trace.ContextWithSpanContext(context.Background(), trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled}))
	tk := task()
	_, err = a.Handle(ctx, tk)
	require.ErrorIs(t, err, registry.ErrDeferred)
	r := <-got
	want := "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	assert.Equal(t, want, r.Header.Get("traceparent"))
	var msg struct {
		Metadata map[string]any `json:"metadata"`
	}
	require.NoError(t, json.NewDecoder(r.Body).Decode(&msg))
	assert.Equal(t, want, msg.Metadata["traceparent"])
	assert.Equal(t, "00-0123456789abcdef0123456789abcdef-0123456789abcdef-01", tk.Traceparent, "the caller's task is left as it was")
}

func TestAgent_Handle_UsageInTheAnswer(t *testing.T) {
	url := serve(t, func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"instance_id":"i-1","step":3,"agent":"seller","trigger":"reviewed","usage":{"input_tokens":900,"output_tokens":120,"cost":0.004,"model":"m-2"}}`)
	})
	a, err := httpagent.New(url)
	require.NoError(t, err)
	out, err := a.Handle(context.Background(), task())
	require.NoError(t, err)
	assert.Equal(t, registry.Usage{InputTokens: 900, OutputTokens: 120, Cost: 0.004, Model: "m-2"}, out.Usage)
}
