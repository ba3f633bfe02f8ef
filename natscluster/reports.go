package natscluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"go.uber.org/zap"

	"github.com/batonhq/baton/natsbus"
	"github.com/batonhq/baton/wire"
)

// ServeReports answers the reports agents send on natsbus.ReportsSubject,
// wherever the instance's engine runs: a report for an instance this node
// owns goes to handle (the engine's HandleReport, or a function choosing
// the engine by workflow); any other is forwarded to the engine owning its
// partition, whose node passes it to its own handle. While no engine owns
// the partition (it is being taken over) the answer is unknown_instance,
// on which an agent gives the work back and reports again later. stop ends
// the service and waits for the reports being handled.
func (n *Node) ServeReports(ctx context.Context, handle func(context.Context, *wire.Report) wire.Answer) (stop func() error, err error) {
	if handle == nil {
		return nil, errors.New("natscluster: ServeReports needs a handler")
	}
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return nil, ErrClosed
	}
	n.handler = handle
	n.mu.Unlock()
	stopServe, err := natsbus.ServeReports(ctx, n.nc, n.route)
	if err != nil {
		return nil, err
	}
	return func() error {
		err := stopServe()
		n.mu.Lock()
		n.handler = nil
		n.mu.Unlock()
		return err
	}, nil
}

func (n *Node) forwardSubject(p int) string {
	return n.store.Prefix() + ".cluster.report." + strconv.Itoa(p)
}

// local hands a report to this node's engine if the node owns the
// instance; ok is false otherwise.
func (n *Node) local(ctx context.Context, r *wire.Report) (wire.Answer, bool) {
	p := n.store.Partition(r.InstanceID)
	n.mu.Lock()
	l, h := n.owned[p], n.handler
	n.mu.Unlock()
	if l == nil || !l.ready || h == nil || !n.store.Owns(p) {
		return wire.Answer{}, false
	}
	return h(ctx, r), true
}

func notOwned(r *wire.Report) wire.Answer {
	return wire.Answer{Code: wire.CodeUnknownInstance,
		Message: fmt.Sprintf("natscluster: no engine owns instance %s now (its partition is being taken over): report again", r.InstanceID)}
}

// notOwnerHeader marks the answer of a node that does not own the
// report's partition (any more, or not yet): the report is sent again.
const notOwnerHeader = "Baton-Not-Owner"

// retryPause is the pause between two tries to reach a partition's owner.
const retryPause = 50 * time.Millisecond

// route answers a report that reached this node through the queue group:
// it hands it to this node's engine, or to the owner's. While the
// partition has no owner (a takeover in progress), it tries again until
// Config.Timeout has passed, so that an agent's report is not refused for
// the moment a takeover lasts.
func (n *Node) route(ctx context.Context, r *wire.Report) wire.Answer {
	ans, err := n.routeReport(ctx, r)
	if err != nil {
		return notOwned(r)
	}
	return ans
}

// routeReport is route, failing with ErrNoOwner when no engine owned the
// instance's partition within Config.Timeout.
func (n *Node) routeReport(ctx context.Context, r *wire.Report) (wire.Answer, error) {
	data, err := json.Marshal(r)
	if err != nil {
		return wire.Answer{Code: wire.CodeInvalid, Message: err.Error()}, nil
	}
	rctx, cancel := context.WithTimeout(ctx, n.cfg.Timeout)
	defer cancel()
	subj := n.forwardSubject(n.store.Partition(r.InstanceID))
	for {
		if ans, ok := n.local(ctx, r); ok {
			return ans, nil
		}
		msg, err := n.nc.RequestWithContext(rctx, subj, data)
		if err == nil && msg.Header.Get(notOwnerHeader) == "" {
			var ans wire.Answer
			if json.Unmarshal(msg.Data, &ans) == nil {
				return ans, nil
			}
		}
		select {
		case <-rctx.Done():
			return wire.Answer{}, fmt.Errorf("%w: %s (for %v)", ErrNoOwner, r.InstanceID, n.cfg.Timeout)
		case <-time.After(retryPause):
		}
	}
}

// forwarded answers a report another node forwarded to this one, the
// owner of its partition when it was sent.
func (n *Node) forwarded(m *nats.Msg) {
	if id := m.Header.Get(callHeader); id != "" {
		n.forwardedCall(m, id)
		return
	}
	reply := nats.NewMsg(m.Reply)
	var ans wire.Answer
	r, err := wire.DecodeReport(m.Data)
	if err != nil {
		ans = wire.Answer{Code: wire.CodeInvalid, Message: err.Error()}
	} else if a, ok := n.local(context.Background(), &r); ok {
		ans = a
	} else {
		ans = notOwned(&r)
		reply.Header.Set(notOwnerHeader, "1")
	}
	reply.Data, _ = json.Marshal(ans)
	if err := m.RespondMsg(reply); err != nil {
		n.log.Warn("natscluster: a forwarded report's answer not sent", zap.String("instance", r.InstanceID), zap.Error(err))
	}
}
