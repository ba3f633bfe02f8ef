package engine

import (
	"errors"

	"github.com/batonhq/baton/record"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// What an instance tells: events for observers, and log lines for the
// operator. Both cost nothing on the hot path when nobody listens: events
// are built only when the engine has observers, and log lines only when the
// logger is enabled at their level (zap's Check).

// observed reports whether the engine has observers: events are built
// only then.
func (e *Engine) observed() bool { return len(e.observe) > 0 }

// event queues ev for the observers, who get it once the step is committed.
// The instance's identity, time and defaults for the step, state and agent
// are filled in here.
func (i *instance) event(ev Event) {
	if !i.e.observed() {
		return
	}
	ev.InstanceID, ev.Workflow, ev.Version, ev.Time = i.id, i.e.wf.Name, i.e.wf.Version, i.stepTime
	if ev.Time.IsZero() {
		ev.Time = i.e.clock.Now() // told outside a step (progress): no step time to share
	}
	if ev.Step == 0 {
		ev.Step = i.step
	}
	if ev.State == "" {
		ev.State = i.state.Name
	}
	if ev.Agent == "" {
		ev.Agent = i.state.Agent
	}
	i.events = append(i.events, ev)
}

// started tells, and traces, that the work of r is on its way.
func (i *instance) started(r *run, rule, reason string) {
	i.traceRun(r, rule)
	i.runStarted(r, rule, reason)
}

// runStarted tells that the work of r is on its way; reason is why it was
// sent (the rule's reason, start, retry, resume).
func (i *instance) runStarted(r *run, rule, reason string) {
	if !i.e.observed() {
		return
	}
	r.sent = i.e.clock.Now()
	i.event(Event{Type: EventRunStarted, Step: r.step, State: r.state.Name, Agent: r.agent, From: r.from, Rule: rule, Attempt: r.attempt, Reason: reason})
}

// runEnded tells how the run r ended, as its agent_run entry ran records
// it, and logs a failed run at warn level: a run whose every attempt fails
// leaves a line per attempt.
func (i *instance) runEnded(r *run, ran *record.Entry, err error) {
	if err != nil {
		i.logRun(zapcore.WarnLevel, "engine: run failed", r.step, r.state.Name, r.agent, r.attempt, ran.ErrorKind, err)
	}
	if !i.e.observed() {
		return
	}
	ev := Event{Type: EventAgentReported, Step: r.step, State: r.state.Name, Agent: r.agent, Attempt: r.attempt, Trigger: ran.Trigger, To: ran.To, Err: err, Usage: ran.Usage}
	if err != nil {
		ev.Kind = ran.ErrorKind
		if ev.Kind == "" {
			ev.Kind = "error"
		}
	}
	if !r.sent.IsZero() {
		ev.Duration = i.e.clock.Now().Sub(r.sent)
	}
	i.event(ev)
}

// retryScheduled tells, and logs at info level, that the run r failed with
// err of kind and will be tried again after its backoff.
func (i *instance) retryScheduled(r *run, retry *record.Entry, err error) {
	if ce := i.e.log.Check(zapcore.InfoLevel, "engine: retry scheduled"); ce != nil {
		ce.Write(zap.String("instance", i.id), zap.String("workflow", i.e.wf.Name), zap.Int("step", r.step),
			zap.String("state", r.state.Name), zap.String("agent", r.agent), zap.Int("attempt", retry.Attempt),
			zap.Duration("delay", retry.Delay), zap.String("kind", retry.ErrorKind), zap.Error(err))
	}
	i.event(Event{Type: EventRetryScheduled, Step: r.step, State: r.state.Name, Agent: r.agent, Attempt: retry.Attempt, Delay: retry.Delay, Kind: retry.ErrorKind, Err: err})
}

// conditionFailed tells, and logs at warn level, that a rule's condition
// failed at run time (and counted as false).
func (i *instance) conditionFailed(en *record.Entry, trigger string, err error) {
	if ce := i.e.log.Check(zapcore.WarnLevel, "engine: condition failed, counted as false"); ce != nil {
		ce.Write(zap.String("instance", i.id), zap.String("workflow", i.e.wf.Name), zap.Int("step", i.step),
			zap.String("state", en.State), zap.String("rule", en.Rule), zap.String("condition", en.Condition), zap.Error(err))
	}
	i.event(Event{Type: EventConditionError, Rule: en.Rule, Condition: en.Condition, Trigger: trigger, Err: err})
}

// limitReached tells, and logs at warn level, that lim stopped a
// transition.
func (i *instance) limitReached(lim *LimitError) {
	if ce := i.e.log.Check(zapcore.WarnLevel, "engine: limit hit"); ce != nil {
		ce.Write(zap.String("instance", i.id), zap.String("workflow", i.e.wf.Name), zap.Int("step", i.step),
			zap.String("state", i.state.Name), zap.String("limit", lim.Limit), zap.Int("count", lim.Count), zap.Int("max", lim.Max))
	}
	i.event(Event{Type: EventLimitHit, Limit: lim.Limit, Count: lim.Count, Max: lim.Max, Total: lim.Total, Budget: lim.Budget, To: lim.State, Err: lim})
}

// ended tells how the instance ended: completed, failed (logged at error
// level, with the step, state, agent and kind) or cancelled.
func (i *instance) ended() {
	var ev Event
	switch i.status {
	case record.StatusCompleted:
		ev = Event{Type: EventCompleted, Outcome: i.outcome}
	case record.StatusCanceled:
		ev = Event{Type: EventCancelled, Err: i.err}
		if ce := i.e.log.Check(zapcore.InfoLevel, "engine: instance cancelled"); ce != nil {
			ce.Write(zap.String("instance", i.id), zap.String("workflow", i.e.wf.Name), zap.Int("step", i.step), zap.String("state", i.state.Name))
		}
	default:
		kind := failureKind(i.err)
		ev = Event{Type: EventFailed, Err: i.err, Kind: kind}
		agent := i.state.Agent
		if i.run != nil {
			agent = i.run.agent
		}
		i.logRun(zapcore.ErrorLevel, "engine: instance failed", i.step, i.state.Name, agent, 0, kind, i.err)
	}
	if i.e.observed() {
		ev.Duration = i.e.clock.Now().Sub(i.created)
		i.event(ev)
	}
}

// logRun writes a line about a run or an instance that went wrong, with the
// fields operators search by.
func (i *instance) logRun(level zapcore.Level, msg string, step int, state, agent string, attempt int, kind string, err error) {
	ce := i.e.log.Check(level, msg)
	if ce == nil {
		return
	}
	fields := []zap.Field{
		zap.String("instance", i.id), zap.String("workflow", i.e.wf.Name), zap.Int("version", i.e.wf.Version),
		zap.Int("step", step), zap.String("state", state), zap.String("agent", agent),
	}
	if attempt > 0 {
		fields = append(fields, zap.Int("attempt", attempt))
	}
	ce.Write(append(fields, zap.String("kind", kind), zap.Error(err))...)
}

// deadLettered logs at warn level that work was kept as a dead letter, and
// returns its event (ok false when the engine has no observers).
func (e *Engine) deadLettered(dl *record.DeadLetter, state string) (Event, bool) {
	if ce := e.log.Check(zapcore.WarnLevel, "engine: work dead-lettered"); ce != nil {
		ce.Write(zap.String("instance", dl.Instance), zap.String("workflow", e.wf.Name), zap.Int("step", dl.Step),
			zap.String("state", state), zap.String("agent", dl.To), zap.String("reason", dl.Reason),
			zap.String("message_id", dl.MessageID), zap.String("error", dl.LastError))
	}
	if !e.observed() {
		return Event{}, false
	}
	ev := Event{
		Type: EventDeadLettered, InstanceID: dl.Instance, Workflow: e.wf.Name, Version: e.wf.Version,
		Step: dl.Step, State: state, Agent: dl.To, Time: dl.At, From: dl.From, Reason: dl.Reason,
		MessageID: dl.MessageID, Attempt: dl.Attempts,
	}
	if dl.LastError != "" {
		ev.Err = errors.New(dl.LastError)
	}
	return ev, true
}
