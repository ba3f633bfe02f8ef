package feature

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/batonhq/baton/clock"
	"github.com/batonhq/baton/transport"
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

// DefaultDeadLetterLimit bounds the dead letters, and the audit records,
// DeadLetters holds; the oldest are dropped first.
const DefaultDeadLetterLimit = 10000

// DeadLetterPolicy drives dead-letter processing and alerting. Zero fields
// take the defaults.
type DeadLetterPolicy struct {
	// Periodic makes DeadLetters run ProcessDeadLetters every Interval on
	// a timer it owns and Close stops; without it, processing runs when
	// ProcessDeadLetters is called.
	Periodic bool
	// Interval is how often Periodic processing runs (5 minutes by
	// default).
	Interval time.Duration
	// MaxRetries is how many times a retryable dead letter is sent again
	// (3 by default).
	MaxRetries int
	// Backoff is the wait before the first retry; it doubles for each
	// further one (1 minute by default).
	Backoff time.Duration
	// StaleAfter is the age, in multiples of a message's TTL, past which a
	// dead letter is discarded with an audit record (2 by default).
	StaleAfter float64
	// AlertThreshold is how many dead letters within AlertWindow are
	// tolerated: one more raises an alert (10 by default).
	AlertThreshold int
	// AlertWindow is the sliding window of the alert (5 minutes by default).
	AlertWindow time.Duration
	// Limit bounds the dead letters held and the audit records kept
	// (DefaultDeadLetterLimit by default).
	Limit int
	// Logger receives an entry per pass that did something and per alert;
	// nil logs nothing.
	Logger *zap.Logger
}

func (p DeadLetterPolicy) withDefaults() DeadLetterPolicy {
	if p.Interval <= 0 {
		p.Interval = 5 * time.Minute
	}
	if p.MaxRetries <= 0 {
		p.MaxRetries = 3
	}
	if p.Backoff <= 0 {
		p.Backoff = time.Minute
	}
	if p.StaleAfter <= 0 {
		p.StaleAfter = 2
	}
	if p.AlertThreshold <= 0 {
		p.AlertThreshold = 10
	}
	if p.AlertWindow <= 0 {
		p.AlertWindow = 5 * time.Minute
	}
	if p.Limit <= 0 {
		p.Limit = DefaultDeadLetterLimit
	}
	if p.Logger == nil {
		p.Logger = zap.NewNop()
	}
	return p
}

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
	// acceptance of the transport; one that fails again is dead-lettered
	// again with its Retries increased, and comes back to the queue.
	Retried int
	// Discarded counts stale dead letters discarded with an audit record.
	Discarded int
	// Held is the number of dead letters held after the pass.
	Held int
}

// DeadLetterStats are the counters of DeadLetters.
type DeadLetterStats struct {
	// Retried and Stale count dead letters processing sent again or
	// discarded as stale; Requeued and Discarded those Requeue and Discard
	// took.
	Retried, Stale, Requeued, Discarded uint64
	// Alerts counts the alerts raised and Passes the processing passes.
	Alerts, Passes uint64
	// Held is the number of dead letters held now.
	Held int
}

// heldLetter is a dead letter waiting for processing, with when it arrived.
type heldLetter struct {
	transport.DeadLetter
	arrived time.Time
}

// DeadLetters is a transport that processes its dead letters: it hears of
// every dead letter of the inner transport (OnDeadLetter) and holds them,
// sends the retryable ones again with a growing backoff, discards the
// stale ones, keeps an audit trail of what it did, and raises an alert
// when dead letters arrive too fast. The inner transport keeps its own
// record of every dead letter (the bus's DeadLetters, natsbus's stream);
// DeadLetters holds those still to be processed.
type DeadLetters struct {
	transport.Transport
	p   DeadLetterPolicy
	clk clock.Clock
	log *zap.Logger

	mu     sync.Mutex
	items  []heldLetter
	audit  []DeadLetterAudit
	recent []time.Time // ring of the last AlertThreshold+1 arrivals
	next   int         // ring slot to overwrite
	last   time.Time   // of the last alert
	closed bool
	timer  clock.Timer
	subs   callbacks[DeadLetterAlert] // OnDeadLetterAlert's
	unsub  func()

	passMu sync.Mutex     // one pass at a time; Close waits for the running one
	timers sync.WaitGroup // the periodic pass's timer, set or running

	retried, stale, requeued, discarded, alerts, passes atomic.Uint64
}

