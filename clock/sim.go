package clock

import (
	"container/heap"
	"context"
	"errors"
	"sync"
	"time"
)

// Sim is a discrete-event simulator: a virtual clock and a run queue that are
// both driven by Run, in the caller's goroutine. Work submitted with Submit
// runs in submission order; callbacks scheduled with AfterFunc run when the
// run queue is empty and virtual time has been moved to their deadline, in
// deadline order (ties in scheduling order). Everything therefore happens in
// one goroutine, in an order fixed by the inputs alone, which is what makes
// scenario replays byte-for-byte repeatable.
//
// Work may call Advance to model time it takes (an agent's reply delay):
// the clock moves forward at once and timers that fall due run afterwards.
type Sim struct {
	mu     sync.Mutex
	now    time.Time
	seq    uint64
	ready  []func()
	timers simHeap
}

// NewSim returns a simulator whose clock starts at start.
func NewSim(start time.Time) *Sim { return &Sim{now: start} }

// Now returns the virtual time.
func (s *Sim) Now() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.now
}

// Advance moves the virtual clock forward by d without running anything.
func (s *Sim) Advance(d time.Duration) {
	if d <= 0 {
		return
	}
	s.mu.Lock()
	s.now = s.now.Add(d)
	s.mu.Unlock()
}

// Submit queues f to run in Run's goroutine after the work already queued.
func (s *Sim) Submit(f func()) {
	s.mu.Lock()
	s.ready = append(s.ready, f)
	s.mu.Unlock()
}

// AfterFunc schedules f to run in Run's goroutine once the virtual clock has
// reached now+d.
func (s *Sim) AfterFunc(d time.Duration, f func()) Timer {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	t := &simTimer{sim: s, at: s.now.Add(d), seq: s.seq, f: f, index: -1}
	heap.Push(&s.timers, t)
	return t
}

// ErrSimStopped is returned by Run when its context ends first.
var ErrSimStopped = errors.New("clock: simulation stopped")

// Run executes queued work and due timers until done reports true, or until
// nothing is left to run. It returns ErrSimStopped (wrapping the context's
// error) if ctx ends first.
func (s *Sim) Run(ctx context.Context, done func() bool) error {
	for {
		if err := ctx.Err(); err != nil {
			return errors.Join(ErrSimStopped, err)
		}
		if done != nil && done() {
			return nil
		}
		f := s.next()
		if f == nil {
			return nil
		}
		f()
	}
}

// RunReady executes queued work, including work that work queues, without
// moving the clock; it returns when the queue is empty or ctx ends.
func (s *Sim) RunReady(ctx context.Context) error {
	for {
		if err := ctx.Err(); err != nil {
			return errors.Join(ErrSimStopped, err)
		}
		s.mu.Lock()
		if len(s.ready) == 0 {
			s.mu.Unlock()
			return nil
		}
		f := s.ready[0]
		s.ready[0] = nil
		s.ready = s.ready[1:]
		s.mu.Unlock()
		f()
	}
}

// FireNext moves the clock to the earliest pending timer and runs it; it
// reports false when no timer is pending. Call it when RunReady has emptied
// the queue.
func (s *Sim) FireNext() bool {
	s.mu.Lock()
	if len(s.timers) == 0 {
		s.mu.Unlock()
		return false
	}
	t := heap.Pop(&s.timers).(*simTimer)
	if t.at.After(s.now) {
		s.now = t.at
	}
	s.mu.Unlock()
	t.f()
	return true
}

// Idle reports whether nothing is queued and no timer is pending.
func (s *Sim) Idle() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.ready) == 0 && len(s.timers) == 0
}

// next pops the next piece of work: queued work first, else the earliest
// timer, moving the clock to its deadline.
func (s *Sim) next() func() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.ready) > 0 {
		f := s.ready[0]
		s.ready[0] = nil
		s.ready = s.ready[1:]
		return f
	}
	if len(s.timers) == 0 {
		return nil
	}
	t := heap.Pop(&s.timers).(*simTimer)
	if t.at.After(s.now) {
		s.now = t.at
	}
	return t.f
}

type simTimer struct {
	sim   *Sim
	at    time.Time
	seq   uint64
	f     func()
	index int // position in the heap, -1 once fired or stopped
}

// Stop removes the timer; it reports whether the timer was still pending.
func (t *simTimer) Stop() bool {
	t.sim.mu.Lock()
	defer t.sim.mu.Unlock()
	if t.index < 0 {
		return false
	}
	heap.Remove(&t.sim.timers, t.index)
	return true
}

// Reset schedules the timer again, d from the virtual clock's current
// time, as a new timer would be; it reports whether it was pending.
func (t *simTimer) Reset(d time.Duration) bool {
	s := t.sim
	s.mu.Lock()
	defer s.mu.Unlock()
	pending := t.index >= 0
	if pending {
		heap.Remove(&s.timers, t.index)
	}
	s.seq++
	t.at, t.seq = s.now.Add(d), s.seq
	heap.Push(&s.timers, t)
	return pending
}

type simHeap []*simTimer

func (h simHeap) Len() int { return len(h) }
func (h simHeap) Less(i, j int) bool {
	if !h[i].at.Equal(h[j].at) {
		return h[i].at.Before(h[j].at)
	}
	return h[i].seq < h[j].seq
}
func (h simHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index = i
	h[j].index = j
}
func (h *simHeap) Push(x any) {
	t := x.(*simTimer)
	t.index = len(*h)
	*h = append(*h, t)
}
func (h *simHeap) Pop() any {
	old := *h
	n := len(old)
	t := old[n-1]
	old[n-1] = nil
	t.index = -1
	*h = old[:n-1]
	return t
}
