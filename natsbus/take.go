package natsbus

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/batonhq/baton/registry"
	"github.com/batonhq/baton/transport"
	"github.com/batonhq/baton/wire"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"
)

// flight is a requires_ack message this process took and has not settled.
type flight struct {
	m         *transport.Message
	jm        *nats.Msg
	stream    string
	seq       uint64
	delivered int
	deadline  time.Time
	overdue   bool // its ack wait passed: kept one more ack wait for a late ack
	lean      bool // m was read without its content and metadata (message reads them)
	idx       int
}

// message is the message of f whole: a Worker's work is taken without its
// content and metadata (its task holds them), which a dead letter keeps,
// so they are read again from the delivery.
func (f *flight) message() *transport.Message {
	if !f.lean {
		return f.m
	}
	m := whole(f.jm, f.m)
	m.DeliveryCount = f.m.DeliveryCount
	return m
}

// whole reads the message of delivery jm again, content and metadata
// included; lean is what was read of it without them.
func whole(jm *nats.Msg, lean *transport.Message) *transport.Message {
	m := new(transport.Message)
	if err := m.UnmarshalJSON(jm.Data); err != nil {
		return lean // it was read once; it cannot fail now
	}
	return m
}

// flightHeap orders flights by deadline. An entry whose message id maps to
// another flight (settled, or taken again) is stale and skipped.
type flightHeap []*flight

func (h flightHeap) Len() int           { return len(h) }
func (h flightHeap) Less(i, j int) bool { return h[i].deadline.Before(h[j].deadline) }
func (h flightHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i]; h[i].idx, h[j].idx = i, j }
func (h *flightHeap) Push(x any)        { f := x.(*flight); f.idx = len(*h); *h = append(*h, f) }
func (h *flightHeap) Pop() any {
	old := *h
	f := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return f
}

// TakeWork takes up to max messages of agent (all that wait, up to its
// capacity, when max <= 0): the CRITICAL consumer first, then HIGH, NORMAL
// and LOW, in stream order within a level. An expired message is
// dead-lettered "ttl_expired" and removed instead of returned; a message
// delivered more than MaxDeliveries times (its taker died) is
// dead-lettered "max_retries" and removed. A message that does not require
// an ack is acked as it is taken; one that does stays taken until Ack, Nack
// or Reject, and the server gives it out again after the ack wait.
func (t *Transport) TakeWork(ctx context.Context, agent string, max int) ([]*transport.Message, error) {
	return t.take(ctx, agent, max, t.cfg.TakeWait)
}

