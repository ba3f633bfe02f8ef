// Package registry knows who the agents of a workflow are: their ids, types,
// capabilities, flags, mailbox sizes and, for agents that run inside the
// process, the Go handler that does their work.
//
// A Registry is filled once, from a workflow's agents section (the engine
// converts each declared agent into an Agent and calls FromSpecs) or by hand
// with Add, and is then read concurrently by the bus and the engine. Reads never take a lock: every change publishes a
// new immutable snapshot.
//
// # The agent's side of a hand-off
//
// When a hand-off reaches an agent, the engine turns it into a Task (what to
// do, the instance context, the previous agent's result, the constraints to
// respect, the step and its idempotency key) and calls the agent's Handler.
// The handler answers with an Outcome (a trigger and a result, optionally a
// Delegation to another agent) or with an error: Reject refuses the hand-off,
// Permanent marks a failure that retrying cannot fix, and any other error is
// retryable. Agents without a handler are external: they read their hand-offs
// from the bus and report through the engine's API.
//
// Unknown ids produce an *UnknownAgentError that matches ErrUnknownAgent and
// suggests the nearest known id.
package registry
