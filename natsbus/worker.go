package natsbus

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"go.uber.org/zap"

	"github.com/batonhq/baton/registry"
	"github.com/batonhq/baton/transport"
	"github.com/batonhq/baton/wire"
)

// WorkerConfig holds a Worker's settings; zero values take the defaults.
type WorkerConfig struct {
	// Concurrency is how many runs of each agent's handler go on at once
	// (default 16).
	Concurrency int
	// Grace is how long a drain waits for running handlers before it
	// cancels their contexts (default 10s).
	Grace time.Duration
	// PollMin and PollMax bound the pause between looks at an empty work
	// stream: it starts at PollMin and doubles up to PollMax (defaults 1ms
	// and 50ms); work found resets it.
	PollMin, PollMax time.Duration
	// ReportTimeout bounds the wait for the engine's answer (default 10s).
	ReportTimeout time.Duration
	// Hold is how long the worker keeps work whose report no engine
	// answered (none serves reports yet, or the instance is moving to
	// another engine), reporting it again after a pause that doubles from
	// 100ms up to HoldPause, before it gives the work back for a later
	// delivery (default 1 minute). While it holds the work it keeps it in
	// progress, so that the work is not delivered again meanwhile.
	Hold time.Duration
	// HoldPause bounds the pause between two reports of held work
	// (default 5s; never more than a third of the ack wait).
	HoldPause time.Duration
	// Keep bounds the outcomes kept for work whose report no engine
	// answered (default 4096): work delivered again with its outcome kept
	// is reported again, not run again. Past the bound the oldest is
	// forgotten, and its work, delivered again, runs again.
	Keep int
}

func (c *WorkerConfig) defaults() {
	if c.Concurrency <= 0 {
		c.Concurrency = 16
	}
	if c.Grace <= 0 {
		c.Grace = 10 * time.Second
	}
	if c.PollMin <= 0 {
		c.PollMin = time.Millisecond
	}
	if c.PollMax < c.PollMin {
		c.PollMax = max(50*time.Millisecond, c.PollMin)
	}
	if c.ReportTimeout <= 0 {
		c.ReportTimeout = DefaultReportTimeout
	}
	if c.Hold <= 0 {
		c.Hold = time.Minute
	}
	if c.HoldPause <= 0 {
		c.HoldPause = 5 * time.Second
	}
	if c.Keep <= 0 {
		c.Keep = 4096
	}
}

// holdFirst is the pause before the first report again of held work.
const holdFirst = 100 * time.Millisecond

// Worker runs Go handlers (registry.Handler, the same ones an engine runs
// in process) for agents whose work comes over NATS: it takes work highest
// priority first, decodes it with package wire, runs the handler while
// sending heartbeats (in-progress acks, and heartbeat reports when the work
// asks for them), reports the outcome to the engine on ReportsSubject,
// waits for the answer and then acks the work. A handler's registry.Reject
// is reported and the work terminated with the reason.
//
// A report no engine answers is not lost, nor is the handler run again for
// it: the worker keeps the outcome, holds the work (in progress) and
// reports again with a growing pause; when it gives the work back at last
// (WorkerConfig.Hold), a later delivery of the same work reports the kept
// outcome instead of running the handler.
type Worker struct {
	tr       *Transport
	nc       *nats.Conn
	handlers map[string]registry.Handler
	cfg      WorkerConfig
	log      *zap.Logger
	kept     *kept
	replies  *reportReplies // set by Run before any run starts

	mu      sync.Mutex
	cancel  context.CancelFunc
	running chan struct{} // closed when Run returns
}

// NewWorker returns a Worker taking work through tr and reporting on tr's
// connection, for the agents of handlers (agent id to handler).
func NewWorker(tr *Transport, handlers map[string]registry.Handler, cfg WorkerConfig) (*Worker, error) {
	if tr == nil {
		return nil, errors.New("natsbus: worker needs a transport")
	}
	if len(handlers) == 0 {
		return nil, errors.New("natsbus: worker needs at least one handler")
	}
	for id, h := range handlers {
		if h == nil {
			return nil, fmt.Errorf("natsbus: worker: nil handler for %s", id)
		}
	}
	cfg.defaults()
	return &Worker{tr: tr, nc: tr.nc, handlers: handlers, cfg: cfg, log: tr.log, kept: newKept(cfg.Keep)}, nil
}