// take is TakeWork waiting wait at each level that seems empty. The Worker
// polls without waiting: it takes again within milliseconds anyway, and
// waiting at every empty level would halve its throughput.
func (t *Transport) take(ctx context.Context, agent string, max int, wait time.Duration) ([]*transport.Message, error) {
	if ctx == nil {
		return nil, &transport.ValidationError{Field: "ctx", Reason: "is nil"}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	mb, err := t.box(ctx, agent)
	if err != nil {
		return nil, err
	}
	n := max
	if n <= 0 {
		n = mb.capacity
	}
	// A first pass asks each level "no wait" with no expiry: a consumer that
	// knows of messages hands them out however long the server takes to get
	// to the request, so a higher level is never skipped for being slow. Only
	// when every level seemed empty is there a second pass that waits at each
	// level, for work sent just before that the consumers have not heard of.
	out, err := t.takeLevels(ctx, mb, n, 0, wait, nil)
	if err != nil || len(out) > 0 || wait <= 0 {
		return out, err
	}
	return t.takeLevels(ctx, mb, n, wait, 0, nil)
}

// takeTasks is take, without waiting, for a Worker: with each message
// comes its task (in tasks, by index), nil for work wire.DecodeWork left
// to wire.Decode. A message with its task is handed out without its
// content and metadata: decoding them into maps, and the maps into the
// task, was most of the garbage of decoding the work.
func (t *Transport) takeTasks(ctx context.Context, agent string, max int) (out []*transport.Message, tasks []*registry.Task, err error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	mb, err := t.box(ctx, agent)
	if err != nil {
		return nil, nil, err
	}
	out, err = t.takeLevels(ctx, mb, max, 0, 0, &tasks)
	return out, tasks, err
}

// held counts the messages of each level of mb that the stream holds (it
// counts a message as the send returns; a work-queue stream keeps it until
// it is acknowledged), by level subject; nil when the server did not say.
func (t *Transport) held(ctx context.Context, mb *mailbox) map[string]uint64 {
	ctx, cancel := context.WithTimeout(ctx, t.cfg.Timeout)
	defer cancel()
	info, err := mb.stream.Info(ctx, jetstream.WithSubjectFilter(WorkPrefix+Token(mb.agent)+".*"))
	if err != nil {
		return nil
	}
	return info.State.Subjects
}

// unseen reports whether level i of mb holds work its consumer has not
// heard of yet: the stream holds more of the level's messages (held) than
// the consumer has out.
func (t *Transport) unseen(ctx context.Context, mb *mailbox, i int, held map[string]uint64) bool {
	n := held[WorkSubject(mb.agent, levels[i])]
	if n == 0 {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, t.cfg.Timeout)
	defer cancel()
	ci, err := mb.cons[i].Info(ctx)
	return err == nil && n > uint64(ci.NumAckPending)
}

// takeLevels takes up to n messages of mb, highest level first, pulling
// with an expiry of wait (none when zero). With recheck > 0, a level that
// answers it has nothing while the stream holds work of it that its
// consumer has not heard of (sent just before) is asked again, waiting up
// to recheck: a lower level's work is not handed out before it. With
// tasks, the work's tasks are read as the messages are (takeTasks).
func (t *Transport) takeLevels(ctx context.Context, mb *mailbox, n int, wait, recheck time.Duration, tasks *[]*registry.Task) ([]*transport.Message, error) {
	agent := mb.agent
	var out []*transport.Message
	var held map[string]uint64 // read once, at the first level that seems empty
	for i := range levels {
		for len(out) < n {
			want := n - len(out)
			got, err := t.pull(ctx, mb, i, want, wait)
			if err == nil && len(got) < want && recheck > 0 && i < len(levels)-1 && held == nil {
				if held = t.held(ctx, mb); held == nil {
					held = map[string]uint64{}
				}
			}
			if err == nil && len(got) < want && recheck > 0 && i < len(levels)-1 && t.unseen(ctx, mb, i, held) {
				more, merr := t.pull(ctx, mb, i, want-len(got), recheck)
				got, err = append(got, more...), merr
			}
			for _, jm := range got {
				if m, task, ok := t.admit(ctx, mb, jm, tasks != nil); ok {
					out = append(out, m)
					if tasks != nil {
						*tasks = append(*tasks, task)
					}
				}
			}
			if err != nil {
				return out, fmt.Errorf("natsbus: take work of %s: %w", agent, err)
			}
			if len(got) < want {
				break // this level is empty
			}
		}
	}
	return out, nil
}

// pull asks level i's consumer of mb for up to n messages, "no wait",
// with an expiry of wait when wait > 0. Without an expiry the server hands
// out what the consumer knows of, however long it takes to get to the
// request, and answers 404 at once when the consumer believes it has
// nothing; JetStream tells a consumer of a new message a moment after it
// acknowledges the publish, so work sent just before can be missed. With
// an expiry, a consumer that believes it has none waits for it, time
// enough for that news to arrive, and then answers 408; but a server too
// busy to deliver before the expiry answers 408 too, which is why take
// asks without one first.
func (t *Transport) pull(ctx context.Context, mb *mailbox, i, n int, wait time.Duration) ([]*nats.Msg, error) {
	_, bounded := ctx.Deadline()
	var start time.Time
	if !bounded {
		start = time.Now()
	}
	// The messages of a batch arrive with their own subjects and are told
	// apart by their consumer; the status ending it, by the reply token. One
	// pull at a time per consumer keeps the two apart.
	mb.pullMu[i].Lock()
	defer mb.pullMu[i].Unlock()
	// Without a deadline of the caller's, the pull waits at most
	// Config.Timeout, on the level's timer: a context with a timeout made
	// per pull was most of a pull's garbage.
	var expired <-chan time.Time
	if !bounded {
		left := t.cfg.Timeout - time.Since(start)
		if mb.pullTimer[i] == nil {
			mb.pullTimer[i] = time.NewTimer(left)
		} else {
			mb.pullTimer[i].Reset(left)
		}
		defer mb.pullTimer[i].Stop()
		expired = mb.pullTimer[i].C
	}
	token := strconv.FormatUint(t.pullSeq.Add(1), 36)
	key := mb.pullKeys[i]
	// The level's channel serves its pulls in turn (a new one per pull was
	// most of a pull's garbage); it holds n messages and the status that
	// ends the batch.
	if cap(mb.pullCh[i]) < n+1 {
		mb.pullCh[i] = make(chan *nats.Msg, max(n+1, pullChMin))
	}
	ch := mb.pullCh[i]
	t.pmu.Lock()
	t.pulls[token], t.pulls[key] = ch, ch
	t.pmu.Unlock()
	defer func() {
		t.pmu.Lock()
		delete(t.pulls, token)
		delete(t.pulls, key)
		t.pmu.Unlock()
		// routePull hands out under pmu: nothing more comes now. What
		// came after the pull gave up (its context ended) is dropped, as
		// it was with the channel, and the server delivers it again after
		// the ack wait.
		for len(ch) > 0 {
			<-ch
		}
	}()
	if err := t.nc.PublishRequest(mb.next[i], t.inbox+token, pullRequest(n, wait)); err != nil {
		return nil, err
	}
	var out []*nats.Msg
	for len(out) < n {
		var msg *nats.Msg
		select {
		case msg = <-ch:
		case <-ctx.Done():
			return out, ctx.Err()
		case <-expired:
			return out, context.DeadlineExceeded
		}
		if status := msg.Header.Get("Status"); status != "" && len(msg.Data) == 0 {
			switch status {
			case "404", "408":
				return out, nil // the end of the level, or the request expired
			}
			return out, fmt.Errorf("natsbus: pull from %s: status %s %s", mb.next[i], status, msg.Header.Get("Description"))
		}
		out = append(out, msg)
	}
	return out, nil
}

// routePull hands a message arriving on the pull inbox to the pull waiting
// for it. One subscription serves every pull of the Transport.
func (t *Transport) routePull(msg *nats.Msg) {
	token, ok := deliveryKey(msg.Reply)
	if !ok {
		token = strings.TrimPrefix(msg.Subject, t.inbox)
	}
	t.pmu.Lock()
	ch := t.pulls[token]
	if ch != nil {
		select {
		case ch <- msg:
		default:
		}
	}
	t.pmu.Unlock()
	if ch == nil && msg.Reply != "" {
		// A late delivery to a pull that gave up (its context ended): the
		// server redelivers it after the ack wait; give it back now.
		_ = t.nc.Publish(msg.Reply, ackNak)
	}
}

// pullChMin is the least capacity of a level's pull channel.
const pullChMin = 64

// deliveryKey returns "<stream>.<consumer>" of a delivery's reply subject,
// $JS.ACK.<stream>.<consumer>.<delivered>.<sseq>.<cseq>.<tm>.<pending> or
// $JS.ACK.<domain>.<account hash>.<stream>.<consumer>.… (at least 11
// tokens), as nats.Msg.Metadata reads it; ok is false for any other
// subject. It is a substring of reply: Metadata would parse every token
// and the key would be built again, for every message delivered.
func deliveryKey(reply string) (key string, ok bool) {
	const prefix = "$JS.ACK."
	if !strings.HasPrefix(reply, prefix) {
		return "", false
	}
	tokens := strings.Count(reply, ".") + 1
	skip := 2 // $JS.ACK.
	switch {
	case tokens == 9:
	case tokens >= 11:
		skip = 4 // and the domain and account hash
	default:
		return "", false
	}
	start := 0
	for range skip {
		start += strings.IndexByte(reply[start:], '.') + 1
	}
	dot := strings.IndexByte(reply[start:], '.') // ends the stream
	end := strings.IndexByte(reply[start+dot+1:], '.')
	return reply[start : start+dot+1+end], true
}

// pullRequest is JetStream's request for the next batch messages of a
// consumer, "no wait", expiring after expires (none when zero), written
// directly: json.Marshal of a struct cost more than the rest of a pull.
func pullRequest(batch int, expires time.Duration) []byte {
	b := make([]byte, 0, 64)
	b = append(b, `{"batch":`...)
	b = strconv.AppendInt(b, int64(batch), 10)
	b = append(b, `,"no_wait":true`...)
	if expires != 0 {
		b = append(b, `,"expires":`...)
		b = strconv.AppendInt(b, int64(expires), 10)
	}
	return append(b, '}')
}

// admit turns a delivery into the message handed out, or dead-letters it.
// With withTask it reads the work's task too (nil when wire.DecodeWork
// leaves the work to wire.Decode), and a message with its task comes
// without its content and metadata.
func (t *Transport) admit(ctx context.Context, mb *mailbox, jm *nats.Msg, withTask bool) (*transport.Message, *registry.Task, bool) {
	md, err := jm.Metadata()
	if err != nil {
		t.log.Error("natsbus: delivery without metadata", zap.String("agent", mb.agent), zap.Error(err))
		return nil, nil, false
	}
	var m *transport.Message
	var task *registry.Task
	if withTask {
		m, task, _ = wire.DecodeWork(jm.Data)
	}
	if m == nil {
		m = new(transport.Message)
		// Called directly, the message's decoder checks the JSON once;
		// json.Unmarshal would check it, then hand it to the decoder.
		if err := m.UnmarshalJSON(jm.Data); err != nil {
			m = &transport.Message{To: mb.agent, Type: transport.MessageHandoff}
			_ = t.deadLetter(ctx, dead{m: m, reason: transport.ReasonRejected, stream: md.Stream, seq: md.Sequence.Stream,
				attempts: int(md.NumDelivered), lastErr: "natsbus: work is not a message: " + err.Error(),
				term: jm, termWhy: "natsbus: not a message"})
			return nil, nil, false
		}
	}
	delivered := int(md.NumDelivered)
	d := dead{m: m, stream: md.Stream, seq: md.Sequence.Stream, attempts: delivered, term: jm}
	switch {
	case !time.Now().Before(m.ExpiresAt()):
		d.reason, d.lastErr = transport.ReasonTTLExpired, "natsbus: ttl expired before delivery"
	case m.RequiresAck && delivered > t.cfg.MaxDeliveries:
		d.reason, d.attempts = transport.ReasonMaxRetries, delivered-1
		d.lastErr = "natsbus: not acknowledged after " + strconv.Itoa(delivered-1) + " deliveries (ack wait)"
	}
	if d.reason != "" {
		if task != nil {
			d.m = whole(jm, m)
		}
		d.termWhy = "natsbus: " + string(d.reason)
		_ = t.deadLetter(ctx, d)
		return nil, nil, false
	}
	if delivered > 1 {
		t.redeliveries.Add(1)
	}
	if !m.RequiresAck {
		if err := t.nc.Publish(jm.Reply, ackAck); err != nil {
			t.log.Warn("natsbus: ack on take failed", zap.String("message_id", m.MessageID), zap.Error(err))
		}
		return m, task, true
	}
	m.DeliveryCount = delivered
	f := &flight{m: m, jm: jm, stream: md.Stream, seq: md.Sequence.Stream, delivered: delivered,
		deadline: time.Now().Add(t.cfg.ackWait(delivered)), lean: task != nil}
	t.hold(f)
	return m, task, true
}

// hold records f as taken and makes the sweep wake by its deadline.
func (t *Transport) hold(f *flight) {
	t.mu.Lock()
	t.taken[f.m.MessageID] = f
	heap.Push(&t.due, f)
	first := t.due[0] == f
	t.mu.Unlock()
	if first {
		select {
		case t.wake <- struct{}{}:
		default:
		}
	}
}

// release forgets the flight of m and returns it.
func (t *Transport) release(m *transport.Message) (*flight, error) {
	if m == nil {
		return nil, &transport.ValidationError{Field: "message", Reason: "is required"}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil, ErrClosed
	}
	f, ok := t.taken[m.MessageID]
	if !ok {
		return nil, ErrNotTaken
	}
	delete(t.taken, m.MessageID)
	return f, nil
}

// Ack settles a message taken: the server removes it from the work stream
// once it confirms the ack. A message that did not require an ack was
// settled when taken.
func (t *Transport) Ack(ctx context.Context, m *transport.Message) error {
	if m != nil && !m.RequiresAck {
		return nil
	}
	f, err := t.release(m)
	if err != nil {
		return err
	}
	if err := t.ackSync(ctx, f.jm); err != nil {
		return fmt.Errorf("natsbus: ack %s: %w", m.MessageID, err)
	}
	t.acks.Add(1)
	return nil
}

// ackNoWait is Ack without waiting for the server to confirm: the ack is
// published to the delivery's reply subject, as JetStream's own
// fire-and-forget Msg.Ack does. The Worker acks this way once an engine
// has answered the work's report: a confirmed ack tells it nothing it
// would act on (a failed one was only logged), and an ack lost on the way
// only means a later delivery, whose run's report the engine answers
// stale, as it did when a confirmed ack timed out. Transport.Ack still
// waits, so that a caller of the engine.Transport sees the work gone from
// the stream when it returns.
func (t *Transport) ackNoWait(m *transport.Message) error {
	if m != nil && !m.RequiresAck {
		return nil
	}
	f, err := t.release(m)
	if err != nil {
		return err
	}
	if err := t.nc.Publish(f.jm.Reply, ackAck); err != nil {
		return fmt.Errorf("natsbus: ack %s: %w", m.MessageID, err)
	}
	t.acks.Add(1)
	return nil
}

// Nack gives a message taken back for redelivery at once; on its last
// delivery it is dead-lettered "max_retries" instead.
func (t *Transport) Nack(ctx context.Context, m *transport.Message) error {
	return t.nack(ctx, m, false)
}

// NackLater gives m back like Nack, to be delivered again after a pause
// that grows with its deliveries: 100 ms after the first, doubling, at most
// the ack wait. It is for work whose outcome no engine took yet (its report
// went unanswered, or was answered unknown_instance because the instance's
// partition is being taken over or the store is electing a leader): given
// back at once, the work would spend its deliveries in a moment and be
// dead-lettered before the takeover ends.
func (t *Transport) NackLater(ctx context.Context, m *transport.Message) error {
	return t.nack(ctx, m, true)
}

// laterPause is the pause before the next delivery of work given back with
// NackLater after its delivered-th delivery.
func laterPause(delivered int, ackWait time.Duration) time.Duration {
	d := 100 * time.Millisecond
	for k := 1; k < delivered && d < ackWait; k++ {
		d *= 2
	}
	return min(d, ackWait)
}

func (t *Transport) nack(ctx context.Context, m *transport.Message, later bool) error {
	f, err := t.release(m)
	if err != nil {
		return err
	}
	t.nacks.Add(1)
	if f.delivered >= t.cfg.MaxDeliveries {
		return t.deadLetter(ctx, dead{m: f.message(), reason: transport.ReasonMaxRetries, stream: f.stream, seq: f.seq, attempts: f.delivered,
			lastErr: "natsbus: not acknowledged after " + strconv.Itoa(f.delivered) + " deliveries (nack)",
			term:    f.jm, termWhy: "natsbus: " + string(transport.ReasonMaxRetries)})
	}
	body := ackNak
	if later {
		body = fmt.Appendf(nil, "%s {\"delay\": %d}", ackNak, laterPause(f.delivered, t.cfg.AckWait).Nanoseconds())
	}
	if err := t.nc.Publish(f.jm.Reply, body); err != nil {
		return fmt.Errorf("natsbus: nack %s: %w", m.MessageID, err)
	}
	return nil
}

// Reject dead-letters a message taken, "rejected" with the agent's reason,
// and terminates it with the reason (which removes it from the work stream).
func (t *Transport) Reject(ctx context.Context, m *transport.Message, reason string) error {
	f, err := t.release(m)
	if err != nil {
		return err
	}
	t.rejects.Add(1)
	return t.deadLetter(ctx, dead{m: f.message(), reason: transport.ReasonRejected, stream: f.stream, seq: f.seq, attempts: f.delivered,
		lastErr: reason, term: f.jm, termWhy: "natsbus: rejected: " + reason})
}

// remove deletes message seq of a work stream; a message already gone is
// no error.
func (t *Transport) remove(ctx context.Context, stream string, seq uint64) error {
	s, err := t.js.Stream(ctx, stream)
	if err == nil {
		err = s.DeleteMsg(ctx, seq)
	}
	if gone(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("natsbus: remove message %d of %s: %w", seq, stream, err)
	}
	return nil
}

// The bodies of JetStream's acknowledgements, published to a delivery's
// reply subject.
var (
	ackAck      = []byte("+ACK")
	ackNak      = []byte("-NAK")
	ackProgress = []byte("+WPI")
	ackTerm     = "+TERM "
)

// ackSync acks jm and waits for the server to confirm it.
func (t *Transport) ackSync(ctx context.Context, jm *nats.Msg) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, t.cfg.Timeout)
		defer cancel()
	}
	_, err := t.nc.RequestWithContext(ctx, jm.Reply, ackAck)
	return err
}

