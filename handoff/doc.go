// Package handoff describes the moves of work from one agent to another:
// the hand-off command, its validation, and its record.
//
// The engine owns the hand-offs of its instances. A hand-off's id is the
// idempotency key of the step its target runs ("instanceID:step"); its
// record is a line of the instance's history; it travels to the target as
// work written by package wire. This package holds what is the same for
// every hand-off wherever it runs:
//
// Command. Someone asks for a hand-off with a Command: the engine when a
// workflow rule fires (reason "rule"), an agent that delegates part of its
// work (an Outcome's registry.Delegation, converted with FromDelegation;
// reasons "capability_match", "clarification", "plan_step"), or a user who
// selects another agent (reason "user_request"). The command names the
// agent handing off and the target, says why, and carries the task
// description, the instance context, the previous agent's result, the
// constraints to respect, an optional payload, whether control returns to
// the sender, a priority rank (1 critical ... 10 low), and the workflow,
// instance and step it belongs to. NewCommand checks the fields a command
// cannot do without; IsCommand recognises command objects, including the
// map an agent in another language sends ({"type": "handoff", "to": ...}).
//
// Validation. The Validator applies the hand-off checks in order: the
// target exists (with a "did you mean"); a user selection targets a
// selectable agent; nobody hands off to itself; system agents take
// hand-offs only from the supervisor; of the instance's last
// handoff_window hand-offs, fewer than handoff_repeats went to the target
// already (loop detection); a capability_match target has the capability;
// a task description is given; the priority is on the scale. A rule's
// hand-off was checked when its workflow loaded, so only the target, task
// and priority checks run for it. A refusal is a *RefusalError naming the
// check, the agents and the reason.
//
// Record. A Record says what a hand-off asked for and how it ended:
// pending until its target's run ends, then accepted, or rejected with the
// target's reason (failed when it could not be sent). Tally counts a list
// of records: total, pending, accepted, rejected, failed, and hand-offs
// sent and received per agent. JSONSize measures a context's JSON size
// without encoding it.
package handoff