// Run takes and runs work until ctx ends or Close is called, then drains:
// it stops taking work, waits up to the grace period for the handlers
// running, cancels the contexts of those still running (their work is given
// back for redelivery) and returns once every one has returned. It returns
// nil after a drain, and an error without running anything when it cannot
// subscribe to the answers to its reports (a closed connection).
func (w *Worker) Run(ctx context.Context) error {
	if ctx == nil {
		return errors.New("natsbus: nil context")
	}
	w.mu.Lock()
	if w.running != nil {
		w.mu.Unlock()
		return errors.New("natsbus: worker already running")
	}
	ctx, cancel := context.WithCancel(ctx)
	w.cancel, w.running = cancel, make(chan struct{})
	running := w.running
	w.mu.Unlock()
	defer close(running)
	defer cancel()

	replies, err := newReportReplies(w.nc)
	if err != nil {
		return err
	}
	defer replies.close() // after the last run returned
	w.replies = replies
	// hard is the handlers' context: it outlives ctx by the grace period.
	hard, cancelHard := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelHard()
	var runs sync.WaitGroup
	var takers sync.WaitGroup
	agents := make([]string, 0, len(w.handlers))
	for id := range w.handlers {
		agents = append(agents, id)
	}
	sort.Strings(agents)
	for _, agent := range agents {
		takers.Add(1)
		go func() {
			defer takers.Done()
			w.take(ctx, hard, agent, &runs)
		}()
	}
	takers.Wait() // ctx ended: no more work is taken
	idle := make(chan struct{})
	go func() {
		runs.Wait()
		close(idle)
	}()
	grace := time.NewTimer(w.cfg.Grace)
	defer grace.Stop()
	select {
	case <-idle:
	case <-grace.C:
		cancelHard()
		<-idle
	}
	return nil
}

// Close stops a running Worker and waits for its drain. Safe to call twice,
// and before Run.
func (w *Worker) Close() error {
	w.mu.Lock()
	cancel, running := w.cancel, w.running
	w.mu.Unlock()
	if cancel == nil {
		return nil
	}
	cancel()
	<-running
	return nil
}

// take is agent's taker: it keeps up to Concurrency runs going, on as
// many goroutines of its own, which return after their runs once it
// returns.
func (w *Worker) take(ctx, hard context.Context, agent string, runs *sync.WaitGroup) {
	slots := make(chan struct{}, w.cfg.Concurrency)
	// A goroutine per slot, for as long as the taker: one per run grew its
	// stack again in every run (as its report was encoded and waited for),
	// and that and its start were 2% of a NATS step's CPU. A run holds its
	// slot until it returns, so a goroutine is free, or about to be, for
	// each slot the taker fills.
	jobs := make(chan job)
	defer close(jobs)
	for range cap(slots) {
		runs.Add(1)
		go func() {
			defer runs.Done()
			for j := range jobs {
				w.run(hard, ctx.Done(), j.m, j.t)
				<-slots
			}
		}()
	}
	pause := w.cfg.PollMin
	failed := 0 // takes failed in a row
	wait := time.NewTimer(0)
	defer wait.Stop()
	<-wait.C
	for {
		// Wait for a free slot: only this loop fills slots, so as many as
		// are free now stay free until it takes work.
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			return
		}
		asked := 1 + cap(slots) - len(slots)
		got, tasks, err := w.tr.takeTasks(ctx, agent, asked)
		if ctx.Err() != nil {
			// Taken while the drain began: give it back at once.
			for _, m := range got {
				_ = w.tr.Nack(context.WithoutCancel(ctx), m)
			}
			<-slots
			return
		}
		failing := err != nil && !errors.Is(err, transport.ErrUnknownAgent)
		switch {
		case failing && failed == 0:
			w.log.Warn("natsbus: worker: take work", zap.String("agent", agent), zap.Error(err))
		case failing && failed%takeErrorsLogged == 0:
			w.log.Warn("natsbus: worker: take work, still failing", zap.String("agent", agent), zap.Int("tries", failed+1), zap.Error(err))
		case !failing && failed > 0:
			w.log.Info("natsbus: worker: take work again", zap.String("agent", agent), zap.Int("failed_tries", failed))
		}
		if failing {
			failed++
		} else {
			failed = 0
		}
		for k, m := range got {
			if k > 0 {
				slots <- struct{}{}
			}
			jobs <- job{m, tasks[k]}
		}
		if len(got) > 0 {
			pause = w.cfg.PollMin
			if len(got) == asked {
				continue // the stream may hold more
			}
			// Fewer than asked: the take found every level empty at its
			// end. The next look waits PollMin, as after a take that found
			// nothing: at once, it cost an empty pull of every level and
			// most often found nothing still.
			wait.Reset(pause)
			select {
			case <-ctx.Done():
				return
			case <-wait.C:
			}
			continue
		}
		<-slots
		if failing {
			// A server that cannot serve takes (cut off from its cluster,
			// say) is asked less often, up to once a second.
			pause = max(pause, min(time.Duration(failed)*w.cfg.PollMax, time.Second))
		}
		wait.Reset(pause)
		select {
		case <-ctx.Done():
			return
		case <-wait.C:
		}
		pause = min(2*pause, w.cfg.PollMax)
	}
}

