// Package engine runs workflow instances: it runs agents, matches their
// outcomes against the workflow's rules, takes the state machine's
// transitions, enforces the limits, and owns every hand-off: its id, its
// record in the instance's history, and its delivery.
//
// # The life of an instance
//
// [Engine.Start] creates an instance in the workflow's initial state (visit
// 1) and dispatches the state's agent itself. That run is step 1.
//
// An agent is either a Go handler (registry.Handler), run in process from
// the agent's own mailbox (priority, then send order; the agent's queue
// capacity; at most its concurrency of runs at once), or an external agent
// that takes its work, written by package wire, from the engine's
// [Transport] and reports back with [Engine.HandleReport] or
// [Engine.Report]. Either way a run ends in an outcome (a trigger and result
// data), an error, or a rejection of the hand-off. A run that errs, panics
// or exceeds its state's timeout has failed: the state's retry policy runs it
// again after its backoff (each retry is a new step, dispatched by the
// engine), unless the error is registry.Permanent. With no retry left the
// engine produces the outcome `error` (or `timeout`). A rejection produces
// `rejected` at once and is never retried.
//
// The outcome is matched against the rules whose `from` is the state's agent
// and whose trigger names the outcome, by priority, then file order; the
// first whose condition holds fires. No rule: the instance fails with a
// rules.NoMatchError listing every condition tried. When a rule fires, the
// limits are checked first (the token and cost budgets with the usage the
// runs reported, the reporting run's included; visits of the next state;
// steps of the instance): a hit drops the rule's effects and enters the
// workflow's on_limit state, or fails the instance. max_duration is a timer
// armed from the instance's creation time. A run's usage counts once, as
// its agent_run entry is committed; progress a run sends is told to the
// observers and kept on the run, never recorded. Otherwise the rule's task and
// context expressions are evaluated, the context is merged, the instance
// takes the rule's transition (one its state machine, package fsm, declares:
// Decide picks no other), and the next state's agent receives
// the work: as an agent-to-agent hand-off (its id the step's idempotency
// key, its record a line of the history) when another agent hands over,
// from the engine when the same agent continues. All of this decision is
// rules.Workflow.Decide, which replay applies to recorded histories too. Entering a terminal state completes the instance; a rule
// into it with `to` sends that agent a final notice first.
//
// # Waiting, retry policies, heartbeats
//
// A wait state runs no agent: the instance waits until Instance.Signal (or
// Engine.Signal) sends one of the state's signals, which is the state's
// outcome with the signal's data as result, or until the state's timeout
// produces the outcome `timeout`. Anything else is refused with
// ErrUnexpectedSignal and changes nothing. A wait is not a step; a resumed
// instance waits on, with its original deadline.
//
// A failed run has a kind: the agent's (registry.Kind), else `error`, or
// the engine's own (`timeout`, `heartbeat`, `panic`, `invalid_result`,
// `transport`). The state's retry policy retries it when retries are left,
// the failure is retryable and its kind passes the policy's on and except
// lists; the delay comes from the policy's backoff, with full jitter drawn
// from a seed (WithJitterSeed) the simulated clock fixes. Rules read the
// kind as error.kind. An external agent's run in a state with a heartbeat
// fails with kind `heartbeat` when it reports no heartbeat for that long.
// A condition that fails at run time counts as false, and is recorded
// (a condition entry), told (EventConditionError) and counted
// (Metrics.ConditionErrors).
//
// The workflow's declarations hold wherever data enters: Start refuses an
// input that breaks the `input` declaration (a *InputError naming the
// field), and a run whose result breaks its agent's `result` declaration
// has failed with kind `invalid_result`, whichever way the result came (a
// Go handler, Report, HandleReport).
//
// # History, store and events
//
// Each step (an outcome processed, a retry dispatched, a timeout) is
// committed to the [record.Store] as one [record.Step]: the instance's
// [record.Snapshot] after the step, the history [record.Entry] lines it
// produced, and the work it sends as [record.Outgoing] items (a transactional outbox). Only once the store
// has committed the step is its work sent; then observers
// registered with [WithObserver] receive the step's events (instance_started,
// run_started, agent_reported, retry_scheduled, rule_fired, state_changed,
// agent_handoff, completed, failed, cancelled and the others of [Event]).
// Failed runs are logged at warn level and failed instances at error level,
// with the instance, step, agent and the failure's kind. An outbox item stays in
// the store until a later step settles it (its run ended, its notice was
// taken), so that [Engine.Resume], on a durable store after a crash, sends
// it again with the same idempotency key and hand-off id: transitions are
// applied exactly once, agents run a step at least once. The transport's dead
// letters are written to the store as well. A step the store refuses three
// times sends nothing and fails the instance with a [CommitError]; the store
// keeps it at its last committed step for Resume. A finished instance
// leaves the engine's memory; [Engine.Instance] reads it from the store.
//
// # Traces and metrics
//
// With [WithTracerProvider] an instance is an OpenTelemetry span
// "invoke_workflow {workflow}", a child of the span in the context given
// to Start, and each run a span "invoke_agent {agent}" under it. A Go
// handler's context carries its run's span; external work carries it as
// its traceparent. Only the trace context of Start's context reaches the
// handlers: an instance outlives that call and may resume elsewhere.
// Without a provider no span is made. [Engine.Metrics] counts the running
// instances; package engineprom turns the events into Prometheus metrics.
//
// # State kinds
//
// Each kind of state has its own file: an agent's state (agent.go), a
// parallel state (parallel.go), a wait state (wait.go), a foreach state
// (foreach.go) and a workflow state (child.go). A kind enters its state and
// resumes it after a restart; a kind that does more than one agent's run
// keeps its work under way (a join, a wait, the items, a child) as the
// instance's visit, which takes the outcomes of its runs, answers what the
// instance waits on, and stops or ends with the state. kind.go holds the
// two interfaces and kindOf, the one place that tells the kinds apart: a
// new kind of state is a new file and a line there.
//
// # Concurrency
//
// Each instance has its own lock, held for the duration of a step and never
// while a handler runs, so instances progress independently and there is no
// global lock on the hot path; an external agent's report takes its
// instance's lock once, from its arrival to the next step committed and its
// work sent. Go handlers run on goroutines the agents'
// mailboxes start, up to each agent's concurrency, of which up to as many as
// the process has processors wait for the agent's next work once its
// mailbox is empty, rather than end (or on a clock.Sim for deterministic
// replays, see package scenario); timers' work runs on the engine's small
// worker pool; every goroutine the engine starts is stopped by
// [Engine.Close].
package engine
