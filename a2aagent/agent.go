package a2aagent

import (
	"context"
	"fmt"
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
	ending                     sync.WaitGroup     // the cancels EndInstance started
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
	for _, f := range []struct {
		name string
		d    time.Duration
	}{
		{"card_ttl", cfg.CardTTL}, {"poll_interval", cfg.PollInterval}, {"max_poll_interval", cfg.MaxPollInterval},
		{"call_timeout", cfg.CallTimeout}, {"cancel_timeout", cfg.CancelTimeout}, {"stream_timeout", cfg.StreamTimeout},
	} {
		if f.d < 0 {
			return nil, &ConfigError{Field: f.name, Reason: "must not be negative"}
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
	a.log = a.log.With(zap.String("a2a_agent", u.Redacted())) // no password of the URL in a log
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
	// No EndInstance starts a cancel after this: it checks closed under mu.
	a.mu.Lock()
	a.mu.Unlock()
	a.ending.Wait()
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
	if err := ctx.Err(); err != nil {
		return registry.Outcome{}, err // ended before it sent anything: nothing to cancel
	}
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

// EndInstance tells the agent that an instance has ended (cancelled,
// completed or failed): a task the agent left input-required for it, for a
// person to answer through a wait, is cancelled at the agent, in the
// background (Close waits for it), so that no task outlives its instance.
// It is safe to call for any instance, from an engine observer.
func (a *Agent) EndInstance(instance string) {
	a.mu.Lock()
	p, ok := a.waiting[instance]
	if !ok || p.TaskID == "" || a.closed.Load() {
		a.mu.Unlock()
		return
	}
	delete(a.waiting, instance)
	a.ending.Add(1)
	a.mu.Unlock()
	go func() {
		defer a.ending.Done()
		ctx, cancel := context.WithTimeout(context.Background(), a.cancelTimeout)
		defer cancel()
		ep, err := a.endpoint(ctx)
		if err != nil {
			a.log.Warn("a2aagent: the task of an ended instance was not cancelled", zap.String("task_id", p.TaskID), zap.Error(err))
			return
		}
		a.cancel(ctx, ep, p.TaskID)
	}()
}

func (a *Agent) forget(instance string) {
	a.mu.Lock()
	delete(a.waiting, instance)
	a.mu.Unlock()
}
