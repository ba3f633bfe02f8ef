package transport

// Snapshot is a consistent reading of the bus's metrics.
// Counters are cumulative since New. The accounting invariant
// holds in every snapshot:
//
//	Accepted == Delivered + DeadLettered + Queued + InFlight
//
// where Queued counts the messages waiting in mailboxes, and InFlight the
// requires_ack messages received but not yet acknowledged. A
// message is counted delivered once: when it is received, or, for a
// requires_ack message, when it is acknowledged. Redelivery moves it from
// InFlight back to Queued; Nack too; Reject and the last failed delivery
// move it to DeadLettered.
type Snapshot struct {
	// Accepted counts messages the bus took responsibility for: valid,
	// addressed copies, whether they were then queued, delivered or
	// dead-lettered. It is the messages_sent_count.
	Accepted uint64
	// Delivered counts messages handed to a receiver (messages_received_count).
	Delivered uint64
	// DeadLettered counts messages moved to the dead-letter queue, including
	// those later discarded or requeued.
	DeadLettered uint64
	// Queued is the number of accepted messages waiting to be received in a
	// mailbox.
	Queued int
	// InFlight is the number of requires_ack messages received and not yet
	// acknowledged, rejected or redelivered.
	InFlight int
	// Expired counts messages whose TTL ran out before delivery.
	Expired uint64
	// DeadLettersByReason splits DeadLettered by reason.
	DeadLettersByReason map[DeadLetterReason]uint64
	// DeadLettersHeld is the current length of the dead-letter queue.
	DeadLettersHeld int
	// ValidationErrors counts messages refused as invalid.
	ValidationErrors uint64
	// Handoffs counts HANDOFF messages queued.
	Handoffs uint64
	// Requeued and Discarded count dead-letter operations.
	Requeued, Discarded uint64
	// Acks counts acknowledgements sent with Ack.
	Acks uint64
	// Redeliveries counts requires_ack messages delivered again after an
	// ack timeout or a Nack; Nacks and Rejects count those calls.
	Redeliveries, Nacks, Rejects uint64
	// Duplicates counts sends acknowledged without delivery because their
	// idempotency key was already accepted.
	Duplicates uint64
	// IdempotencyKeys is the number of idempotency keys remembered now.
	IdempotencyKeys int
	// Agents has one entry per registered agent, sorted by id.
	Agents []AgentStats
	// Send is the time from entering a send to the message being queued.
	Send LatencySummary
	// Receive is the time a receive call takes.
	Receive LatencySummary
	// Wait is the time delivered messages spent in their mailbox.
	Wait LatencySummary
	// Handoff is Wait for HANDOFF messages: from send to receipt.
	Handoff LatencySummary
	// Ack is the time from a message's timestamp to its acknowledgement.
	Ack LatencySummary
}

// AgentStats are one mailbox's figures.
type AgentStats struct {
	// Agent and Type identify the mailbox's owner.
	Agent, Type string
	// Depth is the number of messages queued; Capacity its limit.
	Depth, Capacity int
	// AwaitingAck counts received requires_ack messages in flight: neither
	// acknowledged nor redelivered yet.
	AwaitingAck int
	// Accepted, Delivered and DeadLettered are the mailbox's counters.
	Accepted, Delivered, DeadLettered uint64
}

// Balanced reports whether the accounting invariant holds.
func (s Snapshot) Balanced() bool {
	return s.Queued >= 0 && s.InFlight >= 0 &&
		s.Accepted == s.Delivered+s.DeadLettered+uint64(s.Queued)+uint64(s.InFlight)
}

// DropRate is the share of accepted messages that were dead-lettered, zero when nothing was accepted.
func (s Snapshot) DropRate() float64 {
	if s.Accepted == 0 {
		return 0
	}
	return float64(s.DeadLettered) / float64(s.Accepted)
}
