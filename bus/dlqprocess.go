package bus

import (
	"context"
	"errors"
	"time"

	"github.com/batonhq/baton/transport"
	"go.uber.org/zap"
)

// Actions recorded in the dead-letter audit trail.
const (
	// AuditRetried: processing sent the message again.
	AuditRetried = "retried"
	// AuditDiscardedStale: processing discarded a message older than
	// StaleAfter times its TTL.
	AuditDiscardedStale = "discarded_stale"
	// AuditRequeued: Requeue sent the message again.
	AuditRequeued = "requeued"
	// AuditDiscarded: Discard dropped the message.
	AuditDiscarded = "discarded"
)

// DeadLetterAudit records one action taken on a dead letter.
type DeadLetterAudit struct {
	// MessageID, From and To identify the message.
	MessageID, From, To string
	// Type is the message's type.
	Type transport.MessageType
	// Reason is why it had been dead-lettered.
	Reason transport.DeadLetterReason
	// Action is AuditRetried, AuditDiscardedStale, AuditRequeued or
	// AuditDiscarded.
	Action string
	// Retries is how many times processing had sent it again before.
	Retries int
	// Age is the message's age (since its timestamp) at the action.
	Age time.Duration
	// At is when the action was taken.
	At time.Time
	// Detail is the error of a retry that failed at once, if any.
	Detail string
}

func auditOf(d transport.DeadLetter, action string, at time.Time, detail string) DeadLetterAudit {
	m := d.Message
	return DeadLetterAudit{
		MessageID: m.MessageID, From: m.From, To: m.To, Type: m.Type, Reason: d.Reason, Action: action,
		Retries: d.Retries, Age: at.Sub(m.Timestamp), At: at.UTC(), Detail: detail,
	}
}

// DeadLetterAlert reports dead letters arriving faster than the policy
// allows.
type DeadLetterAlert struct {
	// Count is how many dead letters arrived between Since and At.
	Count int
	// Threshold is the policy's AlertThreshold, which Count exceeds.
	Threshold int
	// Window is the policy's AlertWindow, which At - Since is within.
	Window time.Duration
	// Since and At are when the first and the last of them arrived.
	Since, At time.Time
}

// DeadLetterReport summarises one pass of ProcessDeadLetters.
type DeadLetterReport struct {
	// Retried counts dead letters sent again. Each counts as a new
	// acceptance; one that fails again is dead-lettered again with its
	// Retries increased.
	Retried int
	// Discarded counts stale dead letters discarded with an audit record.
	Discarded int
	// Held is the length of the dead-letter queue after the pass.
	Held int
}

// DeadLetterAudit returns the audit trail of dead-letter actions, oldest
// first (the newest DefaultDeadLetterLimit, or WithDeadLetterLimit, are kept).
func (b *Bus) DeadLetterAudit() []DeadLetterAudit {
	b.dlq.mu.Lock()
	defer b.dlq.mu.Unlock()
	return append([]DeadLetterAudit(nil), b.dlq.audit...)
}

// ProcessDeadLetters makes one pass over the dead-letter queue with the
// bus's DeadLetterPolicy (communication-flow schema §7.3):
//   - a dead letter whose message is older than StaleAfter times its TTL is
//     discarded, with an audit record;
//   - a retryable one (see DeadLetter.Retryable) sent again fewer than
//     MaxRetries times, whose backoff has passed (Backoff, doubled for
//     each earlier retry, counted from when it was dead-lettered), is sent
//     again with its original timestamp and metadata "dead_letter_retries"
//     increased, and an audit record; if the bus refuses it without
//     accepting it (circuit open, closed bus) it stays in the queue as it
//     was;
//   - the others stay.
//
// WithDeadLetterProcessing runs it periodically.
func (b *Bus) ProcessDeadLetters(ctx context.Context) (DeadLetterReport, error) {
	if b.isClosed() {
		return DeadLetterReport{}, transport.ErrClosed
	}
	if err := checkCtx(ctx); err != nil {
		return DeadLetterReport{}, err
	}
	p := b.cfg.dlPolicy
	at := b.clock.Now()
	var rep DeadLetterReport
	var retry []transport.DeadLetter
	b.dlq.mu.Lock()
	kept := b.dlq.items[:0]
	for _, d := range b.dlq.items {
		switch {
		case at.Sub(d.Message.Timestamp) > time.Duration(p.StaleAfter*float64(ttlOf(d.Message))):
			b.dlq.recordLocked(auditOf(d, AuditDiscardedStale, at, ""))
			rep.Discarded++
		case d.Retryable() && d.Retries < p.MaxRetries && !at.Before(d.At.Add(p.Backoff<<d.Retries)):
			retry = append(retry, d)
		default:
			kept = append(kept, d)
		}
	}
	clear(b.dlq.items[len(kept):])
	b.dlq.items = kept
	b.dlq.mu.Unlock()
	b.dlStale.Add(uint64(rep.Discarded))

	for _, d := range retry {
		m := d.Message.Clone()
		if m.Metadata == nil {
			m.Metadata = make(map[string]any, 1)
		}
		m.Metadata[transport.MetadataDeadLetterRetries] = d.Retries + 1
		err := b.Send(ctx, m)
		if !acceptedDespite(err) {
			b.dlq.restore(d)
			continue
		}
		detail := ""
		if err != nil {
			detail = err.Error()
		}
		b.dlq.record(auditOf(d, AuditRetried, at, detail))
		rep.Retried++
	}
	b.dlRetried.Add(uint64(rep.Retried))
	b.dlPasses.Add(1)
	b.dlq.mu.Lock()
	rep.Held = len(b.dlq.items)
	b.dlq.mu.Unlock()
	if ce := b.log.Check(zap.InfoLevel, "dead letters processed"); ce != nil && rep.Retried+rep.Discarded > 0 {
		ce.Write(zap.String("category", "dead_letter"), zap.Int("retried", rep.Retried),
			zap.Int("discarded", rep.Discarded), zap.Int("held", rep.Held))
	}
	return rep, nil
}

// acceptedDespite reports whether a send that returned err still accepted
// its message (it was then queued, deferred, dead-lettered again, or
// acknowledged as a duplicate of one accepted earlier).
func acceptedDespite(err error) bool {
	return err == nil || errors.Is(err, transport.ErrQueueFull) || errors.Is(err, transport.ErrRouting)
}

func ttlOf(m *transport.Message) time.Duration {
	if m.TTL > 0 {
		return m.TTL
	}
	return transport.DefaultTTL
}

// retriesOf reads a message's dead-letter retry count from its metadata.
func retriesOf(m *transport.Message) int {
	switch v := m.Metadata[transport.MetadataDeadLetterRetries].(type) {
	case int:
		return v
	case float64:
		return int(v)
	case int64:
		return int(v)
	}
	return 0
}

func (b *Bus) scheduleDeadLetters() {
	b.timers.after(b.cfg.dlPolicy.Interval, func() {
		_, _ = b.ProcessDeadLetters(context.Background())
		b.scheduleDeadLetters()
	})
}

// raiseAlert counts and, outside the locks, logs and reports an alert.
func (b *Bus) raiseAlert(a DeadLetterAlert) {
	b.dlAlerts.Add(1)
	b.later(func() {
		if ce := b.log.Check(zap.WarnLevel, "dead-letter alert"); ce != nil {
			ce.Write(zap.String("category", "dead_letter"), zap.Int("count", a.Count),
				zap.Int("threshold", a.Threshold), zap.Duration("window", a.Window), zap.Time("since", a.Since))
		}
		for _, f := range b.alertSubscribers() {
			f(a)
		}
	})
}
