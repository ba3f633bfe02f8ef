package feature

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/batonhq/baton/clock"
	"github.com/batonhq/baton/transport"
	"github.com/google/uuid"
)

// Reasons a conversation thread is closed.
const (
	// ConversationMaxDepth: the thread holds ConversationLimits.MaxDepth
	// messages.
	ConversationMaxDepth = "max_depth"
	// ConversationMaxDuration: ConversationLimits.MaxDuration has passed since
	// the thread's root message.
	ConversationMaxDuration = "max_duration"
	// ConversationClosedByOwner: CloseConversation closed it.
	ConversationClosedByOwner = "closed"
)

// ConversationLimits bound the threads Conversations tracks. Zero fields
// take the defaults.
type ConversationLimits struct {
	// MaxDepth is how many messages a thread holds before it is closed
	// (20 by default).
	MaxDepth int
	// MaxDuration is how long after its root message a thread stays open
	// (24h by default).
	MaxDuration time.Duration
	// MaxThreads bounds the threads retained for queries (10 000 by
	// default); the oldest are forgotten first, and every thread is
	// forgotten twice MaxDuration after its root message.
	MaxThreads int
}

func (l ConversationLimits) withDefaults() ConversationLimits {
	if l.MaxDepth <= 0 {
		l.MaxDepth = 20
	}
	if l.MaxDuration <= 0 {
		l.MaxDuration = 24 * time.Hour
	}
	if l.MaxThreads <= 0 {
		l.MaxThreads = 10_000
	}
	return l
}

// ConversationStats are the counters of Conversations.
type ConversationStats struct {
	// Refused counts messages refused because their thread was closed.
	Refused uint64
	// UnknownReplies counts messages refused because their in_reply_to
	// named no message of a retained thread.
	UnknownReplies uint64
	// Threads is the number of threads retained now.
	Threads int
}

// Conversations decorates a transport with conversation threads: every
// message sent through it joins its conversation_id's thread (a reply
// without one inherits the thread of the message it answers), a message
// whose in_reply_to names no message of a retained thread is refused with
// a *transport.ValidationError on in_reply_to, a thread closes after
// MaxDepth messages or MaxDuration (later messages are refused with a
// *ConversationClosedError), and Conversation and Correlated return the
// messages of threads.
//
// Compose it directly over the transport, below Topics, Broadcaster and
// Requests: then it also sees the copies of broadcasts and publications
// (replies to a copy belong to the template's thread) and the responses
// Requests hands to their waiting callers without the transport.
type Conversations struct {
	transport.Transport
	clock clock.Clock
	lim   ConversationLimits

	mu      sync.Mutex
	threads map[string]*thread   // by conversation_id
	byMsg   map[string]*thread   // message_id (and fan-out copies' ids) -> thread
	byCorr  map[string][]*thread // correlation_id -> threads holding it
	order   []*thread            // creation order

	refused, unknown atomic.Uint64
}

// thread is one conversation: copies of its messages in acceptance order.
type thread struct {
	id      string
	root    string
	started time.Time
	msgs    []*transport.Message
	ids     []string // ids indexed in byMsg: the messages' and fan-out copies'
	closed  string   // reason, "" while open
}

// NewConversations returns inner decorated with conversation threads
// bounded by l, on clk (nil: clock.Real()).
func NewConversations(inner transport.Transport, l ConversationLimits, clk clock.Clock) *Conversations {
	if clk == nil {
		clk = clock.Real()
	}
	return &Conversations{
		Transport: inner,
		clock:     clk,
		lim:       l.withDefaults(),
		threads:   make(map[string]*thread),
		byMsg:     make(map[string]*thread),
		byCorr:    make(map[string][]*thread),
	}
}

