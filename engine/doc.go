// Package engine runs workflow instances: it runs agents, matches their
// outcomes against the workflow's rules, fires the state machine's
// transitions, enforces the limits, and delivers every hand-off as a message
// on the bus.
//
// # The life of an instance
//
// [Engine.Start] creates an instance in the workflow's initial state (visit
// 1) and dispatches the state's agent: the engine sends a HANDOFF message to
// the agent's mailbox itself. That run is step 1.
//
// An agent is either a Go handler (registry.Handler), run by one of the
// engine's workers when its message is taken from its mailbox, or an external
// agent that reads its mailbox on [Engine.Bus] and reports back with
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
// limits are checked first (visits of the next state, steps of the
// instance): a hit drops the rule's effects and enters the workflow's
// on_limit state, or fails the instance. Otherwise the rule's task and
// context expressions are evaluated, the context is merged, the state
// machine fires the rule's transition, and the next state's agent receives
// the hand-off: through the hand-off manager when another agent hands over
// (an agent-to-agent hand-off with a record), from the engine when the same
// agent continues. Entering a terminal state completes the instance; a rule
// into it with `to` sends that agent a final notice first.
//
// # History, store and events
//
// Each step (an outcome processed, a retry dispatched, a timeout) is
// committed to the [Store] as one [StepRecord]: the instance's [Snapshot]
// after the step, the history [Entry] lines it produced, and the work it
// sends as [Outgoing] items (a transactional outbox). Only once the store
// has committed the step is its work handed to the bus; then observers
// registered with [WithObserver] receive the step's events (state_changed,
// agent_handoff, agent_changed, completed, failed). An outbox item stays in
// the store until a later step settles it (its run ended, its notice was
// taken), so that [Engine.Resume], on a durable store after a crash, sends
// it again with the same idempotency key and hand-off id: transitions are
// applied exactly once, agents run a step at least once. The bus's dead
// letters are written to the store as well.
//
// # Concurrency
//
// Each instance has its own lock, held for the duration of a step and never
// while a handler runs, so instances progress independently and there is no
// global lock on the hot path. Handlers run on the engine's worker pool (or
// on a clock.Sim for deterministic replays, see package scenario); every
// goroutine the engine starts is stopped by [Engine.Close].
package engine
