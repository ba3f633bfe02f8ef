package a2aagent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/batonhq/baton/registry"
)

// Defaults of a Config's optional fields.
const (
	DefaultCardTTL         = 5 * time.Minute
	DefaultPollInterval    = time.Second
	DefaultMaxPollInterval = 10 * time.Second
	DefaultCallTimeout     = 30 * time.Second
	DefaultCancelTimeout   = 5 * time.Second
	DefaultStreamTimeout   = 5 * time.Minute
)

// maxRemembered bounds the input-required tasks an agent remembers: an
// instance that never comes back to the agent leaves its entry behind.
const maxRemembered = 4096

// Config configures an Agent. URL is required; every other field has a
// default.
type Config struct {
	// URL is the agent's base URL, where its card is published.
	URL string
	// Token, when set, is sent as Authorization: Bearer on every call.
	Token string
	// Client makes the calls (default: a client of its own).
	Client *http.Client
	// Logger logs what the agent does (default zap.NewNop()).
	Logger *zap.Logger
	// CardTTL is how long a card read is used before it is read again
	// (default 5 minutes).
	CardTTL time.Duration
	// PollInterval is the first wait between two reads of a task, growing
	// twofold up to MaxPollInterval (defaults 1 s and 10 s).
	PollInterval, MaxPollInterval time.Duration
	// CallTimeout bounds each call (default 30 s); the run's context and
	// deadline bound the whole run.
	CallTimeout time.Duration
	// CancelTimeout bounds the CancelTask call made when a run ends early
	// (default 5 s).
	CancelTimeout time.Duration
	// StreamTimeout bounds one subscription to a task's events, after
	// which the task is read and the subscription made again (default 5
	// minutes).
	StreamTimeout time.Duration
	// Now tells the time, for the card cache (default time.Now).
	Now func() time.Time
}

// Agent is the registry.Handler of an A2A agent: each run sends one
// message and follows the task it starts (see the package documentation).
type Agent struct {
	url, token                 string
	client                     *http.Client
	ownClient                  bool
	log                        *zap.Logger
	cardTTL                    time.Duration
	poll, maxPoll              time.Duration
	callTimeout, cancelTimeout time.Duration
	streamTimeout              time.Duration
	now                        func() time.Time
	closed                     atomic.Bool
	cardLock                   chan struct{} // held while the card is read
	ep                         endpoint
	cardAt                     time.Time
	mu                         sync.Mutex
	waiting                    map[string]pending // by instance id
}

var _ registry.Handler = (*Agent)(nil)

// pending is an instance's last task with the agent, left input-required.
type pending struct {
	TaskID    string
	MessageID string // the status message that asked for input
}

// New returns the agent at cfg.URL; it reads nothing until its first run.
func New(cfg Config) (*Agent, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, &ConfigError{Field: "url", Reason: fmt.Sprintf("%q is not an http or https URL", cfg.URL)}
	}
	if strings.ContainsAny(cfg.Token, "\r\n") {
		return nil, &ConfigError{Field: "token", Reason: "must not contain line breaks"}
	}
	for name, d := range map[string]time.Duration{
		"card_ttl": cfg.CardTTL, "poll_interval": cfg.PollInterval, "max_poll_interval": cfg.MaxPollInterval,
		"call_timeout": cfg.CallTimeout, "cancel_timeout": cfg.CancelTimeout, "stream_timeout": cfg.StreamTimeout,
	} {
		if d < 0 {
			return nil, &ConfigError{Field: name, Reason: "must not be negative"}
		}
	}
	a := &Agent{
		url: strings.TrimRight(cfg.URL, "/"), token: cfg.Token, client: cfg.Client, log: cfg.Logger,
		cardTTL: orDefault(cfg.CardTTL, DefaultCardTTL), poll: orDefault(cfg.PollInterval, DefaultPollInterval),
		maxPoll: orDefault(cfg.MaxPollInterval, DefaultMaxPollInterval), callTimeout: orDefault(cfg.CallTimeout, DefaultCallTimeout),
		cancelTimeout: orDefault(cfg.CancelTimeout, DefaultCancelTimeout), streamTimeout: orDefault(cfg.StreamTimeout, DefaultStreamTimeout),
		now: cfg.Now, cardLock: make(chan struct{}, 1), waiting: map[string]pending{},
	}
	if a.maxPoll < a.poll {
		a.maxPoll = a.poll
	}
	if a.client == nil {
		a.client, a.ownClient = &http.Client{}, true
	}
	if a.log == nil {
		a.log = zap.NewNop()
	}
	if a.now == nil {
		a.now = time.Now
	}
	a.log = a.log.With(zap.String("a2a_agent", a.url))
	return a, nil
}