// threadKeeper is what a routing decorator tells Conversations about
// messages that do not reach it through SendWork, or that it must not
// count twice. Conversations implements it; the other routing decorators
// pass it on to the transport they decorate.
type threadKeeper interface {
	// join records m, filled, in its thread, or refuses it.
	join(m *transport.Message, now time.Time) error
	// alias makes a fan-out copy's id known as part of its template's
	// thread, so that replies to the copy are accepted.
	alias(copyID, templateID string)
}

// joinBelow records m in the threads of the Conversations under tr, if any.
func joinBelow(tr transport.Transport, m *transport.Message, now time.Time) error {
	if k, ok := tr.(threadKeeper); ok {
		return k.join(m, now)
	}
	return nil
}

// aliasBelow tells the Conversations under tr, if any, of a fan-out copy.
func aliasBelow(tr transport.Transport, copyID, templateID string) {
	if k, ok := tr.(threadKeeper); ok {
		k.alias(copyID, templateID)
	}
}

// SendWork records m in its thread, or refuses it, and sends it on. A
// fan-out copy (see threadKeeper) is sent on without being recorded again:
// its template was. A message the transport refused (any error but a full
// mailbox or an unknown agent, for which the transport dead-letters it)
// leaves its thread again.
func (c *Conversations) SendWork(ctx context.Context, m *transport.Message) error {
	if err := admit(ctx, m); err != nil {
		return err
	}
	c.mu.Lock()
	isCopy := c.byMsg[m.MessageID] != nil && m.MessageID != ""
	c.mu.Unlock()
	if !isCopy {
		if err := c.join(m, c.clock.Now()); err != nil {
			return err
		}
	}
	err := c.Transport.SendWork(ctx, m)
	if err != nil && !isCopy && !errors.Is(err, transport.ErrQueueFull) && !errors.Is(err, transport.ErrUnknownAgent) {
		c.forget(m)
	}
	return err
}

// join gives a reply without a conversation_id the one of the message it
// answers, fills m, and adds it to its thread, refusing a reply to an
// unknown message and a message for a closed thread.
func (c *Conversations) join(m *transport.Message, now time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if m.ConversationID == "" && m.InReplyTo != "" {
		if t := c.byMsg[m.InReplyTo]; t != nil {
			m.ConversationID = t.id
		}
	}
	m.Fill(now, uuid.NewString)
	c.pruneLocked(now)
	if m.InReplyTo != "" && c.byMsg[m.InReplyTo] == nil {
		c.unknown.Add(1)
		return &transport.ValidationError{Field: "in_reply_to", Reason: "names an unknown message: " + m.InReplyTo}
	}
	t := c.threads[m.ConversationID]
	if t == nil {
		t = &thread{id: m.ConversationID, root: m.MessageID, started: m.Timestamp}
		if t.started.IsZero() || t.started.After(now) {
			t.started = now
		}
		for len(c.order) >= c.lim.MaxThreads {
			c.forgetOldestLocked()
		}
		c.threads[t.id] = t
		c.order = append(c.order, t)
	}
	switch {
	case t.closed != "":
	case len(t.msgs) >= c.lim.MaxDepth:
		t.closed = ConversationMaxDepth
	case now.Sub(t.started) >= c.lim.MaxDuration:
		t.closed = ConversationMaxDuration
	}
	if t.closed != "" {
		c.refused.Add(1)
		return &ConversationClosedError{ConversationID: t.id, Reason: t.closed}
	}
	t.msgs = append(t.msgs, m.Clone())
	t.ids = append(t.ids, m.MessageID)
	c.byMsg[m.MessageID] = t
	if m.CorrelationID != "" && !slices.Contains(c.byCorr[m.CorrelationID], t) {
		c.byCorr[m.CorrelationID] = append(c.byCorr[m.CorrelationID], t)
	}
	return nil
}

// alias makes a fan-out copy's id known as part of its template's thread.
func (c *Conversations) alias(copyID, templateID string) {
	c.mu.Lock()
	if t := c.byMsg[templateID]; t != nil {
		c.byMsg[copyID] = t
		t.ids = append(t.ids, copyID)
	}
	c.mu.Unlock()
}