// job is a message taken and its task, for a run.
type job struct {
	m *transport.Message
	t *registry.Task
}

// takeErrorsLogged is how many failed takes in a row make one more warning
// after the first.
const takeErrorsLogged = 100

// run handles one message and its task (nil when take left it to
// wire.Decode); drain is closed when the worker stops taking work.
func (w *Worker) run(ctx context.Context, drain <-chan struct{}, m *transport.Message, t *registry.Task) {
	var err error
	if t == nil {
		t, err = wire.Decode(m)
	}
	if err != nil {
		// Work no handler can read: no retry will fix it.
		_ = w.tr.Reject(ctx, m, "natsbus: worker cannot read the work: "+err.Error())
		return
	}
	if o, ok := w.keptOutcome(t); ok {
		// The handler ran on this work already and no engine answered its
		// report: report that outcome, do not run the handler again.
		w.finish(ctx, drain, m, t, o)
		return
	}
	if t.Notice {
		// A final notice asks for no run; the report settles it.
		w.finish(ctx, drain, m, t, keptOutcome{report: wire.Report{InstanceID: t.InstanceID, Step: t.Step, Agent: t.Agent, Trigger: "noticed"}})
		return
	}
	out, runErr := w.handleBeating(ctx, m, t)
	if ctx.Err() != nil {
		// The drain's grace ran out: the run is abandoned, and its work
		// goes back for another worker.
		_ = w.tr.Nack(context.WithoutCancel(ctx), m)
		return
	}
	rep := wire.ReportOf(t, out, runErr)
	reject := ""
	if rep.Reject != nil {
		reject = *rep.Reject
	}
	w.finish(ctx, drain, m, t, keptOutcome{report: rep, reject: reject})
}

// handleBeating runs the handler, sending an in-progress ack at a third of
// the ack wait (two may be late before the work is redelivered) (or at the work's heartbeat interval, with a heartbeat report,
// when it asks for one) until it returns. The handler runs on the caller's
// goroutine and a timer sends the beats: a goroutine, a channel and a
// ticker per run were a measurable part of the worker's cost per step.
func (w *Worker) handleBeating(ctx context.Context, m *transport.Message, t *registry.Task) (out registry.Outcome, err error) {
	every := w.tr.cfg.ackWait(m.DeliveryCount) / 3
	if t.Heartbeat > 0 && t.Heartbeat < every {
		every = t.Heartbeat
	}
	// The handler's spans join the trace of the work (its traceparent).
	hctx, cancel := context.WithCancel(wire.ContextWithTraceparent(ctx, t.Traceparent))
	defer cancel()
	// mu is held while a beat is sent: once the handler returned and
	// stopped is set under it, no beat is sent or under way. The three
	// are one object the timer's function holds (as three variables,
	// each was made on the heap).
	b := &beating{}
	b.mu.Lock()
	b.timer = time.AfterFunc(every, func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		if b.stopped {
			return
		}
		w.beat(ctx, m, t)
		b.timer.Reset(every)
	})
	b.mu.Unlock()
	defer func() {
		b.mu.Lock()
		b.stopped = true
		b.mu.Unlock()
		b.timer.Stop()
	}()
	defer func() {
		if p := recover(); p != nil {
			out, err = registry.Outcome{}, fmt.Errorf("natsbus: handler of %s panicked: %v", t.Agent, p)
		}
	}()
	return w.handlers[t.Agent].Handle(hctx, t)
}

// beating is a run's heartbeat timer and what stops it.
type beating struct {
	mu      sync.Mutex
	stopped bool
	timer   *time.Timer
}

