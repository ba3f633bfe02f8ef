package transport

import (
	"maps"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/batonhq/baton/internal/jsonvalue"
)

// MessageType says what kind of traffic a message is.
type MessageType string

// The message types.
const (
	// MessageRequest asks the receiver to act; a RESPONSE is expected.
	MessageRequest MessageType = "REQUEST"
	// MessageResponse answers a REQUEST; it carries the request's id in
	// correlation_id and in_reply_to.
	MessageResponse MessageType = "RESPONSE"
	// MessageNotification informs; no reply is expected.
	MessageNotification MessageType = "NOTIFICATION"
	// MessageQuery asks for information; a RESPONSE is expected.
	MessageQuery MessageType = "QUERY"
	// MessageBroadcast goes to many agents at once.
	MessageBroadcast MessageType = "BROADCAST"
	// MessageHandoff transfers a task; its content holds task_description,
	// context, previous_result and constraints.
	MessageHandoff MessageType = "HANDOFF"
	// MessageAck acknowledges receipt of a message that required it.
	MessageAck MessageType = "ACK"
	// MessageError reports a failure to the sender.
	MessageError MessageType = "ERROR"
)

// Valid reports whether t is one of the eight message types.
func (t MessageType) Valid() bool {
	switch t {
	case MessageRequest, MessageResponse, MessageNotification, MessageQuery,
		MessageBroadcast, MessageHandoff, MessageAck, MessageError:
		return true
	}
	return false
}

// Limits and defaults of a message.
const (
	// DefaultTTL is the time to live of a message that does not set one.
	DefaultTTL = time.Hour
	// MaxTTL is the longest time to live a message may ask for.
	MaxTTL = 24 * time.Hour
	// MaxPayloadBytes bounds the JSON size of content plus metadata (1 MiB).
	MaxPayloadBytes = 1 << 20
	// BroadcastAll is the to_agent of a message addressed to every agent.
	BroadcastAll = "*"
	// TopicPrefix starts the to_agent of a message published on a topic.
	TopicPrefix = "topic:"
	// MetadataTopic is the metadata key that names the topic of the copy of
	// a publication delivered to a subscriber.
	MetadataTopic = "topic"
	// MetadataIdempotencyKey is the metadata key read as the idempotency key
	// of a message whose IdempotencyKey field is empty.
	MetadataIdempotencyKey = "idempotency_key"
	// MetadataDeadLetterRetries is the metadata key in which dead-letter
	// processing counts how many times it sent a message again.
	MetadataDeadLetterRetries = "dead_letter_retries"
)

// Message is the one envelope for every kind of traffic between agents. The bus fills MessageID, ConversationID, Timestamp and the TTL
// when a send leaves them empty. A message belongs to the bus from the
// moment it is sent until it is received: the sender must not modify it, and
// the receiver owns it afterwards.
type Message struct {
	// MessageID is a UUID v4 set by the bus.
	MessageID string `json:"message_id"`
	// ConversationID groups the messages of a thread; set by the bus when
	// empty, and inherited by replies.
	ConversationID string `json:"conversation_id,omitempty"`
	// CorrelationID ties a RESPONSE or ACK to the message it answers.
	CorrelationID string `json:"correlation_id,omitempty"`
	// InReplyTo is the message_id this message answers.
	InReplyTo string `json:"in_reply_to,omitempty"`
	// Type is the kind of message.
	Type MessageType `json:"message_type"`
	// From is the sending agent's id.
	From string `json:"from_agent"`
	// To is an agent id, "topic:<name>", or "*" for every agent.
	To string `json:"to_agent"`
	// Priority orders delivery; the zero value is NORMAL.
	Priority Priority `json:"priority"`
	// Content is the payload; it must hold a string "action".
	Content map[string]any `json:"content"`
	// Metadata carries optional context such as workflow_id.
	Metadata map[string]any `json:"metadata,omitempty"`
	// TTL is how long the message may wait in a mailbox; zero means
	// DefaultTTL. In JSON it is a number of seconds (fractions allowed).
	TTL time.Duration `json:"ttl,omitempty"`
	// RequiresAck asks the receiver to acknowledge receipt with Bus.Ack:
	// until it does, the message is in flight and is delivered again when
	// its ack timeout passes (at-least-once delivery).
	RequiresAck bool `json:"requires_ack,omitempty"`
	// AckTimeout overrides, for this message, how long the receiver has to
	// acknowledge it (WithAckTimeout, 30s by default); zero keeps the bus's.
	// In JSON it is a number of seconds, like the TTL.
	AckTimeout time.Duration `json:"ack_timeout,omitempty"`
	// DeliveryCount is set by the bus on a requires_ack message as it hands
	// it out: 1 on the first delivery, 2 on the first redelivery, and so on.
	// It stays zero on messages that do not require an acknowledgement.
	DeliveryCount int `json:"delivery_count,omitempty"`
	// IdempotencyKey identifies the operation the message performs. The bus
	// remembers it for a window (WithIdempotency, 24h by default) and
	// acknowledges a second send with the same key, type and receiver
	// without delivering it again. When empty, metadata["idempotency_key"]
	// (a string) serves instead.
	IdempotencyKey string `json:"idempotency_key,omitempty"`
	// Sequence is an optional sender-assigned ordering number.
	Sequence int64 `json:"sequence,omitempty"`
	// Timestamp is when the bus accepted the message, in UTC; ISO 8601 in
	// JSON.
	Timestamp time.Time `json:"timestamp"`
}