func (c *Conversations) pruneLocked(now time.Time) {
	for len(c.order) > 0 && now.Sub(c.order[0].started) >= 2*c.lim.MaxDuration {
		c.forgetOldestLocked()
	}
}

// forgetOldestLocked drops the oldest thread and its indexes.
func (c *Conversations) forgetOldestLocked() {
	t := c.order[0]
	c.order[0] = nil
	c.order = c.order[1:]
	if c.threads[t.id] == t {
		delete(c.threads, t.id)
	}
	for _, id := range t.ids {
		if c.byMsg[id] == t {
			delete(c.byMsg, id)
		}
	}
	for _, m := range t.msgs {
		if m.CorrelationID == "" {
			continue
		}
		rest := slices.DeleteFunc(c.byCorr[m.CorrelationID], func(x *thread) bool { return x == t })
		if len(rest) == 0 {
			delete(c.byCorr, m.CorrelationID)
		} else {
			c.byCorr[m.CorrelationID] = rest
		}
	}
}

// forget removes m from its thread: the transport refused it after it was
// recorded.
func (c *Conversations) forget(m *transport.Message) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.byMsg[m.MessageID]
	if t == nil {
		return
	}
	delete(c.byMsg, m.MessageID)
	for i := len(t.msgs) - 1; i >= 0; i-- {
		if t.msgs[i].MessageID == m.MessageID {
			t.msgs = slices.Delete(t.msgs, i, i+1)
			break
		}
	}
}

// Conversation returns copies of the messages of thread id in the order
// they were sent, and whether the thread is closed (with the reason:
// ConversationMaxDepth, ConversationMaxDuration or
// ConversationClosedByOwner). An unknown or forgotten thread returns no
// messages.
func (c *Conversations) Conversation(id string) (msgs []*transport.Message, closed string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.threads[id]
	if t == nil {
		return nil, ""
	}
	closed = t.closed
	if closed == "" && c.clock.Now().Sub(t.started) >= c.lim.MaxDuration {
		closed = ConversationMaxDuration
	}
	return cloneAll(t.msgs), closed
}

// Correlated returns copies of the messages, across every retained thread,
// whose correlation_id is id or whose message_id is id (the message the
// others correlate to), in sending order within each thread.
func (c *Conversations) Correlated(id string) []*transport.Message {
	c.mu.Lock()
	defer c.mu.Unlock()
	ts := slices.Clone(c.byCorr[id])
	if t := c.byMsg[id]; t != nil && !slices.Contains(ts, t) {
		ts = append([]*thread{t}, ts...)
	}
	var out []*transport.Message
	for _, t := range ts {
		for _, m := range t.msgs {
			if m.CorrelationID == id || m.MessageID == id {
				out = append(out, m.Clone())
			}
		}
	}
	return out
}

// CloseConversation closes thread id: later messages for it are refused
// with a *ConversationClosedError. Closing an unknown thread is a
// *transport.ValidationError on field conversation_id.
func (c *Conversations) CloseConversation(id string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.threads[id]
	if t == nil {
		return &transport.ValidationError{Field: "conversation_id", Reason: "names an unknown conversation: " + id}
	}
	if t.closed == "" {
		t.closed = ConversationClosedByOwner
	}
	return nil
}

// Stats returns the counters of Conversations.
func (c *Conversations) Stats() ConversationStats {
	c.mu.Lock()
	n := len(c.threads)
	c.mu.Unlock()
	return ConversationStats{Refused: c.refused.Load(), UnknownReplies: c.unknown.Load(), Threads: n}
}

// Close does nothing (Conversations starts no goroutine) and returns nil:
// closing the transport is its owner's business.
func (c *Conversations) Close() error { return nil }

func cloneAll(ms []*transport.Message) []*transport.Message {
	out := make([]*transport.Message, len(ms))
	for i, m := range ms {
		out[i] = m.Clone()
	}
	return out
}

var _ transport.Transport = (*Conversations)(nil)
