package transport

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/batonhq/baton/internal/jsonv"
)

// messageWire is the JSON shape of a Message: the same fields, with the TTL
// as seconds and the timestamp as ISO 8601 text.
type messageWire struct {
	MessageID      string          `json:"message_id"`
	ConversationID string          `json:"conversation_id,omitempty"`
	CorrelationID  string          `json:"correlation_id,omitempty"`
	InReplyTo      string          `json:"in_reply_to,omitempty"`
	Type           MessageType     `json:"message_type"`
	From           string          `json:"from_agent"`
	To             string          `json:"to_agent"`
	Priority       Priority        `json:"priority"`
	Content        map[string]any  `json:"content"`
	Metadata       map[string]any  `json:"metadata,omitempty"`
	TTL            json.RawMessage `json:"ttl,omitempty"`
	RequiresAck    bool            `json:"requires_ack,omitempty"`
	AckTimeout     json.RawMessage `json:"ack_timeout,omitempty"`
	DeliveryCount  int             `json:"delivery_count,omitempty"`
	IdempotencyKey string          `json:"idempotency_key,omitempty"`
	Sequence       int64           `json:"sequence,omitempty"`
	Timestamp      string          `json:"timestamp"`
}

// timestampLayoutNoZone is accepted on input for timestamps written without
// an offset (as the seeds do); they are read as UTC.
const timestampLayoutNoZone = "2006-01-02T15:04:05.999999999"

// MarshalJSON encodes the message with its timestamp in UTC ISO 8601
// (RFC 3339 with nanoseconds) and its TTL as a number of seconds, exact to
// the nanosecond ("ttl": 60, "ttl": 0.25). It writes the bytes directly,
// the same as encoding/json would write the message's wire shape; a
// message it cannot write (an unknown priority, a value JSON cannot
// hold) is left to encoding/json, which words the error.
//
// The JSON is written into a pooled scratch buffer and copied out at its
// size: grown from a fixed start, the buffer of a work message (about
// 1.2 KB) was made three times per send, most of the garbage of a NATS
// step's encoding.
func (m Message) MarshalJSON() ([]byte, error) {
	if !m.Priority.Valid() {
		return m.marshalReflect()
	}
	bp := marshalBufs.Get().(*[]byte)
	b, ok := m.appendJSON((*bp)[:0])
	var out []byte
	if ok {
		out = bytes.Clone(b)
	}
	if cap(b) <= maxPooledMarshal {
		*bp = b[:0]
		marshalBufs.Put(bp)
	}
	if !ok {
		return m.marshalReflect()
	}
	return out, nil
}

// marshalBufs are MarshalJSON's scratch buffers; one grown past
// maxPooledMarshal (a message with a large content) is not kept.
var marshalBufs = sync.Pool{New: func() any {
	b := make([]byte, 0, 2048)
	return &b
}}

const maxPooledMarshal = 64 << 10

// appendJSON appends m's JSON to b; ok is false for what MarshalJSON
// leaves to encoding/json (a value JSON cannot hold).
func (m *Message) appendJSON(b []byte) (_ []byte, ok bool) {
	b = append(b, `{"message_id":`...)
	b = jsonv.AppendString(b, m.MessageID)
	for _, f := range [...]struct{ key, v string }{
		{`,"conversation_id":`, m.ConversationID}, {`,"correlation_id":`, m.CorrelationID}, {`,"in_reply_to":`, m.InReplyTo},
	} {
		if f.v != "" {
			b = append(b, f.key...)
			b = jsonv.AppendString(b, f.v)
		}
	}
	b = append(b, `,"message_type":`...)
	b = jsonv.AppendString(b, string(m.Type))
	b = append(b, `,"from_agent":`...)
	b = jsonv.AppendString(b, m.From)
	b = append(b, `,"to_agent":`...)
	b = jsonv.AppendString(b, m.To)
	b = append(b, `,"priority":`...)
	b = jsonv.AppendString(b, m.Priority.String())
	b = append(b, `,"content":`...)
	var err error
	if b, err = jsonv.Append(b, m.Content); err != nil {
		return b, false
	}
	if len(m.Metadata) > 0 {
		b = append(b, `,"metadata":`...)
		if b, err = jsonv.Append(b, m.Metadata); err != nil {
			return b, false
		}
	}
	if m.TTL != 0 {
		b = append(b, `,"ttl":`...)
		b = append(b, formatSeconds(m.TTL)...)
	}
	if m.RequiresAck {
		b = append(b, `,"requires_ack":true`...)
	}
	if m.AckTimeout != 0 {
		b = append(b, `,"ack_timeout":`...)
		b = append(b, formatSeconds(m.AckTimeout)...)
	}
	if m.DeliveryCount != 0 {
		b = append(b, `,"delivery_count":`...)
		b = strconv.AppendInt(b, int64(m.DeliveryCount), 10)
	}
	if m.IdempotencyKey != "" {
		b = append(b, `,"idempotency_key":`...)
		b = jsonv.AppendString(b, m.IdempotencyKey)
	}
	if m.Sequence != 0 {
		b = append(b, `,"sequence":`...)
		b = strconv.AppendInt(b, m.Sequence, 10)
	}
	b = append(b, `,"timestamp":"`...)
	b = m.Timestamp.UTC().AppendFormat(b, time.RFC3339Nano)
	return append(b, '"', '}'), true
}