func orDefault(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

// Close releases the agent's idle connections; runs under way end with
// their contexts. It is safe to call twice.
func (a *Agent) Close() error {
	if a.closed.Swap(true) {
		return nil
	}
	if a.ownClient {
		a.client.CloseIdleConnections()
	}
	return nil
}

// Handle sends the run's message to the agent and turns the answer, or
// the task it starts once it settles, into the run's outcome.
func (a *Agent) Handle(ctx context.Context, t *registry.Task) (registry.Outcome, error) {
	if a.closed.Load() {
		return registry.Outcome{}, registry.Kind(ErrClosed, "transport")
	}
	runCtx := ctx
	if !t.Deadline.IsZero() {
		var cancel context.CancelFunc
		runCtx, cancel = context.WithDeadline(ctx, t.Deadline)
		defer cancel()
	}
	if t.Traceparent != "" {
		runCtx = context.WithValue(runCtx, traceKey{}, t.Traceparent)
	}
	out, err := a.handle(runCtx, t)
	if err != nil && runCtx.Err() != nil {
		if ctx.Err() != nil {
			return out, ctx.Err() // the engine ended the run: timeout or cancel
		}
		return out, registry.Kind(ErrTimeout, "timeout")
	}
	return out, classify(err)
}

func (a *Agent) handle(ctx context.Context, t *registry.Task) (registry.Outcome, error) {
	ep, err := a.endpoint(ctx)
	if err != nil {
		return registry.Outcome{}, err
	}
	prev := a.continuation(t)
	data := map[string]any{
		"input": orEmpty(t.Input), "context": orEmpty(t.Context), "previous_result": orEmpty(t.PreviousResult),
		"item": t.Item, "index": t.Index,
	}
	if !t.HasItem {
		data["item"], data["index"] = nil, nil
	}
	params := ep.Dialect.sendParams(t.IdempotencyKey, t.InstanceID, prev.TaskID, t.Description, data)
	sendCtx, stop := a.outlive(ctx)
	res, err := a.call(sendCtx, ep, ep.Dialect.send(), params)
	stop()
	if err != nil {
		return registry.Outcome{}, err
	}
	ans, err := decodeAnswer(res)
	if err != nil {
		return registry.Outcome{}, &AnswerError{Method: ep.Dialect.send(), Reason: err.Error()}
	}
	if ans.Message != nil {
		a.forget(t.InstanceID)
		return messageOutcome(ans.Message)
	}
	tk, err := a.follow(ctx, ep, ans.Task, t.IdempotencyKey, prev)
	if err != nil {
		if ctx.Err() != nil {
			a.cancel(ctx, ep, ans.Task.ID)
		}
		return registry.Outcome{}, err
	}
	out, err := taskOutcome(tk)
	if tk.State == stateInputRequired {
		a.remember(t.InstanceID, pending{TaskID: tk.ID, MessageID: statusMessageID(tk)})
	} else {
		a.forget(t.InstanceID)
	}
	return out, err
}

// outlive returns a context that ends the cancel timeout after ctx does.
// A send under way when the run ends still reads its answer, so that the
// task it started is cancelled rather than left running at the agent.
func (a *Agent) outlive(ctx context.Context) (context.Context, context.CancelFunc) {
	c, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, func() {
		t := time.NewTimer(a.cancelTimeout)
		defer t.Stop()
		select {
		case <-t.C:
			cancel()
		case <-c.Done():
		}
	})
	return c, func() {
		stop()
		cancel()
	}
}