// gone reports whether err says the message is not in the stream. A failed
// delete wraps the server's error as text only, hence the code in the text.
func gone(err error) bool {
	var api *jetstream.APIError
	switch {
	case err == nil:
		return false
	case errors.Is(err, jetstream.ErrMsgNotFound):
		return true
	case errors.As(err, &api):
		return api.ErrorCode == errCodeSeqNotFound || api.ErrorCode == errCodeMsgNotFound
	}
	s := err.Error()
	return strings.Contains(s, "err_code="+strconv.Itoa(errCodeSeqNotFound)) || strings.Contains(s, "err_code="+strconv.Itoa(errCodeMsgNotFound))
}

// Heartbeat tells the server that the agent still works on m (an
// in-progress ack): its ack wait starts again.
func (t *Transport) Heartbeat(ctx context.Context, m *transport.Message) error {
	if m == nil {
		return &transport.ValidationError{Field: "message", Reason: "is required"}
	}
	t.mu.Lock()
	f, ok := t.taken[m.MessageID]
	t.mu.Unlock()
	if !ok {
		return ErrNotTaken
	}
	if err := t.nc.Publish(f.jm.Reply, ackProgress); err != nil {
		return fmt.Errorf("natsbus: heartbeat %s: %w", m.MessageID, err)
	}
	deadline := time.Now().Add(t.cfg.ackWait(f.delivered))
	t.mu.Lock()
	if t.taken[m.MessageID] == f {
		nf := &flight{m: f.m, jm: f.jm, stream: f.stream, seq: f.seq, delivered: f.delivered, deadline: deadline, lean: f.lean}
		t.hold0(nf)
	}
	t.mu.Unlock()
	return nil
}

