package feature

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/batonhq/baton/clock"
	"github.com/batonhq/baton/transport"
	"github.com/google/uuid"
)

// Defaults of TopicSettings.
const (
	// DefaultTopicRetention is how long a topic keeps its messages for late
	// subscribers.
	DefaultTopicRetention = time.Hour
	// DefaultTopicRetainMax bounds the number of messages a topic retains.
	DefaultTopicRetainMax = 1000
)

// TopicSettings configure Topics. Zero fields take the defaults.
type TopicSettings struct {
	// Retention is how long a topic keeps a publication to replay it to
	// later subscribers (DefaultTopicRetention); a negative Retention keeps
	// none.
	Retention time.Duration
	// RetainMax bounds the publications a topic keeps
	// (DefaultTopicRetainMax); the oldest go first.
	RetainMax int
	// Logger receives one entry per publication; nil keeps zap.NewNop().
	Logger *zap.Logger
}

// TopicStats are the counters of Topics.
type TopicStats struct {
	// Published counts publications on topics.
	Published uint64
}

// Topics decorates a transport with named topics: Publish (or a send to
// "topic:<name>") sends a copy to each subscriber of the topic except the
// publisher, and keeps the publication for subscribers that come later.
// Only agents whose mailbox was opened through Topics may subscribe.
type Topics struct {
	transport.Transport
	clock clock.Clock
	log   *zap.Logger
	set   TopicSettings

	mu     sync.Mutex
	agents map[string]bool
	topics map[string]*topic

	published atomic.Uint64
}

// topic is a named channel: its subscribers, in subscription order, and the
// messages it retains for late subscribers, oldest first. Its lock is held
// while a publication is fanned out, so every subscriber sees the topic's
// messages in publish order.
type topic struct {
	mu       sync.Mutex
	subs     []string
	retained []*transport.Message
}

// NewTopics returns inner decorated with topics, on clk (nil:
// clock.Real()).
func NewTopics(inner transport.Transport, s TopicSettings, clk clock.Clock) *Topics {
	if clk == nil {
		clk = clock.Real()
	}
	if s.Retention == 0 {
		s.Retention = DefaultTopicRetention
	}
	if s.RetainMax <= 0 {
		s.RetainMax = DefaultTopicRetainMax
	}
	if s.Logger == nil {
		s.Logger = zap.NewNop()
	}
	return &Topics{Transport: inner, clock: clk, log: s.Logger, set: s,
		agents: make(map[string]bool), topics: make(map[string]*topic)}
}

// OpenMailbox opens agent's mailbox on the transport and lets the agent
// subscribe.
func (t *Topics) OpenMailbox(agent string, capacity int) error {
	if err := t.Transport.OpenMailbox(agent, capacity); err != nil {
		return err
	}
	t.mu.Lock()
	t.agents[agent] = true
	t.mu.Unlock()
	return nil
}

// SendWork publishes a message addressed to "topic:<name>" (see Publish)
// and passes every other one to the transport.
func (t *Topics) SendWork(ctx context.Context, m *transport.Message) error {
	if m != nil {
		if name, ok := m.Topic(); ok {
			_, err := t.Publish(ctx, name, m)
			return err
		}
	}
	return t.Transport.SendWork(ctx, m)
}

// Subscribe adds agent to topicName's subscribers and at once sends it a
// copy of every publication the topic still retains (published within the
// retention window and not expired), oldest first. Subscribing twice is
// harmless. An agent not opened through Topics is a
// *transport.UnknownAgentError.
func (t *Topics) Subscribe(agent, topicName string) error {
	if topicName == "" {
		return &transport.ValidationError{Field: "topic", Reason: "is required"}
	}
	if err := t.known(agent); err != nil {
		return err
	}
	tp := t.topic(topicName)
	now := t.clock.Now()
	tp.mu.Lock()
	defer tp.mu.Unlock()
	if slices.Contains(tp.subs, agent) {
		return nil
	}
	tp.subs = append(tp.subs, agent)
	t.pruneLocked(tp, now)
	for _, m := range tp.retained {
		if m.From == agent || !now.Before(m.ExpiresAt()) {
			continue
		}
		c := copyFor(m, agent, topicName)
		aliasBelow(t.Transport, c.MessageID, m.MessageID)
		// A replay the transport refuses (a full mailbox) is
		// dead-lettered by it; the subscription stands.
		if err := t.Transport.SendWork(context.Background(), c); isUnknownAgent(err) {
			return err
		}
	}
	return nil
}