func orEmpty(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

// follow reads the task until it settles: over the agent's event stream
// when its card offers one, else by polling at growing intervals.
func (a *Agent) follow(ctx context.Context, ep endpoint, tk *task, sent string, prev pending) (*task, error) {
	interval := a.poll
	stream := ep.Streaming
	for !settled(tk, sent, prev) {
		woken := false
		if stream {
			var err error
			woken, err = a.subscribe(ctx, ep, tk.ID, func(ev *task) bool { return settled(ev, sent, prev) })
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			if err != nil {
				a.log.Debug("a2aagent: no event stream, polling", zap.String("task_id", tk.ID), zap.Error(err))
				stream = false
			}
		}
		if !woken {
			if err := sleep(ctx, interval); err != nil {
				return nil, err
			}
			interval = min(2*interval, a.maxPoll)
		}
		res, err := a.call(ctx, ep, ep.Dialect.get(), map[string]any{"id": tk.ID})
		if err != nil {
			return nil, err
		}
		next, err := decodeTask(res)
		if err != nil {
			return nil, &AnswerError{Method: ep.Dialect.get(), Reason: err.Error()}
		}
		if next.ID != tk.ID {
			return nil, &AnswerError{Method: ep.Dialect.get(), Reason: fmt.Sprintf("task %q answered for %q", next.ID, tk.ID)}
		}
		tk = next
	}
	return tk, nil
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// settled reports whether the task is done with for this run. A task the
// run continued may still show the input-required status of its previous
// turn (an agent answers a send that does not wait before it has read the
// message): that status is not this run's answer.
func settled(tk *task, sent string, prev pending) bool {
	if !settledState(tk.State) {
		return false
	}
	if tk.State != stateInputRequired && tk.State != stateAuthRequired || prev.TaskID != tk.ID {
		return true
	}
	id := statusMessageID(tk)
	if id != "" && id == prev.MessageID {
		return false
	}
	// The history, when the agent keeps one, tells which came last: the
	// status message or this run's message.
	at := map[string]int{}
	for k, m := range tk.History {
		at[m.MessageID] = k
	}
	ks, okS := at[id]
	km, okM := at[sent]
	return !(okS && okM && ks < km)
}

func statusMessageID(tk *task) string {
	if tk.Status.Message == nil {
		return ""
	}
	return tk.Status.Message.MessageID
}

// cancel asks the agent to cancel a task whose run ended early, with a
// context of its own: the run's is done.
func (a *Agent) cancel(ctx context.Context, ep endpoint, taskID string) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), a.cancelTimeout)
	defer cancel()
	if _, err := a.call(cctx, ep, ep.Dialect.cancel(), map[string]any{"id": taskID}); err != nil {
		a.log.Warn("a2aagent: the task of an ended run was not cancelled", zap.String("task_id", taskID), zap.Error(err))
	}
}

// continuation is the instance's last task with the agent when it is left
// input-required: the run's message goes on with it. The previous result
// tells first when it is the agent's own (an input_required outcome handed
// straight back to it carries task_id) and survives a restart; the agent's
// memory covers the rest, such as a person answering through a wait.
func (a *Agent) continuation(t *registry.Task) pending {
	a.mu.Lock()
	p, ok := a.waiting[t.InstanceID]
	a.mu.Unlock()
	if id, isStr := t.PreviousResult["task_id"].(string); isStr && id != "" && t.From == t.Agent && t.From != "" {
		if !ok || p.TaskID != id {
			p = pending{TaskID: id}
		}
		return p
	}
	return p
}

func (a *Agent) remember(instance string, p pending) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := a.waiting[instance]; !ok && len(a.waiting) >= maxRemembered {
		for k := range a.waiting {
			delete(a.waiting, k) // any one: the previous result still tells
			break
		}
	}
	a.waiting[instance] = p
}

func (a *Agent) forget(instance string) {
	a.mu.Lock()
	delete(a.waiting, instance)
	a.mu.Unlock()
}

// messageOutcome is the outcome of a Message answer: completed, with its
// first data part as the result when it is an object, else its text.
func messageOutcome(m *message) (registry.Outcome, error) {
	out := registry.Outcome{Trigger: "completed", Usage: usageOf(m.Metadata)}
	v, ok, err := firstData(m.Parts)
	if err != nil {
		return out, &AnswerError{Method: "message", Reason: "data part: " + err.Error()}
	}
	if obj, isObj := v.(map[string]any); ok && isObj {
		out.Result = obj
	} else {
		out.Result = map[string]any{"text": joinText(m.Parts)}
	}
	return out, nil
}

