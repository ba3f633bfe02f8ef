// Package clock abstracts time so that the bus and the engine can run on the wall clock in production and on a manual, fully
// deterministic clock when a scenario is replayed.
//
// Tests that only need fake time should prefer testing/synctest with Real():
// inside a synctest bubble the standard library's clock is already virtual.
package clock

import (
	"sync"
	"time"
)

// Clock tells the time and schedules callbacks.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// AfterFunc calls f in its own goroutine once d has elapsed.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a scheduled callback that can be stopped.
type Timer interface {
	// Stop prevents the callback from running; it reports whether it did.
	Stop() bool
}

// Resetter is a Timer that can be scheduled again, as a time.Timer can:
// the timers of Real, Sim and Manual are Resetters. Users of a Clock check
// for it, since a Clock of another kind may return Timers that are not.
type Resetter interface {
	Timer
	// Reset schedules the callback to run once d has elapsed from now,
	// whether or not it was pending; it reports whether it was.
	Reset(d time.Duration) bool
}

// Real returns the wall clock of package time.
func Real() Clock { return realClock{} }

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }

// Manual is a clock that only moves when told to. Callbacks scheduled on it
// run synchronously, in deadline order, inside Advance or Set. It is safe for
// concurrent use.
type Manual struct {
	mu     sync.Mutex
	now    time.Time
	seq    uint64
	timers []*manualTimer
}

// NewManual returns a manual clock that starts at start.
func NewManual(start time.Time) *Manual { return &Manual{now: start} }

type manualTimer struct {
	m       *Manual
	at      time.Time
	seq     uint64
	f       func()
	stopped bool
}

// Now returns the clock's current time.
func (m *Manual) Now() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.now
}

// AfterFunc schedules f to run when the clock has advanced by d.
func (m *Manual) AfterFunc(d time.Duration, f func()) Timer {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.seq++
	t := &manualTimer{m: m, at: m.now.Add(d), seq: m.seq, f: f}
	m.timers = append(m.timers, t)
	return t
}

// Stop cancels the timer.
func (t *manualTimer) Stop() bool {
	t.m.mu.Lock()
	defer t.m.mu.Unlock()
	if t.stopped {
		return false
	}
	t.stopped = true
	t.m.remove(t)
	return true
}

// remove takes t out of the pending timers. The caller holds m.mu.
func (m *Manual) remove(t *manualTimer) {
	for i, o := range m.timers {
		if o == t {
			m.timers = append(m.timers[:i], m.timers[i+1:]...)
			return
		}
	}
}

// Reset schedules the callback again, d from the clock's current time.
func (t *manualTimer) Reset(d time.Duration) bool {
	m := t.m
	m.mu.Lock()
	defer m.mu.Unlock()
	pending := !t.stopped
	if pending {
		m.remove(t)
	}
	m.seq++
	t.at, t.seq, t.stopped = m.now.Add(d), m.seq, false
	m.timers = append(m.timers, t)
	return pending
}

// Advance moves the clock forward by d, running every callback that falls due.
func (m *Manual) Advance(d time.Duration) { m.Set(m.Now().Add(d)) }

// Set moves the clock to t (never backwards), running every callback that
// falls due, each with the clock set to its deadline.
func (m *Manual) Set(t time.Time) {
	for {
		m.mu.Lock()
		next := m.nextDueLocked(t)
		if next == nil {
			if t.After(m.now) {
				m.now = t
			}
			m.mu.Unlock()
			return
		}
		next.stopped = true
		if next.at.After(m.now) {
			m.now = next.at
		}
		m.mu.Unlock()
		next.f()
	}
}

// NextDeadline reports the earliest pending callback's deadline, if any.
func (m *Manual) NextDeadline() (time.Time, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var best *manualTimer
	for _, tm := range m.timers {
		if best == nil || tm.at.Before(best.at) || (tm.at.Equal(best.at) && tm.seq < best.seq) {
			best = tm
		}
	}
	if best == nil {
		return time.Time{}, false
	}
	return best.at, true
}

func (m *Manual) nextDueLocked(limit time.Time) *manualTimer {
	bi := -1
	for i, tm := range m.timers {
		if tm.at.After(limit) {
			continue
		}
		if bi < 0 || tm.at.Before(m.timers[bi].at) || (tm.at.Equal(m.timers[bi].at) && tm.seq < m.timers[bi].seq) {
			bi = i
		}
	}
	if bi < 0 {
		return nil
	}
	t := m.timers[bi]
	m.timers = append(m.timers[:bi], m.timers[bi+1:]...)
	return t
}