// marshalReflect is MarshalJSON by encoding/json, for what the direct
// writer leaves to it (and for the tests that hold the two equal).
func (m Message) marshalReflect() ([]byte, error) {
	w := messageWire{
		MessageID:      m.MessageID,
		ConversationID: m.ConversationID,
		CorrelationID:  m.CorrelationID,
		InReplyTo:      m.InReplyTo,
		Type:           m.Type,
		From:           m.From,
		To:             m.To,
		Priority:       m.Priority,
		Content:        m.Content,
		Metadata:       m.Metadata,
		RequiresAck:    m.RequiresAck,
		DeliveryCount:  m.DeliveryCount,
		IdempotencyKey: m.IdempotencyKey,
		Sequence:       m.Sequence,
		Timestamp:      m.Timestamp.UTC().Format(time.RFC3339Nano),
	}
	if m.TTL != 0 {
		w.TTL = json.RawMessage(formatSeconds(m.TTL))
	}
	if m.AckTimeout != 0 {
		w.AckTimeout = json.RawMessage(formatSeconds(m.AckTimeout))
	}
	return json.Marshal(w)
}

// UnmarshalJSON decodes a message. The TTL may be a number of seconds or a
// Go duration string ("90s"); the timestamp may carry any offset (it is
// converted to UTC) or none (it is read as UTC). Content numbers decode as
// float64, as encoding/json does for map[string]any, and an empty metadata
// object decodes as no metadata (nil), as it encodes. Decoding does not
// validate: call Validate, or let Send do it. A message in the form
// MarshalJSON writes is read directly; anything else (other spellings of
// the keys, unknown keys, nulls) is read by encoding/json, to the same
// result.
func (m *Message) UnmarshalJSON(b []byte) error {
	w, ok := decodeWire(b, nil, nil)
	if !ok {
		w = messageWire{}
		if err := json.Unmarshal(b, &w); err != nil {
			return err
		}
	}
	return m.fromWire(&w)
}

// unmarshalReflect is UnmarshalJSON by encoding/json alone.
func (m *Message) unmarshalReflect(b []byte) error {
	var w messageWire
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	return m.fromWire(&w)
}

// The keys of a message's wire shape, as bits of what decodeWire has seen.
const (
	seenID = 1 << iota
	seenConversation
	seenCorrelation
	seenInReplyTo
	seenType
	seenFrom
	seenTo
	seenPriority
	seenContent
	seenMetadata
	seenTTL
	seenRequiresAck
	seenAckTimeout
	seenDeliveryCount
	seenIdempotencyKey
	seenSequence
	seenTimestamp
)

// DecodeParts reads a message as UnmarshalJSON does, except that the
// values of its content and metadata are read by content and metadata
// (each called once, with the Decoder at the value, which it must read
// or Fail) instead of into the message's maps, which stay nil; ok is false
// for anything but the form MarshalJSON writes, a value either reader
// failed, or a message UnmarshalJSON refuses, which UnmarshalJSON then
// reads (and words the error of). Package wire reads work this way,
// straight into its task: the two maps and the values boxed in them were
// most of the garbage of decoding work taken from NATS.
func DecodeParts(b []byte, content, metadata func(d *jsonv.Decoder)) (m Message, ok bool) {
	if content == nil || metadata == nil {
		return Message{}, false
	}
	w, ok := decodeWire(b, content, metadata)
	if !ok || m.fromWire(&w) != nil {
		return Message{}, false
	}
	return m, true
}