// NewDeadLetters returns inner with dead-letter processing under p's
// policy, timed by clk (nil: clock.Real()). It subscribes to inner's dead
// letters until Close.
func NewDeadLetters(inner transport.Transport, p DeadLetterPolicy, clk clock.Clock) *DeadLetters {
	if clk == nil {
		clk = clock.Real()
	}
	p = p.withDefaults()
	d := &DeadLetters{Transport: inner, p: p, clk: clk, log: p.Logger,
		recent: make([]time.Time, 0, p.AlertThreshold+1)}
	d.unsub = inner.OnDeadLetter(d.arrive)
	if p.Periodic {
		d.mu.Lock()
		d.scheduleLocked()
		d.mu.Unlock()
	}
	return d
}

// scheduleLocked sets the timer of the next periodic pass.
func (d *DeadLetters) scheduleLocked() {
	d.timers.Add(1)
	d.timer = d.clk.AfterFunc(d.p.Interval, func() {
		defer d.timers.Done()
		_, _ = d.ProcessDeadLetters(context.Background())
		d.mu.Lock()
		defer d.mu.Unlock()
		if !d.closed {
			d.scheduleLocked()
		}
	})
}

// arrive holds a dead letter of the inner transport and raises an alert
// when it makes more than AlertThreshold within AlertWindow (at most one
// alert per window).
func (d *DeadLetters) arrive(dl transport.DeadLetter) {
	at := d.clk.Now()
	dl.Retries = max(dl.Retries, dl.Message.DeadLetterRetries())
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return
	}
	d.holdLocked(heldLetter{dl, at})
	if len(d.recent) < cap(d.recent) {
		d.recent = append(d.recent, at)
		d.next = len(d.recent) % cap(d.recent)
	} else {
		d.recent[d.next] = at
		d.next = (d.next + 1) % len(d.recent)
	}
	if len(d.recent) < cap(d.recent) {
		d.mu.Unlock()
		return
	}
	oldest := d.recent[d.next]
	if at.Sub(oldest) > d.p.AlertWindow || (!d.last.IsZero() && at.Sub(d.last) < d.p.AlertWindow) {
		d.mu.Unlock()
		return
	}
	d.last = at
	a := DeadLetterAlert{Count: len(d.recent), Threshold: d.p.AlertThreshold, Window: d.p.AlertWindow, Since: oldest.UTC(), At: at.UTC()}
	d.mu.Unlock()
	d.alerts.Add(1)
	if ce := d.log.Check(zap.WarnLevel, "dead-letter alert"); ce != nil {
		ce.Write(zap.String("category", "dead_letter"), zap.Int("count", a.Count),
			zap.Int("threshold", a.Threshold), zap.Duration("window", a.Window), zap.Time("since", a.Since))
	}
	d.subs.call(a)
}

func (d *DeadLetters) holdLocked(h heldLetter) {
	if len(d.items) >= d.p.Limit {
		// Drop the oldest by moving the slice's start: append reallocates
		// now and then, so a full queue costs O(1) amortised per letter.
		d.items[0] = heldLetter{}
		d.items = d.items[1:]
	}
	d.items = append(d.items, h)
}

func (d *DeadLetters) recordLocked(a DeadLetterAudit) {
	if len(d.audit) >= d.p.Limit {
		d.audit[0] = DeadLetterAudit{}
		d.audit = d.audit[1:]
	}
	d.audit = append(d.audit, a)
}

func (d *DeadLetters) record(a DeadLetterAudit) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.recordLocked(a)
}

func auditOf(h heldLetter, action string, at time.Time, detail string) DeadLetterAudit {
	m := h.Message
	return DeadLetterAudit{
		MessageID: m.MessageID, From: m.From, To: m.To, Type: m.Type, Reason: h.Reason, Action: action,
		Retries: h.Retries, Age: at.Sub(m.Timestamp), At: at.UTC(), Detail: detail,
	}
}

