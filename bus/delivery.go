package bus

import (
	"container/heap"
	"context"
	"strconv"
	"time"

	"github.com/batonhq/baton/transport"
	"go.uber.org/zap"
)

// deadNote is a dead letter to log once the locks are released.
type deadNote struct {
	m      *transport.Message
	reason transport.DeadLetterReason
	err    string
}

// flight is a requires_ack message that was delivered and not yet
// acknowledged. While the receiver holds it, it sits in its mailbox's due
// heap; once its ack timeout passes (or the receiver nacks it) a copy with
// the next delivery count goes back to the head of the mailbox and the
// flight is "queued" until that copy is taken.
type flight struct {
	m        *transport.Message // the copy last handed out, or the one queued for redelivery
	deadline int64              // ticks (tick.go)
	idx      int                // index in mailbox.due; -1 while queued
	queued   bool
}

// flightHeap orders in-flight messages by ack deadline.
type flightHeap []*flight

func (h flightHeap) Len() int           { return len(h) }
func (h flightHeap) Less(i, j int) bool { return h[i].deadline < h[j].deadline }
func (h flightHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].idx, h[j].idx = i, j
}
func (h *flightHeap) Push(x any) {
	f := x.(*flight)
	f.idx = len(*h)
	*h = append(*h, f)
}
func (h *flightHeap) Pop() any {
	old := *h
	f := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	f.idx = -1
	return f
}

// maxSpareFlights bounds the flights a mailbox keeps for reuse.
const maxSpareFlights = 64

// newFlightLocked returns a flight for m, reusing one of an acknowledged
// message when the mailbox has one: a requires_ack message then costs no
// allocation of the bus's (measured: one of the ack case's two).
func (mb *mailbox) newFlightLocked(m *transport.Message) *flight {
	if n := len(mb.spare); n > 0 {
		f := mb.spare[n-1]
		mb.spare[n-1] = nil
		mb.spare = mb.spare[:n-1]
		f.m = m
		return f
	}
	return &flight{m: m}
}

// recycleLocked keeps f, which left flight and is referenced no more, for
// newFlightLocked.
func (mb *mailbox) recycleLocked(f *flight) {
	if len(mb.spare) < maxSpareFlights {
		*f = flight{idx: -1}
		mb.spare = append(mb.spare, f)
	}
}

// trackLocked puts a requires_ack message being delivered in flight and
// reports whether it did; a message that is not tracked counts as delivered
// at once. That happens only when a different message with the same id is
// already in flight.
func (b *Bus) trackLocked(mb *mailbox, m *transport.Message, now int64) bool {
	f := mb.unacked[m.MessageID]
	switch {
	case f == nil:
		if mb.unacked == nil {
			mb.unacked = make(map[string]*flight)
		}
		f = mb.newFlightLocked(m)
		mb.unacked[m.MessageID] = f
		m.DeliveryCount = 1
	case f.queued && f.m == m:
		f.queued = false
	default:
		return false
	}
	timeout := m.AckTimeout
	if timeout <= 0 {
		timeout = b.cfg.ackTimeout
	}
	f.deadline = now + int64(timeout)
	heap.Push(&mb.due, f)
	mb.c.inflight++
	b.armAckTimerLocked(mb, f.deadline, now)
	return true
}

// armAckTimerLocked makes sure the mailbox's ack timer fires by at. One
// timer per mailbox serves all its in-flight messages: it is re-armed only
// when a deadline earlier than the armed one appears.
func (b *Bus) armAckTimerLocked(mb *mailbox, at, now int64) {
	if mb.ackTimer != nil && mb.ackAt <= at {
		return
	}
	mb.ackTimer.stop()
	mb.ackGen++
	gen := mb.ackGen
	mb.ackAt = at
	mb.ackTimer = b.timers.after(time.Duration(at-now), func() { b.ackTimeouts(mb, gen) })
}

