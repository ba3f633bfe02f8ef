package natsbus

import (
	"context"
	"time"

	"github.com/batonhq/baton/transport"
	"github.com/google/uuid"
)

// refusedSuffix ends the subject of a dead letter DeadLetterWork
// publishes (baton.dead.<agent>.<reason>.refused): its message was never
// stored in a work stream, though its reason (max_retries) is one a stored
// message may have too, and Metrics must count it accepted as well as
// dead-lettered.
const refusedSuffix = ".refused"

// DeadLetterWork validates m, fills it as SendWork does, and publishes it
// to the dead-letter stream with reason, without storing it in a work
// stream: a sender that kept m back (sender retries offering it to a full
// stream) gives up on it. Metrics count it accepted and dead-lettered, as
// they count a message refused by a full stream.
func (t *Transport) DeadLetterWork(ctx context.Context, m *transport.Message, reason transport.DeadLetterReason, attempts int, lastErr string) error {
	if ctx == nil {
		return &transport.ValidationError{Field: "ctx", Reason: "is nil"}
	}
	if t.isClosed() {
		return transport.ErrClosed
	}
	if err := m.Validate(); err != nil {
		t.invalid.Add(1)
		return err
	}
	m.Fill(time.Now(), uuid.NewString)
	refused := reason != transport.ReasonQueueOverflow && reason != transport.ReasonReceiverNotFound
	return t.deadLetter(ctx, dead{m: m, reason: reason, attempts: attempts, lastErr: lastErr, refused: refused})
}

var _ transport.DeadLetterer = (*Transport)(nil)