// beat sends one heartbeat of m's run: an in-progress ack, and a heartbeat
// report when the work asks for them.
func (w *Worker) beat(ctx context.Context, m *transport.Message, t *registry.Task) {
	if err := w.tr.Heartbeat(ctx, m); err != nil {
		w.log.Warn("natsbus: worker: heartbeat", zap.String("message_id", m.MessageID), zap.Error(err))
	}
	if t.Heartbeat > 0 {
		rctx, rcancel := context.WithTimeout(ctx, w.cfg.ReportTimeout)
		_, _ = Report(rctx, w.nc, wire.Report{InstanceID: t.InstanceID, Step: t.Step, Agent: t.Agent, Heartbeat: true})
		rcancel()
	}
}

// keptOutcome returns the outcome kept for t's run. The key is built only
// when some outcome is kept: most steps find none.
func (w *Worker) keptOutcome(t *registry.Task) (keptOutcome, bool) {
	if w.kept.len() == 0 {
		return keptOutcome{}, false
	}
	return w.kept.get(keptKey(t))
}

// finish reports o, waits for the answer, and settles m: acked (without
// waiting for the server's confirmation) once the engine answered ok or
// stale (or invalid: sending it again cannot help),
// terminated with the reason for a rejection. While no answer comes, or
// the instance is unknown (its engine may not have resumed it yet), it
// keeps o and holds m (in progress), reporting again after a pause that
// doubles up to HoldPause; after Hold, or once drain is closed, it gives m
// back for redelivery after a pause that grows with its deliveries
// (Transport.NackLater), and the kept o is what the next delivery reports.
func (w *Worker) finish(ctx context.Context, drain <-chan struct{}, m *transport.Message, t *registry.Task, o keptOutcome) {
	// Most reports are answered at once: the key, the settling context and
	// the timer are made only for one that is not.
	var (
		key    string
		settle context.Context
		until  time.Time
		timer  *time.Timer
	)
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	pause := holdFirst
	for n := 0; ; n++ {
		if w.answered(ctx, t, o.report, n) {
			break
		}
		if n == 0 {
			key, settle, until = keptKey(t), context.WithoutCancel(ctx), time.Now().Add(w.cfg.Hold)
		}
		w.kept.put(key, o)
		if ctx.Err() != nil || time.Now().Add(pause).After(until) {
			_ = w.tr.NackLater(settle, m)
			return
		}
		if timer == nil {
			timer = time.NewTimer(pause)
		} else {
			timer.Reset(pause)
		}
		select {
		case <-drain:
			_ = w.tr.NackLater(settle, m)
			return
		case <-ctx.Done():
			_ = w.tr.NackLater(settle, m)
			return
		case <-timer.C:
		}
		// Still at it, for the server: the work is not delivered again
		// while it is held.
		if err := w.tr.Heartbeat(ctx, m); err != nil {
			w.log.Warn("natsbus: worker: heartbeat", zap.String("key", t.IdempotencyKey), zap.Error(err))
		}
		pause = min(2*pause, w.cfg.HoldPause, max(w.tr.cfg.ackWait(m.DeliveryCount)/3, time.Millisecond))
	}
	if w.kept.len() > 0 {
		w.kept.drop(keptKey(t))
	}
	if o.reject != "" {
		if err := w.tr.Reject(context.WithoutCancel(ctx), m, o.reject); err != nil {
			w.log.Warn("natsbus: worker: reject", zap.String("key", t.IdempotencyKey), zap.Error(err))
		}
		return
	}
	if err := w.tr.ackNoWait(m); err != nil {
		w.log.Warn("natsbus: worker: ack", zap.String("key", t.IdempotencyKey), zap.Error(err))
	}
}

// answered sends report r of t, the n-th time, and reports whether an
// engine answered it for good: ok, stale, or invalid (sending it again
// cannot help). The first failure of a report is logged.
func (w *Worker) answered(ctx context.Context, t *registry.Task, r wire.Report, n int) bool {
	ans, err := w.replies.report(ctx, &r, w.cfg.ReportTimeout)
	switch {
	case err != nil:
		if n == 0 {
			w.log.Warn("natsbus: worker: report not answered; keeping the outcome and reporting it again", zap.String("key", t.IdempotencyKey), zap.Error(err))
		}
		return false
	case !ans.OK && ans.Code == wire.CodeUnknownInstance:
		if n == 0 {
			w.log.Warn("natsbus: worker: report refused; keeping the outcome and reporting it again", zap.String("key", t.IdempotencyKey), zap.Error(&AnswerError{Code: ans.Code, Message: ans.Message}))
		}
		return false
	case !ans.OK && ans.Code != wire.CodeStale:
		w.log.Warn("natsbus: worker: report refused", zap.String("key", t.IdempotencyKey), zap.Error(&AnswerError{Code: ans.Code, Message: ans.Message}))
	}
	return true
}
