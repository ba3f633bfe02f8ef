package bus

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/batonhq/baton/transport"
	"go.uber.org/zap"
)

// Delivery is the outcome of one copy of a broadcast or a publication.
type Delivery struct {
	// To is the receiving agent.
	To string
	// MessageID is the id of the copy sent to To.
	MessageID string
	// Err is nil when the copy was queued; otherwise the send error.
	Err error
}

// Broadcast sends a copy of m to every registered agent except its sender, in agent-id order. It sets to_agent to "*" and, when
// empty, message_type to BROADCAST. Every copy is identical except for its
// to_agent and message_id, and shares the conversation_id of m; its content
// and metadata maps are copies of the top level of m's. It returns one
// Delivery per recipient and the errors of the failed ones joined.
func (b *Bus) Broadcast(ctx context.Context, m *transport.Message, opts ...SendOption) ([]Delivery, error) {
	return b.broadcastTo(ctx, m, opts, b.recipientsExcept)
}

// BroadcastToTypes is Broadcast restricted to the agents registered with
// one of types (WithAgentType). An empty types is a
// *ValidationError on field "agent_types".
func (b *Bus) BroadcastToTypes(ctx context.Context, types []string, m *transport.Message, opts ...SendOption) ([]Delivery, error) {
	if len(types) == 0 {
		return nil, &transport.ValidationError{Field: "agent_types", Reason: "is required"}
	}
	return b.broadcastTo(ctx, m, opts, func(from string) []*mailbox {
		return b.recipients(func(mb *mailbox) bool {
			return mb.id != from && slices.Contains(types, mb.agentType)
		})
	})
}

func (b *Bus) broadcastTo(ctx context.Context, m *transport.Message, opts []SendOption, pick func(from string) []*mailbox) ([]Delivery, error) {
	start := b.clock.Now()
	if m != nil {
		m.To = transport.BroadcastAll
		if m.Type == "" {
			m.Type = transport.MessageBroadcast
		}
	}
	if err := b.admit(ctx, m); err != nil {
		return nil, err
	}
	var sc sendConfig
	if len(opts) > 0 {
		sc = b.sendOptions(opts)
	}
	if dup, err := b.accept(m, start, &sc); dup || err != nil {
		return nil, err
	}
	out, err := b.fanOut(ctx, m, start, sc, pick(m.From), "")
	b.flush()
	return out, err
}

// recipientsExcept returns every mailbox but from's, in id order.
func (b *Bus) recipientsExcept(from string) []*mailbox {
	return b.recipients(func(mb *mailbox) bool { return mb.id != from })
}

func (b *Bus) recipients(keep func(*mailbox) bool) []*mailbox {
	dir := b.dir.Load()
	out := make([]*mailbox, 0, len(dir.ids))
	for _, id := range dir.ids {
		if mb := dir.byID[id]; keep(mb) {
			out = append(out, mb)
		}
	}
	return out
}

// fanOut queues a copy of tmpl for each mailbox of to. topic is the topic
// name for a publication, "" for a broadcast.
func (b *Bus) fanOut(ctx context.Context, tmpl *transport.Message, start time.Time, sc sendConfig, to []*mailbox, topic string) ([]Delivery, error) {
	b.fill(tmpl, start)
	out := make([]Delivery, len(to))
	for i, mb := range to {
		c := b.copyFor(tmpl, mb.id, topic)
		out[i] = Delivery{To: mb.id, MessageID: c.MessageID}
		if b.conv != nil {
			b.conv.alias(c.MessageID, tmpl.MessageID)
		}
		if err := mb.checkContent(c); err != nil {
			b.refuse(c, err)
			out[i].Err = err
			continue
		}
		err := b.enqueue(mb, c, start, overflowDeadLetter, nil)
		if err == errGone {
			err = b.unroutable(c, start)
		}
		out[i].Err = err
	}
	errs := make([]error, 0, len(out))
	for _, d := range out {
		if d.Err != nil {
			errs = append(errs, d.Err)
		}
	}
	d := b.clock.Now().Sub(start)
	category := "broadcast"
	if topic != "" {
		category = "publish"
	} else {
		b.broadcasts.Add(1)
		b.broadcastLatency.record(d)
	}
	if ce := b.log.Check(zap.InfoLevel, category); ce != nil {
		ce.Write(zap.String("category", category), messageFields(tmpl), zap.String("topic", topic),
			zap.Int("recipients", len(out)), zap.Int("failed", len(errs)), zap.Duration("latency", d))
	}
	return out, errors.Join(errs...)
}

// copyFor returns the copy of tmpl addressed to agent, with its own id.
func (b *Bus) copyFor(tmpl *transport.Message, agent, topic string) *transport.Message {
	c := tmpl.Clone()
	c.MessageID = b.cfg.ids()
	c.To = agent
	if topic != "" {
		if c.Metadata == nil {
			c.Metadata = make(map[string]any, 1)
		}
		c.Metadata[transport.MetadataTopic] = topic
	}
	return c
}
