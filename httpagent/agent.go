package httpagent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/batonhq/baton/registry"
	"github.com/batonhq/baton/wire"
)

// MaxBody is the largest body, in bytes, sent to or read from an agent.
const MaxBody = 1 << 20

// DefaultTimeout bounds a call whose run has no deadline of its own.
const DefaultTimeout = 30 * time.Second

// Header names of a call.
const (
	IdempotencyHeader = "Baton-Idempotency-Key"
	TraceparentHeader = "traceparent"
)

// Agent is the registry.Handler of an HTTP agent.
type Agent struct {
	url     string
	secret  []byte
	client  *http.Client
	timeout time.Duration
	log     *zap.Logger
}

var _ registry.Handler = (*Agent)(nil)

// Option configures an Agent.
type Option func(*Agent)

// WithSecret signs every call with secret (Baton-Signature).
func WithSecret(secret []byte) Option {
	return func(a *Agent) { a.secret = append([]byte(nil), secret...) }
}

// WithClient sets the HTTP client (default one that follows no redirects).
func WithClient(c *http.Client) Option {
	return func(a *Agent) {
		if c != nil {
			a.client = c
		}
	}
}

// maxReuseRetries is how many times a call is sent again after a reused
// connection failed it with a cancellation that was not its own.
const maxReuseRetries = 4

// WithTimeout bounds a call whose run has no deadline (default 30s).
func WithTimeout(d time.Duration) Option {
	return func(a *Agent) {
		if d > 0 {
			a.timeout = d
		}
	}
}

// WithLogger sets the logger (default zap.NewNop()).
func WithLogger(l *zap.Logger) Option {
	return func(a *Agent) {
		if l != nil {
			a.log = l
		}
	}
}

// New returns the handler of the agent at url, an http or https URL.
func New(url string, opts ...Option) (*Agent, error) {
	if !strings.HasPrefix(url, "http://") && !strings.HasPrefix(url, "https://") {
		return nil, fmt.Errorf("httpagent: url %q is not an http or https URL", url)
	}
	a := &Agent{
		url: url, timeout: DefaultTimeout, log: zap.NewNop(),
		client: &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }},
	}
	for _, o := range opts {
		o(a)
	}
	return a, nil
}

