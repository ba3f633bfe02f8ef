package feature

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"go.uber.org/zap"

	"github.com/batonhq/baton/clock"
	"github.com/batonhq/baton/transport"
)

// Delivery is the outcome of one copy of a broadcast or a publication.
type Delivery struct {
	// To is the receiving agent.
	To string
	// MessageID is the id of the copy sent to To.
	MessageID string
	// Err is nil when the transport took the copy; otherwise its send error.
	Err error
}

// BroadcastSettings configure a Broadcaster.
type BroadcastSettings struct {
	// Logger receives one entry per broadcast; nil keeps zap.NewNop().
	Logger *zap.Logger
}

// BroadcastStats are a Broadcaster's counters.
type BroadcastStats struct {
	// Broadcasts counts Broadcast and BroadcastToTypes calls that reached
	// the fan-out.
	Broadcasts uint64
	// Latency is the time a broadcast takes to send every copy.
	Latency transport.LatencySummary
}

// Broadcaster decorates a transport with broadcast: a message sent to "*"
// (or with Broadcast) goes, as one copy each, to every agent whose mailbox
// was opened through the Broadcaster, except its sender;
// BroadcastToTypes restricts that to agents of some types. The
// Broadcaster keeps the registry of those agents and their types itself:
// an agent whose mailbox another process opened is not among them.
type Broadcaster struct {
	transport.Transport
	clock clock.Clock
	log   *zap.Logger

	mu    sync.Mutex
	types map[string]string // agent -> type ("" when untyped)
	ids   []string          // the agents, sorted

	broadcasts atomic.Uint64
	latency    latency
}

// NewBroadcaster returns inner decorated with broadcast, on clk (nil:
// clock.Real()).
func NewBroadcaster(inner transport.Transport, s BroadcastSettings, clk clock.Clock) *Broadcaster {
	if clk == nil {
		clk = clock.Real()
	}
	if s.Logger == nil {
		s.Logger = zap.NewNop()
	}
	return &Broadcaster{Transport: inner, clock: clk, log: s.Logger, types: make(map[string]string)}
}

// OpenMailbox opens agent's mailbox on the transport and adds the agent to
// the broadcast's recipients, without a type (an agent opened again keeps
// the type it has).
func (b *Broadcaster) OpenMailbox(agent string, capacity int) error {
	if err := b.Transport.OpenMailbox(agent, capacity); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.types[agent]; !ok {
		b.addLocked(agent, "")
	}
	return nil
}

// OpenTypedMailbox is OpenMailbox for an agent of type typ, the type
// BroadcastToTypes selects it by.
func (b *Broadcaster) OpenTypedMailbox(agent, typ string, capacity int) error {
	if err := b.Transport.OpenMailbox(agent, capacity); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.addLocked(agent, typ)
	return nil
}

func (b *Broadcaster) addLocked(agent, typ string) {
	if _, ok := b.types[agent]; !ok {
		i, _ := slices.BinarySearch(b.ids, agent)
		b.ids = slices.Insert(b.ids, i, agent)
	}
	b.types[agent] = typ
}

// SendWork broadcasts a message addressed to "*" (see Broadcast) and
// passes every other one to the transport.
func (b *Broadcaster) SendWork(ctx context.Context, m *transport.Message) error {
	if m != nil && m.To == transport.BroadcastAll {
		_, err := b.Broadcast(ctx, m)
		return err
	}
	return b.Transport.SendWork(ctx, m)
}

// Broadcast sends a copy of m to every recipient except its sender, in
// agent-id order. It sets to_agent to "*" and, when empty, message_type to
// BROADCAST. Every copy is identical except for its to_agent and
// message_id, and shares the conversation_id of m (and its idempotency key,
// which a transport keeps per receiver); its content and metadata maps are copies of the top
// level of m's. It returns one Delivery per recipient and the errors of the
// failed ones joined.
func (b *Broadcaster) Broadcast(ctx context.Context, m *transport.Message) ([]Delivery, error) {
	return b.broadcastTo(ctx, m, func(string) bool { return true })
}

