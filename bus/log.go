package bus

import (
	"github.com/batonhq/baton/transport"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// Every log entry carries a category and the message's
// from, to, message_id and type; timed operations add a latency. Entries are
// built only when their level is enabled, so a Nop logger costs nothing on
// the hot path.

// messageLog renders a message's identifying fields inline.
type messageLog struct{ m *transport.Message }

// MarshalLogObject adds the message fields to a log entry.
func (l messageLog) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	enc.AddString("from", l.m.From)
	enc.AddString("to", l.m.To)
	enc.AddString("message_id", l.m.MessageID)
	enc.AddString("type", string(l.m.Type))
	enc.AddString("priority", l.m.Priority.String())
	return nil
}

func messageFields(m *transport.Message) zap.Field { return zap.Inline(messageLog{m}) }

func (b *Bus) logDeadLetter(m *transport.Message, reason transport.DeadLetterReason, lastErr string) {
	if ce := b.log.Check(zap.WarnLevel, "message dead-lettered"); ce != nil {
		ce.Write(zap.String("category", "dead_letter"), messageFields(m),
			zap.String("reason", string(reason)), zap.String("last_error", lastErr))
	}
}

// logExpired logs the messages a call found expired, if any: the check is
// inlined, as almost every call has none.
func (b *Bus) logExpired(ms []*transport.Message) {
	if len(ms) > 0 {
		b.logEach(ms)
	}
}

func (b *Bus) logEach(ms []*transport.Message) {
	for _, m := range ms {
		if ce := b.log.Check(zap.WarnLevel, "message expired"); ce != nil {
			ce.Write(zap.String("category", "expiry"), messageFields(m),
				zap.String("reason", string(transport.ReasonTTLExpired)), zap.Duration("ttl", m.TTL),
				zap.Time("timestamp", m.Timestamp))
		}
	}
}

// sendCategory is the log category of a send: "handoff" for a HANDOFF,
// "message" for everything else.
func sendCategory(m *transport.Message) string {
	if m.Type == transport.MessageHandoff {
		return "handoff"
	}
	return "message"
}