// Handle POSTs the work of t to the agent and turns the answer into the
// run's outcome (see the package documentation).
func (a *Agent) Handle(ctx context.Context, t *registry.Task) (registry.Outcome, error) {
	if tp := traceparentOf(ctx, t); tp != t.Traceparent {
		c := *t // the body and the header carry the same trace context
		c.Traceparent = tp
		t = &c
	}
	body, err := json.Marshal(wire.Encode(t))
	if err != nil {
		return registry.Outcome{}, registry.Permanent(fmt.Errorf("httpagent: encode the work: %w", err))
	}
	if len(body) > MaxBody {
		return registry.Outcome{}, registry.Permanent(registry.Kind(fmt.Errorf("%w: the work of %s is %d bytes", ErrTooLarge, t.IdempotencyKey, len(body)), "transport"))
	}
	deadline := t.Deadline
	if deadline.IsZero() {
		deadline = time.Now().Add(a.timeout)
	}
	// The request's context is the run's only while the call is under
	// way: a run's context is cancelled when its report arrives, which
	// for a 202 may be before the transport is done with the connection,
	// and a cancellation then would fail the next call on that connection.
	callCtx, cancel := context.WithDeadline(context.WithoutCancel(ctx), deadline)
	defer cancel()
	stop := context.AfterFunc(ctx, cancel)
	defer stop()
	var signature string
	if a.secret != nil {
		signature = Sign(a.secret, body)
	}
	var resp *http.Response
	for attempt := 0; attempt < maxReuseRetries+1; attempt++ {
		req, rerr := http.NewRequestWithContext(callCtx, http.MethodPost, a.url, bytes.NewReader(body))
		if rerr != nil {
			return registry.Outcome{}, registry.Permanent(registry.Kind(fmt.Errorf("httpagent: %w", rerr), "transport"))
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json")
		req.Header.Set(IdempotencyHeader, t.Key())
		req.Header.Set(TraceparentHeader, t.Traceparent)
		if signature != "" {
			req.Header.Set(SignatureHeader, signature)
		}
		resp, err = a.client.Do(req)
		// A connection the transport reused just as the call that used it
		// before was cancelled fails with context.Canceled although
		// nothing cancelled this call (a bodiless 202 returns its
		// connection before the call ends): sent again, under the same
		// idempotency key. Under many concurrent calls the next connection
		// can be such a one too, hence a few tries.
		if err == nil || !errors.Is(err, context.Canceled) || ctx.Err() != nil || callCtx.Err() != nil {
			break
		}
	}
	if err != nil {
		if ctx.Err() != nil {
			return registry.Outcome{}, ctx.Err() // the run ended (the engine is closing): it is left to resume
		} else if errors.Is(callCtx.Err(), context.DeadlineExceeded) {
			err = fmt.Errorf("httpagent: %s gave no answer before the deadline", a.url)
		} else {
			err = fmt.Errorf("httpagent: %w", err)
		}
		return registry.Outcome{}, registry.Kind(err, "transport")
	}
	defer resp.Body.Close()
	answer, readErr := io.ReadAll(io.LimitReader(resp.Body, MaxBody+1))
	switch {
	case resp.StatusCode == http.StatusAccepted:
		return registry.Outcome{}, registry.Deferred()
	case resp.StatusCode == http.StatusOK:
	default:
		se := &StatusError{URL: a.url, Status: resp.StatusCode, Body: excerpt(answer)}
		if se.Retryable() {
			return registry.Outcome{}, registry.Kind(se, "transport")
		}
		return registry.Outcome{}, registry.Permanent(registry.Kind(se, "transport"))
	}
	if readErr != nil {
		if ctx.Err() != nil {
			return registry.Outcome{}, ctx.Err()
		}
		return registry.Outcome{}, registry.Kind(fmt.Errorf("httpagent: read the answer of %s: %w", a.url, readErr), "transport")
	}
	if len(answer) > MaxBody {
		return registry.Outcome{}, registry.Kind(fmt.Errorf("%w: the answer of %s", ErrTooLarge, a.url), "invalid_result")
	}
	return a.outcome(t, answer)
}

// outcome reads the report in a 200's body: a report of another run, a
// heartbeat or anything that is not a report fails the run, naming why.
func (a *Agent) outcome(t *registry.Task, answer []byte) (registry.Outcome, error) {
	r, err := wire.DecodeReport(answer)
	if err != nil {
		return registry.Outcome{}, registry.Kind(&AnswerError{URL: a.url, Reason: err.Error()}, "invalid_result")
	}
	var reason string
	switch {
	case r.Heartbeat:
		reason = "a heartbeat ends no run"
	case r.Progress != nil:
		reason = "progress ends no run"
	case r.InstanceID != t.InstanceID:
		reason = fmt.Sprintf("instance_id is %q, not %q", r.InstanceID, t.InstanceID)
	case r.Step != t.Step:
		reason = fmt.Sprintf("step is %d, not %d", r.Step, t.Step)
	case r.Agent != t.Agent:
		reason = fmt.Sprintf("agent is %q, not %q", r.Agent, t.Agent)
	}
	if reason != "" {
		return registry.Outcome{}, registry.Kind(&AnswerError{URL: a.url, Reason: reason}, "invalid_result")
	}
	return r.Outcome()
}

// traceparentOf is the trace context of the call: the span in ctx (the
// run's, when the engine traces, or the handler's own), else the task's,
// else, when the engine gave it none, the one the codec gives such work.
func traceparentOf(ctx context.Context, t *registry.Task) string {
	if tp := wire.FormatTraceparent(trace.SpanContextFromContext(ctx)); tp != "" {
		return tp
	}
	if t.Traceparent != "" {
		return t.Traceparent
	}
	return wire.Traceparent(t.InstanceID, t.Key())
}

// excerpt is the start of an error answer, printable in a history line.
func excerpt(b []byte) string {
	const n = 200
	s := strings.TrimSpace(string(b))
	if len(s) > n {
		s = s[:n] + "…"
	}
	return strings.ToValidUTF8(s, "")
}
