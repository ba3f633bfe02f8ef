// Package bus is Baton's built-in message layer: the Message
// envelope that carries every hand-off, one mailbox per registered agent,
// acknowledgements with redelivery, idempotency keys, a dead-letter queue,
// and metrics.
// It is in-memory and safe for concurrent use.
//
// # Messages
//
// A Message must name its sender and receiver, its type, and carry content
// with a string "action". Send validates it and refuses an invalid one with a
// *ValidationError whose text names the field ("bus: content is required");
// such a message is counted but never accepted nor queued. Content and
// metadata together may not exceed 1 MiB of JSON. The bus fills the
// message_id (a UUID v4, unless the sender set one), the conversation_id,
// the timestamp (UTC; on the real clock the wall time is read at most once a
// millisecond and carried forward on the monotonic clock in between) and
// the TTL (1h by default, 24h at most). In JSON the
// timestamp is ISO 8601 in UTC and the TTL a number of seconds, so that a
// message survives a round trip unchanged. From Send on, the message belongs
// to the bus and then to its receiver: the sender must not modify it.
//
// # Delivery order
//
// A mailbox delivers the highest priority first (CRITICAL, HIGH, NORMAL,
// LOW) and, within a priority, in the order the sends reached the mailbox.
// Timestamps do not reorder messages. Receive takes all messages or up to N,
// TryReceive takes one without blocking or allocating, ReceiveWait blocks
// until one arrives or its context ends, and Ready exposes a channel that
// lets one event loop wait on many mailboxes.
//
// # Capacity
//
// A mailbox holds 1000 messages unless registered WithMailboxCapacity, and
// all mailboxes together hold 10 000 (WithCapacity). A send that finds no
// room fails at once with a *QueueFullError naming the agent ("bus:
// PaymentAgent queue full"); sends never block the caller. Sender retries
// (wait 100ms, 500ms, then 2s and try again) are a decorator over any
// transport, feature.Retry, which offers the message at each attempt and
// dead-letters it "max_retries" on the bus (DeadLetterWork) when the
// schedule is spent.
//
// # Time to live
//
// A message expires at its timestamp plus its TTL. The time it has left
// when it is sent is counted down on the monotonic clock (on the real
// clock), so that a step of the wall clock while it waits neither expires
// it nor keeps it longer. Expiry is checked when
// the message would be delivered: an expired message is never delivered, it
// is dead-lettered "ttl_expired", counted and logged. A full mailbox first
// purges its expired messages to make room, PurgeExpired purges every
// mailbox at once, and WithExpirySweep does that periodically on a timer
// the bus owns.
//
// # Dead letters and accounting
//
// Every message the bus accepts ends in exactly one of four places:
// delivered to its receiver, kept in the dead-letter queue with a reason,
// still queued (in a mailbox), or in flight (a requires_ack message received and not
// yet acknowledged). The reasons are receiver_not_found (the receiver is not
// registered, or was unregistered with the message still queued or in
// flight), ttl_expired, queue_overflow (full, no retry), max_retries (still
// full when a sender's retry schedule ran out, or delivered the maximum number of
// times without an acknowledgement) and rejected. A dead letter records when,
// after how many attempts and with which last error it was given up.
// DeadLetters lists them, Requeue sends one again with a fresh timestamp (a
// new acceptance), and Discard drops it; the queue keeps the newest 10 000.
// Metrics returns a consistent Snapshot in which
//
//	Accepted == Delivered + DeadLettered + Queued + InFlight
//
// always holds: nothing is lost silently. A message counts as delivered
// once: when it is received, or, if it requires an acknowledgement, when it
// is acknowledged. Messages refused before acceptance (invalid, a
// duplicate idempotency key) are
// counted apart and never enter the equation.
//
// Dead-letter processing (sending retryable dead letters again with a
// backoff, discarding stale ones with an audit trail, alerting on bursts)
// is a decorator over any transport, feature.DeadLetters, which hears of
// each dead letter through OnDeadLetter.
//
// # Guarantees
//
// At-least-once, for requires_ack messages: such a message stays in flight
// from the moment it is received until Ack. If the receiver does not
// acknowledge it within its ack timeout (30s, WithAckTimeout, or the
// message's AckTimeout), or hands it back with Nack, a copy with the next
// DeliveryCount goes back to the head of its priority in the mailbox; after
// the third delivery (WithMaxDeliveries) it is dead-lettered max_retries
// instead. Reject dead-letters it as rejected and sends its sender an ERROR.
// A late Ack still counts and withdraws a redelivery not yet taken, but a
// receiver may see a message more than once: that is what at-least-once
// means. A redelivered message re-enters its mailbox even when it is full.
//
// Effectively once, with idempotency keys: a message whose IdempotencyKey
// (or metadata "idempotency_key") was accepted within the window (24h,
// WithIdempotency) for the same receiver and message type is acknowledged
// (Send returns nil, WithReceipt reports Duplicate) without being
// delivered again. A message that is dead-lettered, or refused after its key
// was claimed, releases the key, so that a retry goes through. The bus
// deduplicates sends; a receiver that may see a redelivery must make its
// effect idempotent by the same key (the engine does, per hand-off step).
// Keys are bounded (100 000, oldest forgotten first).
//
// At-most-once, for every other message: a message taken from a mailbox is
// the receiver's, and the bus does not redeliver it.
//
// Best-effort: ACKs and rejection notices (sent only to a sender with a
// mailbox). All
// of it is in-process: nothing survives the process.
//
// # Topics, broadcast, requests and conversations
//
// The bus carries point-to-point messages only: a send to "*" or to
// "topic:<name>" finds no mailbox and is dead-lettered
// receiver_not_found. Topics, broadcast, request/reply and conversation
// threads are decorators of package bus/feature (Topics, Broadcaster,
// Requests, Conversations) that a program composes over the bus, or over
// any other transport.
//
// # Flow control
//
// Rate limits, circuit breakers and backpressure signals are not the bus's:
// they are decorators of package bus/feature over any transport
// (feature.NewRateLimiter, feature.NewBreakers, feature.NewPressureGauge),
// so that a bus composed without them pays nothing for them on its send
// path. Room tells how much room a mailbox has, which is what the pressure
// gauge and the breakers read.
//
// # Observability
//
// Metrics counts sends, receipts, expiries, dead letters by reason,
// validation errors, hand-offs, retries, acks, redeliveries,
// nacks, rejects, duplicates and dead-letter processing, reports the depth
// of every mailbox, and summarises latencies (p50, p95, p99) of
// sends, receives, time in mailbox, hand-offs and acks from fixed log-scale
// histograms that cost one atomic add per sample.
// Package busprom exposes the same figures to Prometheus. Sends (debug),
// refusals, expiries and dead letters (warn) are logged
// through the injected zap logger with the fields: category, from, to,
// message_id, type and latency.
package bus
