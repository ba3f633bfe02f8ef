// Package handoff describes the moves of work from one agent to another:
// the hand-off command, its validation, and its record.
//
// The engine owns the hand-offs of its instances. A hand-off's id is the
// idempotency key of the step its target runs ("instanceID:step"); its
// record is a line of the instance's history; it travels to the target as
// work written by package wire. This package holds what is the same for
// every hand-off wherever it runs:
//
// Command. A Command is a hand-off as the Validator checks it: the agent
// handing off and the target, the reason (a workflow rule fired: "rule"; an
// agent delegated part of its work: "capability_match", "clarification",
// "plan_step"; a user selected another agent: "user_request"), the task
// description, an optional payload and a priority rank (1 critical ... 10
// low). The engine builds one for each dynamic hand-off and user selection.
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
// target's reason (failed when it could not be sent). The engine reads them
// from an instance's history.
package handoff
