package engine

import (
	"context"
	"runtime"
	"sync"

	"github.com/batonhq/baton/internal/prioq"
	"github.com/batonhq/baton/registry"
	"github.com/batonhq/baton/transport"
)

// lane is the in-process path of one Go agent's work: a mailbox ordered by
// priority, then send order, with the agent's capacity, and at most the
// agent's concurrency of handler runs at once. Work waits in the lane as a
// reference to its instance and step; the task is built when a run takes
// it, so nothing is encoded or copied on the way.
type lane struct {
	agent    string
	handler  registry.Handler
	capacity int
	limit    int

	mu       sync.Mutex
	queue    prioq.Queue[laneItem] // highest priority, then oldest, first
	reserved int                   // room promised to starts not yet pushed
	room     chan struct{}         // closed when an item leaves, for starts waiting for room
	running  int                   // runners taking work from the lane
	drain    func()                // a runner's work, made once
	// A goroutine runner that finds the lane empty waits for more work
	// (idle), up to maxIdle of them, rather than ending: a push wakes one
	// (wake holds a token for each woken). BenchmarkEngineRefund started
	// a runner every four instances, each growing its stack anew to a
	// step's depth (newstack was 2% of its CPU); without, its CPU per step
	// fell 9% on a loaded machine, and its ratio to FloorStep from 4.4 to
	// 4.1 on a quiet one (4 interleaved rounds each). They end when the
	// engine closes.
	idle    int
	maxIdle int
	wake    chan struct{} // see newLane

	// accounting, guarded by mu
	sent, taken, refused uint64
}

// laneItem is one piece of work waiting in a lane.
type laneItem struct {
	i      *instance
	step   int
	key    string // for a notice, its hand-off id
	notice bool
	level  transport.Priority
}

// LaneStats is the accounting of a Go agent's in-process mailbox: every
// item sent is taken, refused (dead-lettered queue_full) or still queued.
type LaneStats struct {
	Sent, Taken, Refused uint64
	Queued, Running      int
	Capacity, Limit      int
}

// handler returns the Go handler of agent, nil for an external agent: the
// agents with a handler are those the engine built a lane for at New.
func (e *Engine) handler(agent string) registry.Handler {
	if l := e.lanes[agent]; l != nil {
		return l.handler
	}
	return nil
}

func newLane(agent string, capacity, limit int) *lane {
	if capacity <= 0 {
		capacity = defaultQueue
	}
	if limit <= 0 {
		limit = defaultConcurrency
	}
	// wake holds a token for each runner a push counted as running again
	// that has not taken it yet: at most limit, so that a push, which sends
	// under mu, never waits (a runner ending at Close takes mu to take its
	// token). Its tokens take no room.
	maxIdle := min(limit, runtime.GOMAXPROCS(0))
	return &lane{agent: agent, capacity: capacity, limit: limit, maxIdle: maxIdle, wake: make(chan struct{}, limit)}
}

// reserve promises room for one item to a start, waiting while the lane is
// full until ctx ends (wait false: not at all). The promise is kept by a
// push with reserved set, or given back with unreserve.
func (l *lane) reserve(ctx context.Context, wait bool) error {
	l.mu.Lock()
	for l.queue.Len()+l.reserved >= l.capacity {
		if !wait {
			l.mu.Unlock()
			return &OverloadedError{Agent: l.agent, Capacity: l.capacity}
		}
		if l.room == nil {
			l.room = make(chan struct{})
		}
		room := l.room
		l.mu.Unlock()
		select {
		case <-room:
		case <-ctx.Done():
			return &OverloadedError{Agent: l.agent, Capacity: l.capacity, Err: ctx.Err()}
		}
		l.mu.Lock()
	}
	l.reserved++
	l.mu.Unlock()
	return nil
}

// unreserve gives back room reserve promised.
func (l *lane) unreserve() {
	l.mu.Lock()
	l.reserved--
	l.signalRoom()
	l.mu.Unlock()
}