// taskOutcome is the outcome of a settled task (see the package
// documentation for the mapping).
func taskOutcome(tk *task) (registry.Outcome, error) {
	out := registry.Outcome{Usage: usageOf(tk.Metadata)}
	var text string
	var parts []part
	if m := tk.Status.Message; m != nil {
		text, parts = joinText(m.Parts), m.Parts
	}
	switch tk.State {
	case stateCompleted:
		var all []part
		for _, ar := range tk.Artifacts {
			all = append(all, ar.Parts...)
		}
		result := map[string]any{}
		v, ok, err := firstData(all)
		if err != nil {
			return out, &AnswerError{Method: "task", Reason: "artifact data part: " + err.Error()}
		}
		if obj, isObj := v.(map[string]any); ok && isObj {
			result = obj
		}
		if hasText(all) {
			result["text"] = joinText(all)
		}
		result["task_id"] = tk.ID
		out.Trigger, out.Result = "completed", result
		return out, nil
	case stateInputRequired:
		v, ok, err := firstData(parts)
		if err != nil {
			return out, &AnswerError{Method: "task", Reason: "status data part: " + err.Error()}
		}
		if !ok {
			v = map[string]any{}
		}
		out.Trigger, out.Result = "input_required", map[string]any{"task_id": tk.ID, "text": text, "data": v}
		return out, nil
	case stateRejected:
		return out, registry.Reject(text)
	}
	return out, &TaskError{TaskID: tk.ID, State: tk.State, Message: excerpt([]byte(text))}
}

// usageOf reads metadata.usage; usage that does not decode is none.
func usageOf(meta map[string]any) registry.Usage {
	raw, ok := meta["usage"]
	if !ok {
		return registry.Usage{}
	}
	b, err := json.Marshal(raw)
	if err != nil {
		return registry.Usage{}
	}
	var u struct {
		InputTokens  float64 `json:"input_tokens"`
		OutputTokens float64 `json:"output_tokens"`
		Cost         float64 `json:"cost"`
		Model        string  `json:"model"`
	}
	if json.Unmarshal(b, &u) != nil {
		return registry.Usage{}
	}
	return registry.Usage{InputTokens: tokens(u.InputTokens), OutputTokens: tokens(u.OutputTokens), Cost: u.Cost, Model: u.Model}
}

// tokens converts a count that may be past what an int64 holds (the
// conversion of such a float is not defined).
func tokens(f float64) int64 {
	switch {
	case f >= math.MaxInt64:
		return math.MaxInt64
	case f <= math.MinInt64:
		return math.MinInt64
	}
	return int64(f)
}

// classify gives a run's error its kind, and marks those retrying cannot
// fix as permanent.
func classify(err error) error {
	if err == nil || errors.Is(err, registry.ErrRejected) {
		return err
	}
	var (
		se *StatusError
		re *RPCError
		te *TaskError
		ce *CardError
	)
	switch {
	case errors.As(err, &se):
		switch {
		case se.Unauthorized():
			return registry.Permanent(registry.Kind(err, "unauthorized"))
		case se.Retryable():
			return registry.Kind(err, "transport")
		}
		return registry.Permanent(registry.Kind(err, "transport"))
	case errors.As(err, &re):
		return registry.Kind(err, "agent_error")
	case errors.As(err, &te):
		switch te.State {
		case stateFailed:
			return registry.Kind(err, "agent_failed")
		case stateCanceled:
			return registry.Permanent(registry.Kind(err, "cancelled"))
		}
		return registry.Permanent(registry.Kind(err, "auth_required"))
	case errors.As(err, &ce):
		// A card that is missing or says nothing this client speaks is
		// a configuration problem: another try reads the same card.
		return registry.Permanent(registry.Kind(err, "agent_error"))
	case errors.Is(err, ErrAnswer), errors.Is(err, errTooLarge):
		return registry.Kind(err, "invalid_result")
	}
	return registry.Kind(fmt.Errorf("a2aagent: %w", err), "transport")
}
