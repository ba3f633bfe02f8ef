// Package wire is the one codec of the agent protocol: the HANDOFF message
// that carries a piece of work to an agent, the report an agent sends back,
// and the engine's answer to it. Every sender and receiver uses it: the
// engine, the scenario player, the NATS worker and the HTTP agent client.
//
// Work is a registry.Task written into a transport.Message. Content holds what the
// agent needs to do the work:
//
//	action            "run" for work to do, "notice" for a final notice
//	task_description  what to do
//	input             the instance's start input (object)
//	context           the instance context (object)
//	previous_result   the result of the agent that handed over (object)
//	constraints       limits to respect (object)
//	reason            why the work was sent: for an agent-to-agent hand-off
//	                  its kind (rule, plan_step, capability_match, ...), for
//	                  the engine's own dispatches start, retry, resume,
//	                  on_limit or return_control
//	explanation       for a hand-off, why in words, when there are any
//	return_control    true when the result goes back to the delegating agent
//	payload           data a dynamic hand-off carries, when set
//	item, index       for a run over one item of a list
//
// Metadata places it: workflow, version, instance_id, step, attempt, state,
// handoff_id, idempotency_key (instance_id:step), deadline (RFC 3339, when
// the run has a timeout), heartbeat (seconds, when heartbeats are asked)
// and traceparent (W3C).
//
// A Report carries the run's identity (instance_id, step, agent) and
// exactly one of trigger (with result), error, reject and handoff, or
// heartbeat: true. The engine answers each report with an Answer.
//
// The engine calls the codec once each way per hand-off: Report.Ending
// validates a report, checks the data it carries and returns the run's
// outcome; Send writes work and hands it to a transport.
package wire
