package natsbus

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/batonhq/baton/wire"
)

// reportReplies takes the engines' answers to a Worker's reports on one
// subscription, each by the token ending its reply subject, as nats.go's
// requests do, and bounds the wait with a pooled timer: the context with
// ReportTimeout each report was sent under (a timer, the context, its
// channel, and its place among the children of the worker's context) was
// about 2% of a NATS step's CPU. nats.go's Conn.Request answers the same
// way but waits for its timeout only, not for a context: a report must
// also end when the worker's drain gives up. Heartbeat reports still go
// through wire's Report under a context of their own (one per beat, not
// per step).
type reportReplies struct {
	nc     *nats.Conn
	prefix string // the reply subjects' prefix: an inbox and a dot
	sub    *nats.Subscription

	mu    sync.Mutex
	next  uint64
	waits map[string]chan *nats.Msg

	timers sync.Pool // *time.Timer, stopped
	chans  sync.Pool // chan *nats.Msg, empty
	bufs   sync.Pool // *[]byte, a report's JSON once sent
}

// maxPooledReport bounds the buffers kept for reports: one grown by a
// large result is left to the collector.
const maxPooledReport = 16 << 10

// newReportReplies subscribes to nc's reply subjects for reports.
func newReportReplies(nc *nats.Conn) (*reportReplies, error) {
	r := &reportReplies{nc: nc, prefix: nc.NewInbox() + ".", waits: map[string]chan *nats.Msg{}}
	sub, err := nc.Subscribe(r.prefix+"*", r.route)
	if err != nil {
		return nil, fmt.Errorf("natsbus: worker: subscribe to the answers to its reports: %w", err)
	}
	r.sub = sub
	return r, nil
}

// close ends the subscription.
func (r *reportReplies) close() { _ = r.sub.Unsubscribe() }

// route hands an answer to the report waiting for it; an answer no report
// waits for any more (it gave up) is dropped.
func (r *reportReplies) route(m *nats.Msg) {
	token := strings.TrimPrefix(m.Subject, r.prefix)
	r.mu.Lock()
	ch, ok := r.waits[token]
	delete(r.waits, token)
	r.mu.Unlock()
	if ok {
		ch <- m // buffered, and sent to once: its token is gone
	}
}

// forget drops the wait under token; false when the answer came meanwhile
// (it is then in, or on its way to, the wait's channel).
func (r *reportReplies) forget(token string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.waits[token]
	delete(r.waits, token)
	return ok
}

// report is Report with ctx and a timeout of its own: it sends rep to the
// engines and returns the answer of the one that took it, with Report's
// errors.
func (r *reportReplies) report(ctx context.Context, rep *wire.Report, timeout time.Duration) (wire.Answer, error) {
	if err := ctx.Err(); err != nil {
		return wire.Answer{}, fmt.Errorf("natsbus: report step %d of %s: %w", rep.Step, rep.InstanceID, err)
	}
	// The report is written into a pooled buffer: the connection copies it
	// as it is published.
	buf, _ := r.bufs.Get().(*[]byte)
	if buf == nil {
		buf = new([]byte)
	}
	data, err := wire.AppendReport((*buf)[:0], rep)
	defer func() {
		if cap(data) <= maxPooledReport {
			*buf = data[:0]
			r.bufs.Put(buf)
		}
	}()
	if err != nil {
		return wire.Answer{}, fmt.Errorf("natsbus: encode report: %w", err)
	}
	ch, _ := r.chans.Get().(chan *nats.Msg)
	if ch == nil {
		ch = make(chan *nats.Msg, 1)
	}
	r.mu.Lock()
	r.next++
	token := strconv.FormatUint(r.next, 36)
	r.waits[token] = ch
	r.mu.Unlock()
	if err := r.nc.PublishRequest(ReportsSubject, r.prefix+token, data); err != nil {
		if r.forget(token) {
			r.chans.Put(ch)
		}
		return wire.Answer{}, fmt.Errorf("natsbus: report step %d of %s: %w", rep.Step, rep.InstanceID, err)
	}
	timer, _ := r.timers.Get().(*time.Timer)
	if timer == nil {
		timer = time.NewTimer(timeout)
	} else {
		timer.Reset(timeout)
	}
	var msg *nats.Msg
	select {
	case msg = <-ch:
		r.chans.Put(ch)
	case <-ctx.Done():
		err = ctx.Err()
	case <-timer.C:
		err = nats.ErrTimeout
	}
	timer.Stop() // since Go 1.23 no stale tick is left for its next Reset
	r.timers.Put(timer)
	if err != nil {
		if r.forget(token) {
			r.chans.Put(ch)
		}
		return wire.Answer{}, fmt.Errorf("natsbus: report step %d of %s: %w", rep.Step, rep.InstanceID, err)
	}
	if len(msg.Data) == 0 && msg.Header.Get("Status") == "503" {
		return wire.Answer{}, fmt.Errorf("natsbus: report step %d of %s: %w", rep.Step, rep.InstanceID, nats.ErrNoResponders)
	}
	ans, err := wire.DecodeAnswer(msg.Data)
	if err != nil {
		return wire.Answer{}, fmt.Errorf("natsbus: answer to the report of step %d of %s: %w", rep.Step, rep.InstanceID, err)
	}
	return ans, nil
}