// decodeWire reads a message in the regular form without reflection; ok
// is false for anything else, which encoding/json then reads. The values
// of content and metadata are read into maps, or by the given readers.
func decodeWire(b []byte, content, metadata func(d *jsonv.Decoder)) (w messageWire, ok bool) {
	d := jsonv.NewDecoder(b)
	seen := 0
	str := func(bit int, dst *string) {
		if seen&bit != 0 {
			d.Fail()
		}
		seen |= bit
		*dst = d.String()
	}
	raw := func(bit int, dst *json.RawMessage) {
		if seen&bit != 0 {
			d.Fail()
		}
		seen |= bit
		r := d.Raw()
		if len(r) == 0 || (r[0] != '"' && r[0] != '-' && (r[0] < '0' || r[0] > '9')) {
			d.Fail()
		}
		*dst = r
	}
	mark := func(bit int) {
		if seen&bit != 0 {
			d.Fail()
		}
		seen |= bit
	}
	d.Object(func(key string) {
		switch key {
		case "message_id":
			str(seenID, &w.MessageID)
		case "conversation_id":
			mark(seenConversation)
			w.ConversationID = d.StringOr(w.MessageID) // most often the message's own id
		case "correlation_id":
			str(seenCorrelation, &w.CorrelationID)
		case "in_reply_to":
			str(seenInReplyTo, &w.InReplyTo)
		case "message_type":
			var s string
			str(seenType, &s)
			w.Type = MessageType(s)
		case "from_agent":
			str(seenFrom, &w.From)
		case "to_agent":
			str(seenTo, &w.To)
		case "priority":
			var s string
			str(seenPriority, &s)
			p, err := ParsePriority(s)
			if err != nil {
				d.Fail()
			}
			w.Priority = p
		case "content":
			mark(seenContent)
			if content != nil {
				content(d)
			} else {
				w.Content = d.Map()
			}
		case "metadata":
			mark(seenMetadata)
			if metadata != nil {
				metadata(d)
			} else {
				w.Metadata = d.Map()
			}
		case "ttl":
			raw(seenTTL, &w.TTL)
		case "requires_ack":
			mark(seenRequiresAck)
			w.RequiresAck = d.Bool()
		case "ack_timeout":
			raw(seenAckTimeout, &w.AckTimeout)
		case "delivery_count":
			mark(seenDeliveryCount)
			w.DeliveryCount = int(d.Int())
		case "idempotency_key":
			str(seenIdempotencyKey, &w.IdempotencyKey)
		case "sequence":
			mark(seenSequence)
			w.Sequence = d.Int()
		case "timestamp":
			str(seenTimestamp, &w.Timestamp)
		default:
			d.Fail()
		}
	})
	d.End()
	return w, d.OK()
}

// fromWire sets m from its wire shape.
func (m *Message) fromWire(w *messageWire) error {
	ttl, err := parseSeconds("ttl", w.TTL)
	if err != nil {
		return err
	}
	ackTimeout, err := parseSeconds("ack_timeout", w.AckTimeout)
	if err != nil {
		return err
	}
	ts, err := parseTimestamp(w.Timestamp)
	if err != nil {
		return err
	}
	if len(w.Metadata) == 0 {
		w.Metadata = nil // "metadata": {} and no metadata are the same message
	}
	*m = Message{
		MessageID:      w.MessageID,
		ConversationID: w.ConversationID,
		CorrelationID:  w.CorrelationID,
		InReplyTo:      w.InReplyTo,
		Type:           w.Type,
		From:           w.From,
		To:             w.To,
		Priority:       w.Priority,
		Content:        w.Content,
		Metadata:       w.Metadata,
		TTL:            ttl,
		RequiresAck:    w.RequiresAck,
		AckTimeout:     ackTimeout,
		DeliveryCount:  w.DeliveryCount,
		IdempotencyKey: w.IdempotencyKey,
		Sequence:       w.Sequence,
		Timestamp:      ts,
	}
	return nil
}

