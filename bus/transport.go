package bus

import (
	"context"

	"github.com/batonhq/baton/transport"
)

// These methods give the bus the shape of a work transport: the engine
// reaches the message layer only through them (its Transport interface),
// so that another transport (NATS JetStream) can take the bus's place.

// OpenMailbox registers agentID with a mailbox of capacity messages (0: the
// bus's default); an agent already registered keeps its mailbox.
func (b *Bus) OpenMailbox(agentID string, capacity int) error {
	var opts []MailboxOption
	if capacity > 0 {
		opts = append(opts, WithMailboxCapacity(capacity))
	}
	err := b.Register(agentID, opts...)
	if _, dup := err.(*DuplicateAgentError); dup {
		return nil
	}
	return err
}

// SendWork sends one message with the bus's defaults.
func (b *Bus) SendWork(ctx context.Context, m *transport.Message) error { return b.Send(ctx, m) }

// OfferWork is SendWork, except for a full mailbox (or bus): the message
// is refused with a *QueueFullError naming the agent, and is neither
// accepted nor dead-lettered; its idempotency key stays free, so that the
// sender can send it again later.
func (b *Bus) OfferWork(ctx context.Context, m *transport.Message) error {
	start := b.now()
	if err := b.admit(ctx, m); err != nil {
		return err
	}
	sc := sendConfig{offer: true}
	err := b.sendOne(m, start, &sc)
	b.flush()
	return err
}

// TakeWork removes and returns up to max messages from agentID's mailbox,
// highest priority first (Receive with a context).
func (b *Bus) TakeWork(ctx context.Context, agentID string, max int) ([]*transport.Message, error) {
	if ctx == nil {
		return nil, &transport.ValidationError{Field: "ctx", Reason: "is nil"}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return b.Receive(agentID, max)
}

// Room returns how many more messages agentID's mailbox takes now, and its
// capacity.
func (b *Bus) Room(ctx context.Context, agentID string) (free, capacity int, err error) {
	if ctx == nil {
		return 0, 0, &transport.ValidationError{Field: "ctx", Reason: "is nil"}
	}
	mb, err := b.mailboxFor(agentID)
	if err != nil {
		return 0, 0, err
	}
	mb.mu.Lock()
	depth := mb.c.depth
	mb.mu.Unlock()
	return max(mb.capacity-depth, 0), mb.capacity, nil
}

var (
	_ transport.Transport    = (*Bus)(nil)
	_ transport.RoomTeller   = (*Bus)(nil)
	_ transport.Offerer      = (*Bus)(nil)
	_ transport.DeadLetterer = (*Bus)(nil)
)
