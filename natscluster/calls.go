package natscluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"go.uber.org/zap"

	"github.com/batonhq/baton/wire"
)

// ErrNoOwner means no engine owned an instance's partition for as long as
// a call waited (Config.Timeout): a takeover that lasts, or no engine
// running.
var ErrNoOwner = errors.New("natscluster: no engine owns the instance's partition")

// callHeader marks a forwarded call (see Call) and carries its instance id;
// a forwarded message without it is a report.
const callHeader = "Baton-Call"

// CallHandler runs a call for an instance this node owns and returns its
// answer. The node runs each forwarded call on a goroutine of its own.
type CallHandler func(ctx context.Context, id string, data []byte) []byte

// ServeCalls makes handle the runner of calls (Call) for instances this
// node owns, this node's own and those other nodes forward to it, until
// the node is closed.
func (n *Node) ServeCalls(handle CallHandler) error {
	if handle == nil {
		return errors.New("natscluster: ServeCalls needs a handler")
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return ErrClosed
	}
	n.calls = handle
	return nil
}

// Call runs a call for instance id on the engine that owns it: here when
// this node owns it, else on the owner's node, over NATS, whose
// CallHandler answers. data and the answer are the caller's to define
// (the server forwards HTTP requests). While no engine owns the partition
// it tries again, for at most Config.Timeout, then fails with ErrNoOwner.
// The call itself is bounded by ctx (by Config.Timeout when ctx has no
// deadline); a call that reached the owner and got no answer in time
// fails with the request's error, and may have run.
func (n *Node) Call(ctx context.Context, id string, data []byte) ([]byte, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, n.cfg.Timeout)
		defer cancel()
	}
	msg := nats.NewMsg(n.forwardSubject(n.store.Partition(id)))
	msg.Header.Set(callHeader, id)
	msg.Data = data
	giveUp := time.Now().Add(n.cfg.Timeout)
	for {
		if h, ok := n.callHandler(id); ok {
			return h(ctx, id, data), nil
		}
		reply, err := n.nc.RequestMsgWithContext(ctx, msg)
		switch {
		case err == nil && reply.Header.Get(notOwnerHeader) == "":
			return reply.Data, nil
		case err != nil && !errors.Is(err, nats.ErrNoResponders):
			return nil, fmt.Errorf("natscluster: call for %s: %w", id, err)
		case time.Now().After(giveUp):
			return nil, fmt.Errorf("%w: %s (for %v)", ErrNoOwner, id, n.cfg.Timeout)
		}
		// No engine owns the partition, or the one asked no longer does.
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(retryPause):
		}
	}
}

// callHandler is the call runner when this node owns id's partition and
// has resumed it.
func (n *Node) callHandler(id string) (CallHandler, bool) {
	p := n.store.Partition(id)
	n.mu.Lock()
	defer n.mu.Unlock()
	l := n.owned[p]
	if l == nil || !l.ready || n.calls == nil || !n.store.Owns(p) {
		return nil, false
	}
	return n.calls, true
}

// forwardedCall runs a call another node forwarded to this one, on a
// goroutine Close waits for, or answers that this node does not own it.
func (n *Node) forwardedCall(m *nats.Msg, id string) {
	p := n.store.Partition(id)
	n.mu.Lock()
	l, h := n.owned[p], n.calls
	run := l != nil && l.ready && h != nil && n.store.Owns(p)
	if run {
		n.running.Add(1) // under mu: Close stops new calls under it first
	}
	n.mu.Unlock()
	if !run {
		reply := nats.NewMsg(m.Reply)
		reply.Header.Set(notOwnerHeader, "1")
		_ = m.RespondMsg(reply)
		return
	}
	go func() {
		defer n.running.Done()
		if err := m.Respond(h(context.Background(), id, m.Data)); err != nil {
			n.log.Warn("natscluster: a forwarded call's answer not sent", zap.String("instance", id), zap.Error(err))
		}
	}()
}

// Report hands a report to the engine owning its instance, as a report
// taken from NATS is (see ServeReports): for reports that arrive another
// way, such as an HTTP agent's. It fails with ErrNoOwner when no engine
// owned the instance's partition within Config.Timeout (a takeover under
// way): the report may be sent again.
func (n *Node) Report(ctx context.Context, r *wire.Report) (wire.Answer, error) {
	return n.routeReport(ctx, r)
}