// formatSeconds writes d as exact decimal seconds: 60, 0.5, 1.000000001.
func formatSeconds(d time.Duration) string {
	neg := d < 0
	u := uint64(d)
	if neg {
		u = -u
	}
	sec, frac := u/uint64(time.Second), u%uint64(time.Second)
	var buf []byte
	if neg {
		buf = append(buf, '-')
	}
	buf = strconv.AppendUint(buf, sec, 10)
	if frac != 0 {
		f := strconv.AppendUint(nil, frac+uint64(time.Second), 10)[1:] // 9 digits, zero-padded
		buf = append(buf, '.')
		buf = append(buf, bytes.TrimRight(f, "0")...)
	}
	return string(buf)
}

// parseSeconds reads a duration field (ttl, ack_timeout): absent or null is
// zero, a string is a Go duration, a number is seconds (exact to the
// nanosecond when written without an exponent).
func parseSeconds(field string, raw json.RawMessage) (time.Duration, error) {
	d, err := parseDuration(raw)
	if ve, ok := err.(*ValidationError); ok {
		ve.Field = field
	}
	return d, err
}

func ttlError(reason string) error { return &ValidationError{Field: "ttl", Reason: reason} }

func parseDuration(raw json.RawMessage) (time.Duration, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return 0, nil
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return 0, ttlError("must be seconds or a duration string")
		}
		d, err := time.ParseDuration(s)
		if err != nil {
			return 0, ttlError("is not a duration: " + strconv.Quote(s))
		}
		return d, nil
	}
	s := string(raw)
	if strings.ContainsAny(s, "eE") {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return 0, ttlError("must be seconds or a duration string")
		}
		ns := math.Round(f * float64(time.Second))
		if math.IsNaN(ns) || ns >= 1<<63 || ns < -(1<<63) {
			return 0, ttlError("is out of range")
		}
		return time.Duration(ns), nil
	}
	return parseDecimalSeconds(s)
}

// parseDecimalSeconds parses [-]digits[.digits] seconds exactly; digits past
// the ninth decimal are refused rather than rounded.
func parseDecimalSeconds(s string) (time.Duration, error) {
	neg := strings.HasPrefix(s, "-")
	if neg {
		s = s[1:]
	}
	whole, frac, hasFrac := strings.Cut(s, ".")
	if whole == "" || (hasFrac && frac == "") || !allDigits(whole) || !allDigits(frac) {
		return 0, ttlError("must be seconds or a duration string")
	}
	if len(frac) > 9 {
		return 0, ttlError("is finer than a nanosecond")
	}
	sec, err := strconv.ParseUint(whole, 10, 64)
	if err != nil || sec > math.MaxInt64/uint64(time.Second) {
		return 0, ttlError("is out of range")
	}
	var frac9 uint64
	if frac != "" {
		frac9, _ = strconv.ParseUint(frac+strings.Repeat("0", 9-len(frac)), 10, 64)
	}
	total := sec*uint64(time.Second) + frac9
	limit := uint64(math.MaxInt64)
	if neg {
		limit++ // -2^63 is representable
	}
	if total > limit {
		return 0, ttlError("is out of range")
	}
	if neg {
		return time.Duration(-int64(total-1) - 1), nil
	}
	return time.Duration(total), nil
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// parseTimestamp reads an ISO 8601 timestamp; empty means "not set".
func parseTimestamp(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t, err = time.Parse(timestampLayoutNoZone, s)
		if err != nil {
			return time.Time{}, &ValidationError{Field: "timestamp", Reason: "is not ISO 8601: " + strconv.Quote(s)}
		}
	}
	u := t.UTC()
	if y := u.Year(); y < 0 || y > 9999 {
		// Its offset moves it out of the years RFC 3339 writes
		// ("0000-01-01T00:00:00+01:00"): the message would be written with
		// a timestamp that cannot be read back.
		return time.Time{}, &ValidationError{Field: "timestamp", Reason: "is outside the years 0000 to 9999 in UTC: " + strconv.Quote(s)}
	}
	return u, nil
}