// signalRoom wakes the starts waiting for room. The caller holds mu.
func (l *lane) signalRoom() {
	if l.room != nil {
		close(l.room)
		l.room = nil
	}
}

// push queues an item; a full lane refuses it with a *transport.QueueFullError
// naming the agent, unless the item's room was reserved. A refusal is
// counted (its work is dead-lettered) unless the item is patient: its
// sender keeps it, to push it again later. start reports whether the
// caller must start a runner.
func (l *lane) push(it laneItem, reserved, patient bool) (start bool, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if reserved {
		l.reserved--
	} else if l.queue.Len()+l.reserved >= l.capacity {
		if !patient {
			l.refused++
		}
		return false, &transport.QueueFullError{Agent: l.agent, Capacity: l.capacity}
	}
	l.queue.Push(it.level, it)
	l.sent++
	if l.running >= l.limit {
		return false, nil
	}
	l.running++
	if l.idle > 0 {
		l.idle--
		l.wake <- struct{}{} // never blocks (see newLane)
		return false, nil
	}
	return true, nil
}

// pop takes the first item; ok is false when the lane is empty, and the
// runner asking is then no longer counted as running: it stops, or, when
// it may wait (park, a goroutine) and fewer than maxIdle do, it waits, idle,
// for a push to wake it (idle true).
func (l *lane) pop(park bool) (it laneItem, ok, idle bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	it, ok = l.queue.Pop()
	if !ok {
		l.running--
		if park && l.idle < l.maxIdle {
			l.idle++
			return laneItem{}, false, true
		}
		return laneItem{}, false, false
	}
	l.taken++
	l.signalRoom()
	return it, true, false
}

// await waits, idle, until a push wakes the runner (true: it runs again)
// or done closes (false: it ends, no longer counted).
func (l *lane) await(done <-chan struct{}) bool {
	select {
	case <-l.wake:
		return true
	case <-done:
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	select {
	case <-l.wake:
		l.running-- // a push counted it as running, woken
	default:
		l.idle--
	}
	return false
}

func (l *lane) stats() LaneStats {
	l.mu.Lock()
	defer l.mu.Unlock()
	return LaneStats{
		Sent: l.sent, Taken: l.taken, Refused: l.refused,
		Queued: l.queue.Len(), Running: l.running, Capacity: l.capacity, Limit: l.limit,
	}
}

// Defaults of a Go agent's lane.
const (
	defaultQueue       = 1000 // the mailbox capacity of an agent that sets no queue
	defaultConcurrency = 16   // runs of one agent at once, when it sets no concurrency
)

// runLane takes work from l until it is empty: a runner. Runners are
// started by push, at most l.limit at once, so that work never waits while
// a runner is free and no goroutine is started per item.
func (e *Engine) runLane(l *lane) {
	park := e.pool != nil // a goroutine's; work on an executor ends when the lane is empty
	for {
		it, ok, idle := l.pop(park)
		if idle && l.await(e.ctx.Done()) {
			continue
		}
		if !ok {
			return
		}
		if e.closed.Load() {
			continue // drained: Close leaves instances as they are, to be resumed
		}
		if it.notice {
			it.i.takeNotice(it.key)
			continue
		}
		if !e.runs.enter() {
			continue // a drain began: the work stays in the outbox, for Resume
		}
		e.runLocal(l, it)
		e.runs.leave()
	}
}

// startRunner starts a runner of l: a goroutine the engine waits for on
// Close, or, with an executor (a scenario's simulator), work on it.
func (e *Engine) startRunner(l *lane) {
	if e.pool == nil {
		e.exec.Submit(l.drain)
		return
	}
	e.runners.Add(1)
	go func() {
		defer e.runners.Done()
		l.drain()
	}()
}

// AgentQueues returns the accounting of every Go agent's in-process mailbox,
// by agent id.
func (e *Engine) AgentQueues() map[string]LaneStats {
	out := make(map[string]LaneStats, len(e.lanes))
	for id, l := range e.lanes {
		out[id] = l.stats()
	}
	return out
}