// ackTimeouts redelivers, or dead-letters, every in-flight message of mb
// whose ack deadline has passed, then re-arms the timer for the next one.
func (b *Bus) ackTimeouts(mb *mailbox, gen uint64) {
	at := b.clock.Now()
	now := b.tickOf(at)
	var dead []deadNote
	mb.mu.Lock()
	if mb.ackGen == gen {
		mb.ackTimer = nil
	}
	if mb.closed {
		mb.mu.Unlock()
		return
	}
	for len(mb.due) > 0 && mb.due[0].deadline <= now {
		f := heap.Pop(&mb.due).(*flight)
		if d, ok := b.redeliverLocked(mb, f, now, at, "ack timeout"); ok {
			dead = append(dead, d)
		}
	}
	if len(mb.due) > 0 {
		b.armAckTimerLocked(mb, mb.due[0].deadline, now)
	}
	mb.mu.Unlock()
	for _, d := range dead {
		b.logDeadLetter(d.m, d.reason, d.err)
	}
	b.flush()
}

// redeliverLocked takes f out of flight (the caller has removed it from the
// due heap) and queues a copy with the next delivery count at the head of
// its priority, or dead-letters the message "max_retries" when it has been
// delivered the maximum number of times. It reports the dead letter, if
// any, for the caller to log once the lock is released.
func (b *Bus) redeliverLocked(mb *mailbox, f *flight, now int64, at time.Time, why string) (deadNote, bool) {
	mb.c.inflight--
	if f.m.DeliveryCount >= b.cfg.maxDeliveries {
		delete(mb.unacked, f.m.MessageID)
		d := f.m.Clone()
		lastErr := "bus: not acknowledged after " + strconv.Itoa(d.DeliveryCount) + " deliveries (" + why + ")"
		b.deadLetterLocked(&mb.c, d, transport.ReasonMaxRetries, d.DeliveryCount, lastErr, at)
		return deadNote{d, transport.ReasonMaxRetries, lastErr}, true
	}
	c := f.m.Clone()
	c.DeliveryCount = f.m.DeliveryCount + 1
	f.m, f.queued = c, true
	b.pushLocked(mb, entry{m: c, enq: now, exp: expiryTick(c, at, now)}, true)
	b.redeliveries.Add(1)
	if ce := b.log.Check(zap.DebugLevel, "message redelivered"); ce != nil {
		ce.Write(zap.String("category", "redelivery"), messageFields(c),
			zap.Int("delivery_count", c.DeliveryCount), zap.String("reason", why))
	}
	return deadNote{}, false
}

// forgetFlightLocked drops the flight of a message that leaves the mailbox
// without being delivered (expired while queued for redelivery).
func (b *Bus) forgetFlightLocked(mb *mailbox, m *transport.Message) {
	if f := mb.unacked[m.MessageID]; f != nil && f.m == m {
		delete(mb.unacked, m.MessageID)
	}
}

// inFlight returns the mailbox of a received requires_ack message, checking
// the arguments of Ack, Nack and Reject.
func (b *Bus) inFlight(m *transport.Message) (*mailbox, error) {
	if m == nil {
		return nil, &transport.ValidationError{Field: "message", Reason: "is required"}
	}
	if !m.RequiresAck {
		return nil, &transport.ValidationError{Field: "requires_ack", Reason: "is false: nothing to acknowledge"}
	}
	return b.mailboxFor(m.To)
}

func notAwaiting(m *transport.Message) error {
	return &transport.ValidationError{Field: "message_id", Reason: "is not awaiting an acknowledgement: " + m.MessageID}
}

