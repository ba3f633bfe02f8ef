// Package handoff moves work from one agent to another: hand-off commands,
// their validation, the HANDOFF messages that carry them over the bus, the
// pending hand-offs and their time-outs, the history of every instance and
// the statistics.
//
// # The life of a hand-off
//
// 1. Command. Someone asks for a hand-off with a Command: the engine when a
// workflow rule fires (reason "rule"), an agent that delegates part of its
// work (an Outcome's registry.Delegation, converted with FromDelegation;
// reasons "capability_match", "clarification", "plan_step"), a user who
// selects another agent (Manager.SelectAgent, reason "user_request") or the
// manager itself when a hand-off times out ("error_recovery"). The command
// names the agent handing off and the target, says why, and carries the
// task description, the instance context, the previous agent's result, the
// constraints to respect, an optional payload, whether control returns to
// the sender, a priority rank (1 critical ... 10 low), the workflow, instance
// and step it belongs to, and the step's idempotency key
// ("instanceID:step"). NewCommand checks the fields a command cannot do
// without; IsCommand recognises command objects, including the map an agent
// in another language sends ({"type": "handoff", "to": ...}).
//
// 2. Validation. Manager.Handoff first asks the Validator, which applies
// PRD-040's rules in order: the target exists (with a "did you mean"); a
// user selection targets a selectable agent; nobody hands off to itself;
// system agents take hand-offs only from the supervisor; of the instance's
// last handoff_window hand-offs, fewer than handoff_repeats went to the
// target already (loop detection); a capability_match target has the
// capability; a task description is given; the priority is on the scale.
// A rule's hand-off was checked when its workflow loaded, so only the
// target, task and priority checks run for it. A refusal is a *RefusalError
// naming the check, the agents and the reason; nothing is sent or recorded,
// and the refusal is counted.
//
// 3. Message. An accepted command becomes a HANDOFF bus.Message from the
// sender to the target at the priority its rank maps to
// (bus.PriorityFromRank). Its content holds what the target needs to do the
// work: action "handoff", task_description, context, previous_result and
// constraints (always present, empty objects when unset, as RT-011
// requires), reason, explanation, and return_control and payload when set.
// Its metadata holds the identifiers that place it: handoff_id, workflow_id,
// instance_id, step and idempotency_key. The maps travel by reference: once
// a command is handed over, neither side may modify them. The target reads
// the message back with Unpack, which gives the registry.Task its handler
// runs. A message the bus refuses leaves a record with status failed and a
// *bus.HandoffError.
//
// 4. Pending. A sent hand-off is recorded as pending in its instance's
// history and logged with RF-009's fields (category "handoff", from_agent,
// to_agent, workflow_id, step_number, task_description, context_size_kb,
// plus the ids, reason, explanation, priority and constraints), and its
// acceptance time-out starts (30s by default, on the injected clock).
//
// 5. Settlement. The target takes the hand-off with Manager.Accept, or
// refuses it with Manager.Reject: the sender then receives an ERROR message
// (action "handoff_rejected", threaded to the HANDOFF by correlation_id and
// in_reply_to) with the reason. When nobody settles it in time, the
// hand-off times out and is escalated: a new hand-off with reason
// "error_recovery" goes to the escalation agent (WithEscalation), carrying
// the original context, result, constraints and a payload naming the
// hand-off that timed out. An escalation that times out is not escalated
// again, and without an escalation agent the sender receives an ERROR
// (action "handoff_timed_out") instead.
//
// 6. Record. Whatever happened stays in the Record: id, agents, reason,
// explanation, task, payload, workflow, instance, step, idempotency key,
// context size in bytes, message id, status (pending, accepted, rejected,
// timed_out, failed), the reason of a rejection or time-out, the link
// between a hand-off and its escalation, and when it was made and settled.
// Manager.History lists an instance's records oldest first,
// Manager.Pending the ones still waiting, and Manager.Stats the counts:
// total, pending, accepted, rejected, timed out, escalated, refused, failed,
// and hand-offs sent and received per agent. Manager.Forget drops the
// history of a finished instance.
//
// A Manager is safe for concurrent use. Its only goroutines are its
// time-out callbacks; Close stops every timer and waits for callbacks
// already running, and is safe to call twice.
package handoff
