package transport

import "context"

// Transport carries work to external agents (agents without a Go handler)
// and takes back what the engine needs to know of its delivery. The engine
// writes work with package wire's codec and reads agents' reports through
// HandleReport; Go handlers do not use the transport (the engine runs them
// on an in-process path of its own with the same guarantees).
//
// The in-memory *bus.Bus implements it, and so does the NATS JetStream
// transport. Every implementation passes transport/transporttest.
type Transport interface {
	// OpenMailbox makes the transport carry work to agent, at most capacity
	// items waiting at once (0: the transport's default). Opening an agent
	// twice keeps its mailbox.
	OpenMailbox(agent string, capacity int) error
	// SendWork queues one message for its To agent, ordered by priority
	// then send order. A full mailbox is an error matching ErrQueueFull
	// (the bus's *QueueFullError) naming the agent, an unknown agent one
	// matching ErrUnknownAgent (the bus's *RoutingError) naming it;
	// either way the message is dead-lettered, never dropped in silence. A
	// message whose idempotency key was already sent is dropped as a
	// duplicate: nil, and it is neither accepted nor delivered. A send the
	// transport cannot complete for now (its server did not answer) is an
	// error matching ErrUnavailable: the engine sends the same message
	// again later, with a growing pause, instead of failing the run; any
	// other error fails the run.
	SendWork(ctx context.Context, m *Message) error
	// TakeWork removes up to max waiting messages of agent (all when max
	// <= 0), highest priority first; an expired message is dead-lettered
	// instead of returned. A message that requires an ack stays in flight
	// until Ack, Nack or Reject, and is redelivered if none comes in time.
	TakeWork(ctx context.Context, agent string, max int) ([]*Message, error)
	// Ack settles a message taken: its agent has it.
	Ack(ctx context.Context, m *Message) error
	// Nack gives a message taken back for redelivery.
	Nack(ctx context.Context, m *Message) error
	// Reject dead-letters a message taken, with the agent's reason.
	Reject(ctx context.Context, m *Message, reason string) error
	// OnDeadLetter calls f for every message the transport dead-letters,
	// until cancel is called.
	OnDeadLetter(f func(DeadLetter)) (cancel func())
	// Metrics returns the transport's accounting: every message accepted
	// ends delivered, dead-lettered or still queued or in flight.
	Metrics() Snapshot
}

// RoomTeller is implemented by a transport that can tell how much room an
// agent's mailbox has (the in-memory bus and natsbus do). When the first
// agent of a workflow is external, Start asks it and refuses a start that
// would find the mailbox full with a *OverloadedError, instead of
// accepting the instance and failing its first run.
type RoomTeller interface {
	// Room returns how many more items agent's mailbox takes now, and its
	// capacity.
	Room(ctx context.Context, agent string) (free, capacity int, err error)
}

// Offerer is implemented by a transport that can offer work to a mailbox
// without dead-lettering it when the mailbox is full (the in-memory bus and
// natsbus do). The engine offers the work it sends again later whatever
// the answer, instead of failing its run: work sent again as an instance
// resumes (its first send may be one of the items that fill the mailbox),
// and the first work of a start whose room check passed. To a transport
// without it the engine sends such work with SendWork, and each refusal
// leaves a dead letter.
type Offerer interface {
	// OfferWork is SendWork, except for a full mailbox: the message is
	// refused with an error matching ErrQueueFull naming the agent,
	// and is neither accepted nor dead-lettered (its idempotency key stays
	// free): the caller keeps it, to send it again.
	OfferWork(ctx context.Context, m *Message) error
}