// Topic returns the topic name of a message addressed to "topic:<name>" and
// whether it is such a message. The copy a subscriber receives is addressed
// to the subscriber and names its topic in metadata; use TopicOf for it.
func (m *Message) Topic() (string, bool) {
	if strings.HasPrefix(m.To, TopicPrefix) {
		return m.To[len(TopicPrefix):], true
	}
	return "", false
}

// TopicOf returns the topic a received message was published on, or "" for
// a message that was not published on a topic.
func (m *Message) TopicOf() string {
	if name, ok := m.Topic(); ok {
		return name
	}
	s, _ := m.Metadata[MetadataTopic].(string)
	return s
}

// Action returns content.action, or "" when it is missing or not a string.
func (m *Message) Action() string {
	s, _ := m.Content["action"].(string)
	return s
}

// ExpiresAt returns when the message expires: its timestamp plus its TTL (or
// DefaultTTL when the TTL is zero).
func (m *Message) ExpiresAt() time.Time {
	ttl := m.TTL
	if ttl == 0 {
		ttl = DefaultTTL
	}
	return m.Timestamp.Add(ttl)
}

// Key returns the message's idempotency key: IdempotencyKey, or else
// metadata["idempotency_key"] when it is a string, or "".
func (m *Message) Key() string {
	if m.IdempotencyKey != "" {
		return m.IdempotencyKey
	}
	if m.Metadata == nil {
		return ""
	}
	s, _ := m.Metadata[MetadataIdempotencyKey].(string)
	return s
}

// Fill sets the fields a transport owns when the sender left them empty:
// the id (newID's), the conversation (the message's own id: it starts a
// thread), the timestamp (now, in UTC) and the TTL (DefaultTTL).
func (m *Message) Fill(now time.Time, newID func() string) {
	if m.MessageID == "" {
		m.MessageID = newID()
	}
	if m.ConversationID == "" {
		m.ConversationID = m.MessageID
	}
	if m.Timestamp.IsZero() {
		m.Timestamp = now.UTC()
	}
	if m.TTL == 0 {
		m.TTL = DefaultTTL
	}
}

// Notice returns a message of type t (an ACK or an ERROR) from m's
// receiver back to its sender that answers m: it names m as the message it
// replies to and correlates with, in m's conversation, at m's priority.
func (m *Message) Notice(t MessageType, content map[string]any) *Message {
	return &Message{
		Type:           t,
		From:           m.To,
		To:             m.From,
		CorrelationID:  m.MessageID,
		InReplyTo:      m.MessageID,
		ConversationID: m.ConversationID,
		Priority:       m.Priority,
		Content:        content,
	}
}

