// Package transporttest is the conformance suite every engine.Transport
// must pass: the in-memory *bus.Bus does, and so must the NATS JetStream
// transport. A transport's own tests call [Run] with a function that
// returns a [Harness]: a fresh, empty transport, a way to make its time
// pass, and its ack wait and maximum deliveries.
//
// The suite sends realistic work, the HANDOFF messages wire.Encode writes
// (requires_ack, with metadata idempotency_key "<instance_id>:<step>"),
// and checks the contract the engine relies on:
//
//   - OpenMailbox may be called again for an agent: its mailbox and what
//     waits in it are kept.
//   - SendWork to an agent never opened returns an error matching
//     transport.ErrUnknownAgent whose text names the agent, and the message is
//     dead-lettered transport.ReasonReceiverNotFound; TakeWork of such an agent
//     is an error matching transport.ErrUnknownAgent.
//   - SendWork of a message that breaks format returns an error
//     matching transport.ErrValidation whose text names the field
//     ("content.action"); the message is counted in
//     Snapshot.ValidationErrors, neither accepted nor dead-lettered.
//   - TakeWork hands out the highest priority first and, within a
//     priority, in send order, never more than max messages, each with the
//     priority and content it was sent with (wire.Decode reads it back).
//   - A mailbox opened with capacity N holds N messages; the next SendWork
//     returns an error matching transport.ErrQueueFull whose text names the
//     agent, and the message is dead-lettered transport.ReasonQueueOverflow;
//     taking a message makes room again.
//   - A refused send does not keep its idempotency key: the same work sent
//     again (a sender's retry) once there is room, or once the agent is
//     open, is delivered.
//   - A taken message is in flight until Ack, Nack or Reject. Acked, it is
//     delivered and never handed out again. Nacked, it is handed out again
//     with the same message_id and idempotency key. Left alone, it comes
//     back after the ack wait and not before; once handed out
//     MaxDeliveries times, it is dead-lettered transport.ReasonMaxRetries with
//     Attempts == MaxDeliveries. DeliveryCount, when the transport sets
//     it (not zero), is 1 on the first delivery and grows by one on each.
//   - Reject dead-letters the message transport.ReasonRejected with the agent's
//     reason as LastError; it is never handed out again.
//   - A message whose idempotency key was already sent to the same agent
//     is dropped: SendWork returns nil, it is not accepted and never
//     delivered, also when the first was already acked.
//   - A message whose TTL ran out before it was taken, or before it could
//     be handed out again, is never handed out: it is dead-lettered
//     transport.ReasonTTLExpired and counted in Snapshot.Expired, while live
//     messages behind it are delivered.
//   - Metrics add up in every snapshot, as transport.Snapshot documents:
//     Accepted == Delivered + DeadLettered + Queued + InFlight, where a
//     refused send (unknown agent, full mailbox) is accepted and
//     dead-lettered, a duplicate is not accepted, a message counts as
//     delivered when it is acked and as in flight from its taking until
//     then, and a message waiting for redelivery is queued. After a mixed
//     workload each figure is what the workload makes it,
//     DeadLettersByReason adds up to DeadLettered, and OnDeadLetter has
//     reported exactly DeadLettered letters with the same reasons.
//   - Several goroutines sending, taking, acking and nacking at once on
//     small mailboxes lose and duplicate nothing: each message ends acked
//     once or refused and dead-lettered once, and every snapshot taken
//     meanwhile adds up (run the suite with -race).
//   - OnDeadLetter calls every subscriber for every dead letter; its
//     cancel, safe to call twice, stops calls to that subscriber only.
//
// The suite never sleeps to make time pass: it calls Harness.Advance and
// then polls, for up to Harness.Patience, for what must happen, and watches
// for Harness.Quiet for what must not. A transport on a simulated clock
// (the bus with clock.Manual) runs the whole suite in milliseconds; one on
// the wall clock (NATS) makes Advance sleep and sets AckWait short, a
// second or two. The suite's short TTL is one second and it advances two.
//
// Each subtest opens its own transport and runs in parallel with the
// others. The mutants in this package's tests, each the bus broken in one
// way, prove that every check can fail.
package transporttest