// Ack acknowledges a received message that has requires_ack set: the message leaves flight, counts as delivered, and its
// sender receives an ACK from its receiver whose correlation_id and
// in_reply_to are the message's id (when the sender has a mailbox, unless
// WithAckMessages(false)). Any
// delivery of the message may be acknowledged, even one whose ack timeout
// has passed: if its redelivery is still queued, it is withdrawn. A message
// that does not require an acknowledgement, or is not awaiting one (already
// acknowledged, rejected or dead-lettered), is a *ValidationError.
func (b *Bus) Ack(ctx context.Context, m *transport.Message) error {
	if ctx == nil {
		return checkCtx(ctx)
	}
	mb, err := b.inFlight(m)
	if err != nil {
		return err
	}
	at := b.clock.Now()
	mb.mu.Lock()
	f := mb.unacked[m.MessageID]
	if f == nil {
		mb.mu.Unlock()
		return notAwaiting(m)
	}
	delete(mb.unacked, m.MessageID)
	if f.queued {
		queued := f.m
		mb.queue.RemoveIf(queued.Priority, func(e entry) bool { return e.m == queued })
		mb.c.depth--
		b.total.Add(-1)
	} else {
		heap.Remove(&mb.due, f.idx)
		mb.c.inflight--
	}
	mb.c.delivered++
	mb.recycleLocked(f)
	mb.mu.Unlock()

	b.acks.Add(1)
	b.ackLatency.record(at.Sub(m.Timestamp))
	if b.cfg.noAckMessages || !b.notifiable(m) {
		b.flush()
		return nil
	}
	return b.Send(ctx, m.Notice(transport.MessageAck, map[string]any{"action": "ack", "status": "received"}))
}

// Nack hands a received requires_ack message back: it is delivered again
// at once, at the head of its priority, with the next delivery count, or
// dead-lettered "max_retries" if it has been delivered the maximum number
// of times (WithMaxDeliveries). Only the delivery in hand may be nacked.
func (b *Bus) Nack(ctx context.Context, m *transport.Message) error {
	if ctx == nil {
		return checkCtx(ctx)
	}
	mb, err := b.inFlight(m)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	at := b.clock.Now()
	mb.mu.Lock()
	f := mb.unacked[m.MessageID]
	if f == nil || f.queued || f.m != m {
		mb.mu.Unlock()
		return notAwaiting(m)
	}
	heap.Remove(&mb.due, f.idx)
	dead, isDead := b.redeliverLocked(mb, f, b.tickOf(at), at, "nack")
	mb.mu.Unlock()
	b.nacks.Add(1)
	if isDead {
		b.logDeadLetter(dead.m, dead.reason, dead.err)
	}
	b.flush()
	return nil
}

// Reject refuses a received requires_ack message for good: it is
// dead-lettered "rejected" with reason as its last error, and its sender
// receives an ERROR (action "rejected", correlation_id and in_reply_to the
// message's id, content "error" the reason) when it has a mailbox (a
// waiting request of package bus/feature gets it from feature.Requests).
// Only the delivery in hand may be rejected.
//
// Any error but a *NoticeError means the message was not rejected. A
// *NoticeError (matching ErrNotice) means it was rejected and dead-lettered,
// and only sending the ERROR to its sender failed.
func (b *Bus) Reject(ctx context.Context, m *transport.Message, reason string) error {
	if ctx == nil {
		return checkCtx(ctx)
	}
	mb, err := b.inFlight(m)
	if err != nil {
		return err
	}
	if reason == "" {
		reason = "rejected by " + m.To
	}
	at := b.clock.Now()
	mb.mu.Lock()
	f := mb.unacked[m.MessageID]
	if f == nil || f.queued || f.m != m {
		mb.mu.Unlock()
		return notAwaiting(m)
	}
	heap.Remove(&mb.due, f.idx)
	delete(mb.unacked, m.MessageID)
	mb.c.inflight--
	d := m.Clone()
	b.deadLetterLocked(&mb.c, d, transport.ReasonRejected, d.DeliveryCount, reason, at)
	mb.mu.Unlock()
	b.rejects.Add(1)
	b.logDeadLetter(d, transport.ReasonRejected, reason)
	if !b.notifiable(m) {
		b.flush()
		return nil
	}
	err = b.Send(ctx, m.Notice(transport.MessageError, map[string]any{"action": "rejected", "error": reason, "message_id": m.MessageID}))
	if err != nil {
		return &NoticeError{MessageID: m.MessageID, To: m.From, Err: err}
	}
	return nil
}

// notifiable reports whether the sender of m can be told about it: it has
// a mailbox. Without one, an ACK or ERROR would only be dead-lettered
// "receiver_not_found".
func (b *Bus) notifiable(m *transport.Message) bool { return b.lookup(m.From) != nil }