// DeadLetterRetries returns how many times dead-letter processing has sent
// m again (metadata "dead_letter_retries", whichever number type its
// transport decoded it as), or 0.
func (m *Message) DeadLetterRetries() int {
	switch v := m.Metadata[MetadataDeadLetterRetries].(type) {
	case int:
		return v
	case float64:
		return int(v)
	case int64:
		return int(v)
	}
	return 0
}

// Clone returns a copy of m whose Content and Metadata maps are new maps
// holding the same values (a shallow copy of each map).
func (m *Message) Clone() *Message {
	c := *m
	c.Content = maps.Clone(m.Content)
	c.Metadata = maps.Clone(m.Metadata)
	return &c
}

// Validate checks the message against the message format and
// returns the first problem as a *ValidationError naming the field. It does
// not require the fields the bus fills on send (id, timestamp). It does not
// allocate for a valid message with plain JSON-like content.
func (m *Message) Validate() error {
	if m == nil {
		return &ValidationError{Field: "message", Reason: "is required"}
	}
	if m.From == "" {
		return &ValidationError{Field: "from_agent", Reason: "is required"}
	}
	if m.To == "" {
		return &ValidationError{Field: "to_agent", Reason: "is required"}
	}
	if m.To == TopicPrefix {
		return &ValidationError{Field: "to_agent", Reason: "names no topic"}
	}
	if m.Type == "" {
		return &ValidationError{Field: "message_type", Reason: "is required"}
	}
	if !m.Type.Valid() {
		return &ValidationError{Field: "message_type", Reason: "is unknown: " + strconv.Quote(string(m.Type))}
	}
	if !m.Priority.Valid() {
		return &ValidationError{Field: "priority", Reason: "is unknown: " + strconv.Itoa(int(m.Priority))}
	}
	if m.Content == nil {
		return &ValidationError{Field: "content", Reason: "is required"}
	}
	switch a := m.Content["action"].(type) {
	case nil:
		return &ValidationError{Field: "content.action", Reason: "is required"}
	case string:
		if a == "" {
			return &ValidationError{Field: "content.action", Reason: "is required"}
		}
	default:
		return &ValidationError{Field: "content.action", Reason: "must be a string"}
	}
	if (m.Type == MessageResponse || m.Type == MessageAck) && m.InReplyTo == "" {
		return &ValidationError{Field: "in_reply_to", Reason: "is required for " + string(m.Type)}
	}
	if !jsonvalue.ValidUTF8(m.MessageID) || !jsonvalue.ValidUTF8(m.ConversationID) || !jsonvalue.ValidUTF8(m.CorrelationID) ||
		!jsonvalue.ValidUTF8(m.InReplyTo) || !jsonvalue.ValidUTF8(m.From) || !jsonvalue.ValidUTF8(m.To) || !jsonvalue.ValidUTF8(m.IdempotencyKey) {
		return m.invalidUTF8()
	}
	if m.TTL < 0 {
		return &ValidationError{Field: "ttl", Reason: "must not be negative"}
	}
	if m.TTL > MaxTTL {
		return &ValidationError{Field: "ttl", Reason: "exceeds the maximum of 24h"}
	}
	if m.AckTimeout < 0 {
		return &ValidationError{Field: "ack_timeout", Reason: "must not be negative"}
	}
	if m.DeliveryCount < 0 {
		return &ValidationError{Field: "delivery_count", Reason: "must not be negative"}
	}
	return validatePayload(m.Content, m.Metadata)
}

// invalidUTF8 names the first identifier of m that is not valid UTF-8 (the
// check of every one comes first, as one expression, on the hot path).
func (m *Message) invalidUTF8() error {
	for _, f := range [...]struct{ name, value string }{
		{"message_id", m.MessageID}, {"conversation_id", m.ConversationID}, {"correlation_id", m.CorrelationID},
		{"in_reply_to", m.InReplyTo}, {"from_agent", m.From}, {"to_agent", m.To}, {"idempotency_key", m.IdempotencyKey},
	} {
		if !utf8.ValidString(f.value) {
			return &ValidationError{Field: f.name, Reason: "is not valid UTF-8"}
		}
	}
	return nil
}