// Unsubscribe removes agent from topicName's subscribers. Messages already
// sent to it stay in its mailbox. Unsubscribing an agent that is not
// subscribed is harmless.
func (t *Topics) Unsubscribe(agent, topicName string) error {
	if err := t.known(agent); err != nil {
		return err
	}
	t.mu.Lock()
	tp := t.topics[topicName]
	t.mu.Unlock()
	if tp == nil {
		return nil
	}
	tp.mu.Lock()
	tp.subs = slices.DeleteFunc(tp.subs, func(id string) bool { return id == agent })
	tp.mu.Unlock()
	return nil
}

// Subscribers returns topicName's subscribers in subscription order.
func (t *Topics) Subscribers(topicName string) []string {
	t.mu.Lock()
	tp := t.topics[topicName]
	t.mu.Unlock()
	if tp == nil {
		return nil
	}
	tp.mu.Lock()
	defer tp.mu.Unlock()
	return slices.Clone(tp.subs)
}

// Publish sends a copy of m to every subscriber of topicName except the
// publisher, and retains m for subscribers that come later. to_agent is set
// to "topic:<name>"; each copy is addressed to its subscriber, has its own
// message_id, and names the topic in metadata["topic"] (see
// transport.Message.TopicOf). A topic is FIFO: publications reach each
// subscriber in publish order (within one priority, since a mailbox
// delivers higher priorities first). Publishing on a topic without
// subscribers only retains the message.
func (t *Topics) Publish(ctx context.Context, topicName string, m *transport.Message) ([]Delivery, error) {
	start := t.clock.Now()
	if topicName == "" {
		return nil, &transport.ValidationError{Field: "topic", Reason: "is required"}
	}
	if m != nil {
		m.To = transport.TopicPrefix + topicName
	}
	if err := admit(ctx, m); err != nil {
		return nil, err
	}
	// The thread first: a reply without a conversation_id inherits its
	// parent's before fill gives it one of its own.
	if err := joinBelow(t.Transport, m, start); err != nil {
		return nil, err
	}
	m.Fill(start, uuid.NewString)
	tp := t.topic(topicName)
	tp.mu.Lock()
	defer tp.mu.Unlock()
	t.published.Add(1)
	if t.set.Retention > 0 {
		tp.retained = append(tp.retained, m)
		t.pruneLocked(tp, start)
	}
	to := make([]string, 0, len(tp.subs))
	for _, id := range tp.subs {
		if id != m.From {
			to = append(to, id)
		}
	}
	out, failed := fanOut(ctx, t.Transport, m, to, topicName)
	if ce := t.log.Check(zap.InfoLevel, "publish"); ce != nil {
		ce.Write(zap.String("category", "publish"), zap.String("from", m.From), zap.String("message_id", m.MessageID),
			zap.String("topic", topicName), zap.Int("recipients", len(out)), zap.Int("failed", failed),
			zap.Duration("latency", t.clock.Now().Sub(start)))
	}
	return out, joinDeliveries(out)
}

// Stats returns the counters of Topics.
func (t *Topics) Stats() TopicStats { return TopicStats{Published: t.published.Load()} }

// Close does nothing (Topics starts no goroutine) and returns nil: closing
// the transport is its owner's business.
func (t *Topics) Close() error { return nil }

// join and alias pass the conversation hooks on to the transport below.
func (t *Topics) join(m *transport.Message, now time.Time) error {
	return joinBelow(t.Transport, m, now)
}
func (t *Topics) alias(copyID, templateID string) { aliasBelow(t.Transport, copyID, templateID) }

func (t *Topics) known(agent string) error {
	t.mu.Lock()
	ok := t.agents[agent]
	t.mu.Unlock()
	if !ok {
		return &transport.UnknownAgentError{Agent: agent}
	}
	return nil
}

// topic returns the named topic, creating it on first use.
func (t *Topics) topic(name string) *topic {
	t.mu.Lock()
	defer t.mu.Unlock()
	tp := t.topics[name]
	if tp == nil {
		tp = &topic{}
		t.topics[name] = tp
	}
	return tp
}

// pruneLocked drops retained messages that are outside the retention
// window, expired, or beyond the retention limit.
func (t *Topics) pruneLocked(tp *topic, now time.Time) {
	window := t.set.Retention
	drop := 0
	for _, m := range tp.retained {
		if len(tp.retained)-drop <= t.set.RetainMax && now.Sub(m.Timestamp) < window && now.Before(m.ExpiresAt()) {
			break
		}
		drop++
	}
	if window <= 0 {
		drop = len(tp.retained)
	}
	if drop > 0 {
		n := copy(tp.retained, tp.retained[drop:])
		clear(tp.retained[n:])
		tp.retained = tp.retained[:n]
	}
}

func isUnknownAgent(err error) bool {
	return err != nil && errors.Is(err, transport.ErrUnknownAgent)
}

var _ transport.Transport = (*Topics)(nil)
