package bus

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/batonhq/baton/transport"
)

// topic is a named channel: its subscribers, in subscription order, and the
// messages it retains for late subscribers, oldest first. Its lock is held
// while a publication is fanned out, so every subscriber sees the topic's
// messages in publish order.
type topic struct {
	mu       sync.Mutex
	subs     []string
	retained []*transport.Message
}

// Subscribe adds agentID to topicName's subscribers and immediately queues
// for it a copy of every message the topic still retains (published within
// the retention window, 1h by default, and not expired), oldest first.
// Subscribing twice is harmless.
func (b *Bus) Subscribe(agentID, topicName string) error {
	if topicName == "" {
		return &transport.ValidationError{Field: "topic", Reason: "is required"}
	}
	mb, err := b.mailboxFor(agentID)
	if err != nil {
		return err
	}
	t := b.topic(topicName)
	start := b.clock.Now()
	defer b.flush() // after the topic's lock is released
	t.mu.Lock()
	defer t.mu.Unlock()
	if slices.Contains(t.subs, agentID) {
		return nil
	}
	t.subs = append(t.subs, agentID)
	b.pruneLocked(t, start)
	for _, m := range t.retained {
		if m.From == agentID || !start.Before(m.ExpiresAt()) {
			continue
		}
		c := b.copyFor(m, agentID, topicName)
		if b.conv != nil {
			b.conv.alias(c.MessageID, m.MessageID)
		}
		if err := b.enqueue(mb, c, start, overflowDeadLetter); err == errGone {
			return &transport.UnknownAgentError{Agent: agentID}
		}
	}
	return nil
}

// Unsubscribe removes agentID from topicName's subscribers. Messages already
// queued for it stay queued. Unsubscribing an agent that is not subscribed
// is harmless.
func (b *Bus) Unsubscribe(agentID, topicName string) error {
	if _, err := b.mailboxFor(agentID); err != nil {
		return err
	}
	b.topicsMu.Lock()
	t := b.topics[topicName]
	b.topicsMu.Unlock()
	if t == nil {
		return nil
	}
	t.mu.Lock()
	t.subs = slices.DeleteFunc(t.subs, func(id string) bool { return id == agentID })
	t.mu.Unlock()
	return nil
}

// Subscribers returns topicName's subscribers in subscription order.
func (b *Bus) Subscribers(topicName string) []string {
	b.topicsMu.Lock()
	t := b.topics[topicName]
	b.topicsMu.Unlock()
	if t == nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.subs)
}

// Publish sends a copy of m to every subscriber of topicName except the
// publisher, and retains m for subscribers that come later. to_agent is set
// to "topic:<name>"; each copy is addressed to its subscriber, has its own
// message_id, and names the topic in metadata["topic"] (see TopicOf). A
// topic is FIFO: publications reach each subscriber in publish order (within
// one priority, since a mailbox delivers higher priorities first).
// Publishing on a topic without subscribers only retains the message.
func (b *Bus) Publish(ctx context.Context, topicName string, m *transport.Message, opts ...SendOption) ([]Delivery, error) {
	start := b.clock.Now()
	if topicName == "" {
		return nil, &transport.ValidationError{Field: "topic", Reason: "is required"}
	}
	if m != nil {
		m.To = transport.TopicPrefix + topicName
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
	out, err := b.publish(ctx, topicName, m, start, sc)
	b.flush()
	return out, err
}

func (b *Bus) publish(ctx context.Context, name string, m *transport.Message, start time.Time, sc sendConfig) ([]Delivery, error) {
	b.fill(m, start)
	t := b.topic(name)
	t.mu.Lock()
	defer t.mu.Unlock()
	b.published.Add(1)
	if b.cfg.topicRetention > 0 {
		t.retained = append(t.retained, m)
		b.pruneLocked(t, start)
	}
	to := make([]*mailbox, 0, len(t.subs))
	for _, id := range t.subs {
		if mb := b.lookup(id); mb != nil && id != m.From {
			to = append(to, mb)
		}
	}
	return b.fanOut(ctx, m, start, sc, to, name)
}

// topic returns the named topic, creating it on first use.
func (b *Bus) topic(name string) *topic {
	b.topicsMu.Lock()
	defer b.topicsMu.Unlock()
	t := b.topics[name]
	if t == nil {
		t = &topic{}
		b.topics[name] = t
	}
	return t
}

// pruneLocked drops retained messages that are outside the retention
// window, expired, or beyond the retention limit.
func (b *Bus) pruneLocked(t *topic, now time.Time) {
	window := b.cfg.topicRetention
	drop := 0
	for _, m := range t.retained {
		if len(t.retained)-drop <= b.cfg.topicRetainMax && now.Sub(m.Timestamp) < window && now.Before(m.ExpiresAt()) {
			break
		}
		drop++
	}
	if window <= 0 {
		drop = len(t.retained)
	}
	if drop > 0 {
		n := copy(t.retained, t.retained[drop:])
		clear(t.retained[n:])
		t.retained = t.retained[:n]
	}
}

// leaveTopics removes agentID from every topic.
func (b *Bus) leaveTopics(agentID string) {
	b.topicsMu.Lock()
	ts := make([]*topic, 0, len(b.topics))
	for _, t := range b.topics {
		ts = append(ts, t)
	}
	b.topicsMu.Unlock()
	for _, t := range ts {
		t.mu.Lock()
		t.subs = slices.DeleteFunc(t.subs, func(id string) bool { return id == agentID })
		t.mu.Unlock()
	}
}