// hold0 is hold with t.mu held and no wake: the sweep's timer is armed for
// the old deadline, earlier than the new one, and re-arms from there.
func (t *Transport) hold0(f *flight) {
	t.taken[f.m.MessageID] = f
	heap.Push(&t.due, f)
}

// sweep forgets the messages whose ack wait passed (the server gives them
// out again) and dead-letters those that were on their last delivery.
func (t *Transport) sweep() {
	defer t.wg.Done()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		select {
		case <-t.done:
			return
		case <-t.wake:
		case <-timer.C:
		}
		next := t.expire(time.Now())
		timer.Reset(next)
	}
}

// expire handles the flights due by now and returns how long until the
// next one is. A flight on its last delivery is dead-lettered when its ack
// wait passes. Another is kept for one more ack wait, so that an ack
// arriving late (the server accepts it until it delivers the message again)
// still finds it, and is then forgotten: the map holds no more than what
// was taken within two ack waits.
func (t *Transport) expire(now time.Time) time.Duration {
	var last []*flight
	t.mu.Lock()
	for len(t.due) > 0 && !t.due[0].deadline.After(now) {
		f := heap.Pop(&t.due).(*flight)
		if t.taken[f.m.MessageID] != f {
			continue
		}
		switch {
		case f.delivered >= t.cfg.MaxDeliveries:
			delete(t.taken, f.m.MessageID)
			last = append(last, f)
		case !f.overdue:
			f.overdue = true
			f.deadline = f.deadline.Add(t.cfg.ackWait(f.delivered))
			heap.Push(&t.due, f)
		default:
			delete(t.taken, f.m.MessageID)
		}
	}
	next := time.Hour
	if len(t.due) > 0 {
		next = max(t.due[0].deadline.Sub(now), time.Millisecond)
	}
	t.mu.Unlock()
	for _, f := range last {
		ctx, cancel := context.WithTimeout(context.Background(), t.cfg.Timeout)
		_ = t.deadLetter(ctx, dead{m: f.message(), reason: transport.ReasonMaxRetries, stream: f.stream, seq: f.seq, attempts: f.delivered,
			lastErr: "natsbus: not acknowledged after " + strconv.Itoa(f.delivered) + " deliveries (ack wait)"})
		cancel()
	}
	return next
}
