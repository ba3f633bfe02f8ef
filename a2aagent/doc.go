// Package a2aagent calls an agent that speaks A2A (Agent2Agent): the agent
// behind a workflow's `a2a` key. It is a registry.Handler, so the engine
// runs it like a Go agent, on every transport and store.
//
// The life of a run:
//
//  1. The agent card is read from <url>/.well-known/agent-card.json (then
//     the older /.well-known/agent.json) and kept for five minutes. It
//     names the JSON-RPC interface to call and its protocol version: 1.0
//     (SendMessage, GetTask, CancelTask, SubscribeToTask, with the header
//     A2A-Version: 1.0) or 0.3 (message/send, tasks/get, tasks/cancel,
//     tasks/resubscribe). Both card shapes are read; a card offering both
//     versions is spoken to in 1.0.
//  2. One user message is sent without waiting (1.0 returnImmediately,
//     0.3 blocking false): messageId is the run's idempotency key, so a
//     resend after a crash is the same message; contextId is the instance
//     id; a text part carries the task description (left out when it is
//     empty) and a data part {input, context, previous_result, item,
//     index}. When the instance's last task with this agent was left
//     input-required, the message carries its taskId.
//  3. A Message answer ends the run: trigger completed, its first data
//     part as the result when it is an object, else {text}. A Task answer
//     is followed until it is terminal or input-required: over the
//     agent's event stream when its card says streaming, else by reading
//     it every second, the wait doubling up to ten seconds.
//  4. The settled task gives the outcome: completed → trigger completed,
//     the first data part of its artifacts with their text joined in
//     result.text and result.task_id; input-required → trigger
//     input_required, result {task_id, text, data} of the status
//     message; rejected → registry.Reject; failed → kind agent_failed;
//     canceled → kind cancelled and auth-required → kind auth_required,
//     neither retried. Usage reported in the task's or message's
//     metadata.usage is the run's usage.
//
// Failures: a JSON-RPC error is kind agent_error with its code; HTTP
// 401/403 is kind unauthorized (not retried); no answer, 5xx, 408 and 429
// are kind transport; an answer that does not decode is kind
// invalid_result; a missing or unusable card is kind agent_error (not
// retried). When the run's context ends (the state's timeout, or the
// instance cancelled) while the task is under way, the task is cancelled
// with CancelTask and Handle returns the context's error.
//
// Which task a run continues: when the engine hands an input_required
// result straight back to the same agent, the result's task_id says it
// (and survives a restart of the engine). Otherwise, as when a person
// answers through a wait state, the agent remembers in memory, per
// instance, the task it last left input-required; an engine restarted in
// between starts a new task. EndInstance, called as an instance ends,
// cancels the task it left input-required, so that no task outlives its
// instance.
package a2aagent