// ProcessDeadLetters makes one pass over the dead letters held:
//   - a dead letter whose message is older than StaleAfter times its TTL is
//     discarded, with an audit record;
//   - a retryable one (see transport.DeadLetter.Retryable) sent again fewer
//     than MaxRetries times, whose backoff has passed (Backoff, doubled for
//     each earlier retry, counted from when it arrived), is sent again with
//     its original timestamp and metadata "dead_letter_retries" increased,
//     and an audit record; if the transport refuses it without accepting it
//     (an open circuit, a closed transport) it stays held as it was;
//   - the others stay.
//
// A closed DeadLetters returns transport.ErrClosed.
func (d *DeadLetters) ProcessDeadLetters(ctx context.Context) (DeadLetterReport, error) {
	if ctx == nil {
		return DeadLetterReport{}, &transport.ValidationError{Field: "ctx", Reason: "is required"}
	}
	if err := ctx.Err(); err != nil {
		return DeadLetterReport{}, err
	}
	d.passMu.Lock()
	defer d.passMu.Unlock()
	at := d.clk.Now()
	var rep DeadLetterReport
	var retry []heldLetter
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return DeadLetterReport{}, transport.ErrClosed
	}
	kept := d.items[:0]
	for _, h := range d.items {
		switch {
		case at.Sub(h.Message.Timestamp) > time.Duration(d.p.StaleAfter*float64(ttlOf(h.Message))):
			d.recordLocked(auditOf(h, AuditDiscardedStale, at, ""))
			rep.Discarded++
		case h.Retryable() && h.Retries < d.p.MaxRetries && !at.Before(h.arrived.Add(d.p.Backoff<<h.Retries)):
			retry = append(retry, h)
		default:
			kept = append(kept, h)
		}
	}
	clear(d.items[len(kept):])
	d.items = kept
	d.mu.Unlock()
	d.stale.Add(uint64(rep.Discarded))

	for _, h := range retry {
		m := h.Message.Clone()
		if m.Metadata == nil {
			m.Metadata = make(map[string]any, 1)
		}
		m.Metadata[transport.MetadataDeadLetterRetries] = h.Retries + 1
		resendKey(m, retrySuffix+strconv.Itoa(h.Retries+1))
		err := d.Transport.SendWork(ctx, m)
		if !acceptedDespite(err) {
			d.mu.Lock()
			d.holdLocked(h)
			d.mu.Unlock()
			continue
		}
		detail := ""
		if err != nil {
			detail = err.Error()
		}
		d.record(auditOf(h, AuditRetried, at, detail))
		rep.Retried++
	}
	d.retried.Add(uint64(rep.Retried))
	d.passes.Add(1)
	d.mu.Lock()
	rep.Held = len(d.items)
	d.mu.Unlock()
	if ce := d.log.Check(zap.InfoLevel, "dead letters processed"); ce != nil && rep.Retried+rep.Discarded > 0 {
		ce.Write(zap.String("category", "dead_letter"), zap.Int("retried", rep.Retried),
			zap.Int("discarded", rep.Discarded), zap.Int("held", rep.Held))
	}
	return rep, nil
}

// acceptedDespite reports whether a send that returned err still accepted
// its message (it was then queued, or dead-lettered again, which brings it
// back here).
func acceptedDespite(err error) bool {
	return err == nil || errors.Is(err, transport.ErrQueueFull) || errors.Is(err, transport.ErrRouting) ||
		errors.Is(err, transport.ErrUnknownAgent)
}

func ttlOf(m *transport.Message) time.Duration {
	if m.TTL > 0 {
		return m.TTL
	}
	return transport.DefaultTTL
}

// Held returns the dead letters waiting for processing, oldest first. The
// messages are the transport's copies: treat them as read-only.
func (d *DeadLetters) Held() []transport.DeadLetter {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]transport.DeadLetter, len(d.items))
	for i, h := range d.items {
		out[i] = h.DeadLetter
	}
	return out
}

// take removes and returns the oldest dead letter held whose message has id.
func (d *DeadLetters) take(id string) (heldLetter, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return heldLetter{}, transport.ErrClosed
	}
	for i, h := range d.items {
		if h.Message.MessageID == id {
			d.items = append(d.items[:i], d.items[i+1:]...)
			return h, nil
		}
	}
	return heldLetter{}, &DeadLetterNotFoundError{MessageID: id}
}

