package bus

import (
	"slices"
	"sync"
	"time"

	"github.com/batonhq/baton/transport"
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

// thread is one conversation: its messages in acceptance order (copies the
// bus made when it accepted them).
type thread struct {
	id      string
	root    string
	started time.Time
	msgs    []*transport.Message
	ids     []string // ids indexed in byMsg: the messages' and broadcast copies'
	closed  string   // reason, "" while open
}

// conversations tracks threads (WithConversations). Every known message id
// maps to its thread so that in_reply_to can be checked; threads are
// forgotten oldest first beyond MaxThreads, or twice MaxDuration after
// their root (closed for MaxDuration by then, so that late messages are
// refused as such rather than starting a new thread).
type conversations struct {
	lim ConversationLimits

	mu      sync.Mutex
	threads map[string]*thread   // by conversation_id
	byMsg   map[string]*thread   // message_id (and broadcast copies' ids) -> thread
	byCorr  map[string][]*thread // correlation_id -> threads holding it
	order   []*thread            // creation order
}

func newConversations(l *ConversationLimits) *conversations {
	if l == nil {
		return nil
	}
	return &conversations{
		lim:     *l,
		threads: make(map[string]*thread),
		byMsg:   make(map[string]*thread),
		byCorr:  make(map[string][]*thread),
	}
}

// inherit gives a reply without a conversation_id the one of the message it
// answers, before the bus fills a fresh one in.
func (cv *conversations) inherit(m *transport.Message) {
	if m.ConversationID != "" || m.InReplyTo == "" {
		return
	}
	cv.mu.Lock()
	if t := cv.byMsg[m.InReplyTo]; t != nil {
		m.ConversationID = t.id
	}
	cv.mu.Unlock()
}

// record adds m (already filled) to its thread, refusing a reply to an
// unknown message and a message for a closed thread.
func (cv *conversations) record(m *transport.Message, now time.Time) error {
	cv.mu.Lock()
	defer cv.mu.Unlock()
	cv.pruneLocked(now)
	if m.InReplyTo != "" && cv.byMsg[m.InReplyTo] == nil {
		return &transport.ValidationError{Field: "in_reply_to", Reason: "names an unknown message: " + m.InReplyTo}
	}
	t := cv.threads[m.ConversationID]
	if t == nil {
		t = &thread{id: m.ConversationID, root: m.MessageID, started: m.Timestamp}
		if t.started.IsZero() || t.started.After(now) {
			t.started = now
		}
		for len(cv.order) >= cv.lim.MaxThreads {
			cv.forgetLocked()
		}
		cv.threads[t.id] = t
		cv.order = append(cv.order, t)
	}
	switch {
	case t.closed != "":
	case len(t.msgs) >= cv.lim.MaxDepth:
		t.closed = ConversationMaxDepth
	case now.Sub(t.started) >= cv.lim.MaxDuration:
		t.closed = ConversationMaxDuration
	}
	if t.closed != "" {
		return &ConversationClosedError{ConversationID: t.id, Reason: t.closed}
	}
	c := m.Clone()
	t.msgs = append(t.msgs, c)
	t.ids = append(t.ids, m.MessageID)
	cv.byMsg[m.MessageID] = t
	if m.CorrelationID != "" && !slices.Contains(cv.byCorr[m.CorrelationID], t) {
		cv.byCorr[m.CorrelationID] = append(cv.byCorr[m.CorrelationID], t)
	}
	return nil
}

// alias makes a broadcast copy's id known as part of its template's thread,
// so that replies to the copy are accepted.
func (cv *conversations) alias(copyID, templateID string) {
	cv.mu.Lock()
	if t := cv.byMsg[templateID]; t != nil {
		cv.byMsg[copyID] = t
		t.ids = append(t.ids, copyID)
	}
	cv.mu.Unlock()
}

func (cv *conversations) pruneLocked(now time.Time) {
	for len(cv.order) > 0 && now.Sub(cv.order[0].started) >= 2*cv.lim.MaxDuration {
		cv.forgetLocked()
	}
}

// forgetLocked drops the oldest thread and its indexes.
func (cv *conversations) forgetLocked() {
	t := cv.order[0]
	cv.order[0] = nil
	cv.order = cv.order[1:]
	if cv.threads[t.id] == t {
		delete(cv.threads, t.id)
	}
	for _, id := range t.ids {
		if cv.byMsg[id] == t {
			delete(cv.byMsg, id)
		}
	}
	for _, m := range t.msgs {
		if m.CorrelationID == "" {
			continue
		}
		rest := slices.DeleteFunc(cv.byCorr[m.CorrelationID], func(x *thread) bool { return x == t })
		if len(rest) == 0 {
			delete(cv.byCorr, m.CorrelationID)
		} else {
			cv.byCorr[m.CorrelationID] = rest
		}
	}
}

// Conversation returns copies of the messages of thread id in the order the
// bus accepted them, and whether the thread is closed (with the reason:
// ConversationMaxDepth, ConversationMaxDuration or
// ConversationClosedByOwner). An unknown or forgotten thread returns no
// messages. It needs WithConversations.
func (b *Bus) Conversation(id string) (msgs []*transport.Message, closed string, err error) {
	if b.conv == nil {
		return nil, "", ErrConversationsOff
	}
	b.conv.mu.Lock()
	defer b.conv.mu.Unlock()
	t := b.conv.threads[id]
	if t == nil {
		return nil, "", nil
	}
	closed = t.closed
	if closed == "" && b.clock.Now().Sub(t.started) >= b.conv.lim.MaxDuration {
		closed = ConversationMaxDuration
	}
	return cloneAll(t.msgs), closed, nil
}

// Correlated returns copies of the messages, across every retained thread,
// whose correlation_id is id or whose message_id is id (the message the
// others correlate to), in acceptance order within each thread. It needs
// WithConversations.
func (b *Bus) Correlated(id string) ([]*transport.Message, error) {
	if b.conv == nil {
		return nil, ErrConversationsOff
	}
	b.conv.mu.Lock()
	defer b.conv.mu.Unlock()
	ts := slices.Clone(b.conv.byCorr[id])
	if t := b.conv.byMsg[id]; t != nil && !slices.Contains(ts, t) {
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
	return out, nil
}

// CloseConversation closes thread id: later messages for it are refused
// with a *ConversationClosedError. It needs WithConversations; closing an
// unknown thread is a *ValidationError on field conversation_id.
func (b *Bus) CloseConversation(id string) error {
	if b.conv == nil {
		return ErrConversationsOff
	}
	b.conv.mu.Lock()
	defer b.conv.mu.Unlock()
	t := b.conv.threads[id]
	if t == nil {
		return &transport.ValidationError{Field: "conversation_id", Reason: "names an unknown conversation: " + id}
	}
	if t.closed == "" {
		t.closed = ConversationClosedByOwner
	}
	return nil
}

func cloneAll(ms []*transport.Message) []*transport.Message {
	out := make([]*transport.Message, len(ms))
	for i, m := range ms {
		out[i] = m.Clone()
	}
	return out
}

// forget removes m from its thread: it was refused after being recorded.
func (cv *conversations) forget(m *transport.Message) {
	cv.mu.Lock()
	defer cv.mu.Unlock()
	t := cv.byMsg[m.MessageID]
	if t == nil {
		return
	}
	delete(cv.byMsg, m.MessageID)
	for i := len(t.msgs) - 1; i >= 0; i-- {
		if t.msgs[i].MessageID == m.MessageID {
			t.msgs = slices.Delete(t.msgs, i, i+1)
			break
		}
	}
}
