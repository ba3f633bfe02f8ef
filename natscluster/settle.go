package natscluster

import (
	"context"
	"errors"
	"slices"
	"time"

	"go.uber.org/zap"

	"github.com/batonhq/baton/natsstore"
)

// A partition whose lease the node took is fenced, then resumed. When
// either fails (a steps stream electing a leader answers 503 for a few
// seconds), it is tried again after settleFirst, then after twice as long
// at each failure, up to settleMax apart, until both went through or the
// lease is lost. Left as it was, such a partition would be no engine's:
// the bucket names this node its owner, so no other engine takes it, while
// this node's store commits none of its instances and the node answers
// none of its reports.
const (
	settleFirst = 100 * time.Millisecond
	settleMax   = 5 * time.Second
)

// settle fences and resumes the partitions the node holds that are not
// ready and are due: taken just now, or whose last try failed. A
// partition another store fenced under a newer token is lost, and
// released. It fences for a heartbeat at most (a fence the server does not
// answer takes Config.Timeout), leaving the others to the next call: the
// node's goroutine also follows the bucket and notices a cut-off.
func (n *Node) settle(ctx context.Context) {
	if n.cutOff() {
		return
	}
	now := time.Now()
	budget := now.Add(n.cfg.Heartbeat)
	var due []int
	n.mu.Lock()
	for p, l := range n.owned {
		if !l.ready && !now.Before(l.next) {
			due = append(due, p)
		}
	}
	n.mu.Unlock()
	slices.Sort(due)
	var fenced, lost []int
	for _, p := range due {
		if ctx.Err() != nil {
			return
		}
		if time.Now().After(budget) {
			break
		}
		err := n.fenceLease(ctx, p)
		var nerr *natsstore.NotOwnerError
		switch {
		case errors.As(err, &nerr):
			n.log.Warn("natscluster: partition fenced by a newer lease; given up", zap.Int("partition", p), zap.Error(err))
			lost = append(lost, p)
		case err != nil:
			n.later(p, "natscluster: partition not fenced; trying again", err)
		default:
			fenced = append(fenced, p)
		}
	}
	n.release(lost...)
	if len(fenced) == 0 {
		return
	}
	if err := n.cfg.OnAcquire(ctx, fenced); err != nil {
		for _, p := range fenced {
			n.later(p, "natscluster: partition not resumed; trying again", err)
		}
		return
	}
	n.mu.Lock()
	for _, p := range fenced {
		if l := n.owned[p]; l != nil {
			l.ready, l.pause = true, 0
		}
	}
	n.mu.Unlock()
}

// fenceLease fences the store with a held partition's lease token, once,
// and starts answering the partition's forwarded reports.
func (n *Node) fenceLease(ctx context.Context, p int) error {
	n.mu.Lock()
	l := n.owned[p]
	n.mu.Unlock()
	if l == nil {
		return &natsstore.NotOwnerError{Partition: p, Reason: "released"}
	}
	if !l.fenced {
		rctx, cancel := context.WithTimeout(ctx, n.cfg.Timeout)
		err := n.fence(rctx, p, l.token)
		cancel()
		if err != nil {
			return err
		}
		n.mu.Lock()
		l.fenced = true
		n.mu.Unlock()
		n.log.Info("natscluster: partition taken", zap.Int("partition", p), zap.Uint64("token", l.token))
	}
	if l.sub == nil {
		sub, err := n.nc.Subscribe(n.forwardSubject(p), n.forwarded)
		if err != nil {
			return err
		}
		n.mu.Lock()
		l.sub = sub
		n.mu.Unlock()
	}
	return nil
}

// later schedules the next try of a held partition's fence or resume, a
// pause that doubles at each failure.
func (n *Node) later(p int, msg string, err error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	l := n.owned[p]
	if l == nil {
		return
	}
	l.pause = min(max(2*l.pause, settleFirst), settleMax)
	l.next = time.Now().Add(l.pause)
	n.log.Warn(msg, zap.Int("partition", p), zap.Duration("in", l.pause), zap.Error(err))
}

// armSettle sets t to fire when the first held partition whose fence or
// resume failed is due to be tried again, and stops it when there is none.
// A partition not tried yet (settle stopped at its budget, a heartbeat of
// fencing, before it) is due at once: a node taking its share goes on
// round after round instead of a round per heartbeat, while the loop still
// serves the bucket's updates and heartbeats between rounds.
func (n *Node) armSettle(t *time.Timer) {
	if n.cutOff() {
		t.Stop() // settle does nothing while cut off: the next heartbeat arms it again
		return
	}
	var first time.Time
	now := time.Now()
	n.mu.Lock()
	for _, l := range n.owned {
		if l.ready {
			continue
		}
		next := l.next
		if next.IsZero() {
			next = now
		}
		if first.IsZero() || next.Before(first) {
			first = next
		}
	}
	n.mu.Unlock()
	t.Stop()
	if !first.IsZero() {
		t.Reset(max(time.Until(first), time.Millisecond))
	}
}