// Requeue takes the dead letter of message id out of those held and sends
// it again with a fresh timestamp (so a message that expired gets its whole
// TTL again), with an audit record. If the send fails the message is
// dead-lettered again (and held again) and the error is returned. An id not
// held returns an error matching ErrDeadLetterNotFound.
func (d *DeadLetters) Requeue(ctx context.Context, id string) error {
	if ctx == nil {
		return &transport.ValidationError{Field: "ctx", Reason: "is required"}
	}
	h, err := d.take(id)
	if err != nil {
		return err
	}
	d.requeued.Add(1)
	d.record(auditOf(h, AuditRequeued, d.clk.Now(), ""))
	m := h.Message.Clone()
	m.Timestamp = time.Time{}
	resendKey(m, requeueSuffix+strconv.FormatInt(h.arrived.UnixNano(), 10))
	return d.Transport.SendWork(ctx, m)
}

// resendKey gives m, sent again from the dead letters, an idempotency key
// of its own: its first key (or its id) with suffix, in place of an
// earlier resend's suffix. Under its first key a transport that remembers
// keys past a dead letter would drop it as a duplicate of the message that
// died: natsbus's work streams remember every key they stored for
// Config.DedupWindow, including that of work delivered and dead-lettered
// max_retries. A retry's suffix is its number, so that two processes
// retrying the same dead letter are still one send; a requeue's is when
// this DeadLetters heard of the letter. The metadata's idempotency_key,
// which the engine's steps go by, is not changed.
func resendKey(m *transport.Message, suffix string) {
	key := m.Key()
	if key == "" {
		key = m.MessageID
	}
	for _, s := range [...]string{retrySuffix, requeueSuffix} {
		if i := strings.Index(key, s); i >= 0 {
			key = key[:i]
		}
	}
	m.IdempotencyKey = key + suffix
}

// The suffixes of the keys of resent dead letters.
const (
	retrySuffix   = "/dead-letter-retry-"
	requeueSuffix = "/requeued-"
)

// Discard drops the dead letter of message id from those held, with an
// audit record; the transport's own record of it stays. An id not held
// returns an error matching ErrDeadLetterNotFound.
func (d *DeadLetters) Discard(id string) error {
	h, err := d.take(id)
	if err != nil {
		return err
	}
	d.discarded.Add(1)
	d.record(auditOf(h, AuditDiscarded, d.clk.Now(), ""))
	return nil
}

// Audit returns the audit trail of dead-letter actions, oldest first (the
// newest Limit are kept).
func (d *DeadLetters) Audit() []DeadLetterAudit {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]DeadLetterAudit(nil), d.audit...)
}

// OnDeadLetterAlert calls f each time dead letters arrive faster than the
// policy allows (more than AlertThreshold within AlertWindow), until the
// returned function is called. f runs in the goroutine that delivered the
// dead letter (the transport's OnDeadLetter callback) and must not block.
func (d *DeadLetters) OnDeadLetterAlert(f func(DeadLetterAlert)) (cancel func()) {
	return d.subs.add(f)
}

// Stats returns the counters of dead-letter processing.
func (d *DeadLetters) Stats() DeadLetterStats {
	d.mu.Lock()
	held := len(d.items)
	d.mu.Unlock()
	return DeadLetterStats{Retried: d.retried.Load(), Stale: d.stale.Load(), Requeued: d.requeued.Load(),
		Discarded: d.discarded.Load(), Alerts: d.alerts.Load(), Passes: d.passes.Load(), Held: held}
}

// Close stops periodic processing and waits for a pass under way, stops
// listening to the transport's dead letters, and makes ProcessDeadLetters,
// Requeue and Discard return ErrClosed. It does not close the inner
// transport. It is safe to call more than once.
func (d *DeadLetters) Close() error {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return nil
	}
	d.closed = true
	if d.timer != nil && d.timer.Stop() {
		d.timers.Done()
	}
	d.mu.Unlock()
	d.unsub()
	d.timers.Wait()
	d.passMu.Lock() // a pass that started before Close ends first
	d.passMu.Unlock()
	return nil
}

var _ transport.Transport = (*DeadLetters)(nil)