// BroadcastToTypes is Broadcast restricted to the agents opened with one of
// types (OpenTypedMailbox). An empty types is a *transport.ValidationError
// on field "agent_types".
func (b *Broadcaster) BroadcastToTypes(ctx context.Context, types []string, m *transport.Message) ([]Delivery, error) {
	if len(types) == 0 {
		return nil, &transport.ValidationError{Field: "agent_types", Reason: "is required"}
	}
	return b.broadcastTo(ctx, m, func(typ string) bool { return slices.Contains(types, typ) })
}

func (b *Broadcaster) broadcastTo(ctx context.Context, m *transport.Message, keep func(typ string) bool) ([]Delivery, error) {
	start := b.clock.Now()
	if m != nil {
		m.To = transport.BroadcastAll
		if m.Type == "" {
			m.Type = transport.MessageBroadcast
		}
	}
	if err := admit(ctx, m); err != nil {
		return nil, err
	}
	// The thread first: a reply without a conversation_id inherits its
	// parent's before fill gives it one of its own.
	if err := joinBelow(b.Transport, m, start); err != nil {
		return nil, err
	}
	m.Fill(start, uuid.NewString)
	b.mu.Lock()
	to := make([]string, 0, len(b.ids))
	for _, id := range b.ids {
		if id != m.From && keep(b.types[id]) {
			to = append(to, id)
		}
	}
	b.mu.Unlock()
	out, failed := fanOut(ctx, b.Transport, m, to, "")
	d := b.clock.Now().Sub(start)
	b.broadcasts.Add(1)
	b.latency.record(d)
	if ce := b.log.Check(zap.InfoLevel, "broadcast"); ce != nil {
		ce.Write(zap.String("category", "broadcast"), zap.String("from", m.From), zap.String("message_id", m.MessageID),
			zap.Int("recipients", len(out)), zap.Int("failed", failed), zap.Duration("latency", d))
	}
	return out, joinDeliveries(out)
}

// Stats returns the Broadcaster's counters.
func (b *Broadcaster) Stats() BroadcastStats {
	return BroadcastStats{Broadcasts: b.broadcasts.Load(), Latency: b.latency.summary()}
}

// Close does nothing (a Broadcaster starts no goroutine) and returns nil:
// closing the transport is its owner's business.
func (b *Broadcaster) Close() error { return nil }

// join and alias pass the conversation hooks on to the transport below.
func (b *Broadcaster) join(m *transport.Message, now time.Time) error {
	return joinBelow(b.Transport, m, now)
}
func (b *Broadcaster) alias(copyID, templateID string) { aliasBelow(b.Transport, copyID, templateID) }

// admit refuses what no routing decorator sends: a nil ctx, a done one, an
// invalid message.
func admit(ctx context.Context, m *transport.Message) error {
	if ctx == nil {
		return &transport.ValidationError{Field: "ctx", Reason: "is required"}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return m.Validate()
}

// fanOut sends a copy of tmpl to each agent of to through inner and
// returns the deliveries and how many failed. topic is the topic name of a
// publication, "" for a broadcast.
func fanOut(ctx context.Context, inner transport.Transport, tmpl *transport.Message, to []string, topic string) ([]Delivery, int) {
	out := make([]Delivery, len(to))
	failed := 0
	for i, agent := range to {
		c := copyFor(tmpl, agent, topic)
		aliasBelow(inner, c.MessageID, tmpl.MessageID)
		err := inner.SendWork(ctx, c)
		out[i] = Delivery{To: agent, MessageID: c.MessageID, Err: err}
		if err != nil {
			failed++
		}
	}
	return out, failed
}

// copyFor returns the copy of tmpl addressed to agent, with its own id.
func copyFor(tmpl *transport.Message, agent, topic string) *transport.Message {
	c := tmpl.Clone()
	c.MessageID = uuid.NewString()
	c.To = agent
	if topic != "" {
		if c.Metadata == nil {
			c.Metadata = make(map[string]any, 1)
		}
		c.Metadata[transport.MetadataTopic] = topic
	}
	return c
}

func joinDeliveries(out []Delivery) error {
	var errs []error
	for _, d := range out {
		if d.Err != nil {
			errs = append(errs, d.Err)
		}
	}
	return errors.Join(errs...)
}

var _ transport.Transport = (*Broadcaster)(nil)
