// Package bus is Baton's built-in message layer (SPEC §4): the Message
// envelope that carries every hand-off, one mailbox per registered agent,
// broadcast, topics, request/response correlation, acknowledgements, retries
// on full mailboxes, a dead-letter queue, and metrics. It is in-memory and
// safe for concurrent use; it depends on nothing but zap and the clock.
//
// # Messages
//
// A Message must name its sender and receiver, its type, and carry content
// with a string "action". Send validates it and refuses an invalid one with a
// *ValidationError whose text names the field ("bus: content is required");
// such a message is counted but never accepted nor queued. Content and
// metadata together may not exceed 1 MiB of JSON. The bus fills the
// message_id (a UUID v4, unless the sender set one), the conversation_id,
// the timestamp (UTC) and the TTL (1h by default, 24h at most). In JSON the
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
// lets one event loop wait on many mailboxes. Each topic is FIFO: its
// publications reach every subscriber in publish order (within a priority).
//
// # Capacity
//
// A mailbox holds 1000 messages unless registered WithMailboxCapacity, and
// all mailboxes together hold 10 000 (WithCapacity). A send that finds no
// room fails at once with a *QueueFullError naming the agent ("bus:
// PaymentAgent queue full"); sends never block the caller. A send made
// WithRetry instead blocks its caller, waits 100ms, 500ms, then 2s on the
// bus clock (WithRetrySchedule changes the waits) and tries again after
// each wait; it returns nil as soon as the message fits, or the
// *QueueFullError once the schedule is spent. SendAll, Broadcast and
// Publish retry all their waiting copies together, so a batch waits as long
// as its slowest message, not the sum. Close, or the end of the context,
// stops a retrying send early.
//
// # Time to live
//
// A message expires at its timestamp plus its TTL. Expiry is checked when
// the message would be delivered: an expired message is never delivered, it
// is dead-lettered "ttl_expired", counted and logged. A full mailbox first
// purges its expired messages to make room, PurgeExpired purges every
// mailbox at once, and WithExpirySweep does that periodically on a timer
// the bus owns.
//
// # Dead letters and accounting
//
// Every message the bus accepts ends in exactly one of three places:
// delivered to its receiver, kept in the dead-letter queue with a reason,
// or still queued (in a mailbox, or waiting for a retry). The reasons are
// receiver_not_found (the receiver is not registered, or was unregistered
// with the message still queued), ttl_expired, queue_overflow (full, no
// retry), max_retries (still full when the retry schedule ran out) and
// rejected. A dead letter records when, after how many attempts and with
// which last error it was given up. DeadLetters lists them, Requeue sends
// one again with a fresh timestamp (a new acceptance), and Discard drops it;
// the queue keeps the newest 10 000. Metrics returns a consistent Snapshot
// in which Accepted == Delivered + DeadLettered + Queued always holds:
// nothing is lost silently.
//
// # Guarantees
//
// Delivery is in-process and at-most-once: a message taken from a mailbox
// is the receiver's, and the bus does not redeliver it. A requires_ack
// message stays "awaiting ack" until the receiver calls Ack, which sends the
// sender an ACK correlated to it; redelivery of unacknowledged messages is
// not implemented yet. Request waits for the RESPONSE or ERROR whose
// in_reply_to is the request's id, up to a timeout (30s by default); Reply
// builds such a response.
//
// # Observability
//
// Metrics counts sends, receipts, expiries, dead letters by reason,
// validation errors, broadcasts, hand-offs, retries and acks, reports the
// depth of every mailbox, and summarises latencies (p50, p95, p99) of
// sends, receives, time in mailbox, hand-offs, round trips, broadcasts and
// acks from fixed log-scale histograms that cost one atomic add per sample.
// Package busprom exposes the same figures to Prometheus. Sends (debug),
// broadcasts (info), refusals, expiries and dead letters (warn) are logged
// through the injected zap logger with RT-012's fields: category, from, to,
// message_id, type and latency.
package bus
