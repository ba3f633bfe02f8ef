package bus

import (
	"math"
	"time"

	"github.com/batonhq/baton/transport"
)

// The bus keeps the times of its queues (when a message was queued, when
// it expires, when an ack is due) as ticks: nanoseconds since the bus was
// made. On the real clock a tick is read from the monotonic clock alone,
// which costs about half a full reading (time.Now reads the wall clock
// too; measured at best 45ns against 97ns on a loaded 2-core machine): a
// receive, which needs no wall time unless a message expired, reads only
// that. On another clock (a test's) ticks follow its readings.

// wallSync is how often, at most, the real clock's wall time is read again
// for now (see there).
const wallSync = time.Millisecond

// instant is one reading of the bus's clock: the wall time, for timestamps
// and dead letters, and its tick.
type instant struct {
	wall time.Time
	tick int64
}

// now reads the bus's clock once, for a send. On the real clock that is one
// read of the monotonic clock: the wall time is that tick plus the offset
// of the wall clock to the ticks, which is read again (time.Now) once
// wallSync has passed since it last was. A send thus reads the wall clock
// about once a millisecond rather than every time, which cost twice a
// monotonic read (measured: time.Now 97ns, this 60ns, at best on a loaded
// 2-core machine). The wall clock and the monotonic clock run at one rate
// (NTP slews both), so the wall time differs from time.Now's only when the
// wall clock is stepped, and then for at most wallSync.
func (b *Bus) now() instant {
	if !b.real {
		t := b.clock.Now()
		return instant{t, b.tickOf(t)}
	}
	tick := int64(time.Since(b.epoch))
	if tick-b.synced.Load() >= int64(wallSync) {
		return b.syncWall()
	}
	return instant{time.Unix(0, b.offset.Load()+tick), tick}
}

// syncWall reads the real clock's wall time and its tick, and keeps their
// offset for now. Concurrent calls may store their readings in any order:
// each is the offset at its time.
func (b *Bus) syncWall() instant {
	t := time.Now()
	tick := b.tickOf(t)
	b.offset.Store(t.UnixNano() - tick)
	b.synced.Store(tick)
	return instant{t, tick}
}

// tick returns the bus's time now, in ticks.
func (b *Bus) tick() int64 {
	if b.real {
		return int64(time.Since(b.epoch))
	}
	return b.tickOf(b.clock.Now())
}

// tickOf returns t, a reading of the bus's clock, in ticks (by its
// monotonic reading on the real clock: no clock is read).
func (b *Bus) tickOf(t time.Time) int64 { return int64(t.Sub(b.epoch)) }

// expiryTick returns when m, accepted at start (ticks now), expires: its
// time left by the wall clock at start (timestamp plus TTL, less start),
// counted from now, so that a step of the wall clock afterwards neither
// expires nor extends it. The time left is worked out in integers: time's
// Add and Sub on wall times (Sub checks its result with another Add and an
// Equal) cost 213 instructions a send, this 45.
func expiryTick(m *transport.Message, start time.Time, now int64) int64 {
	ttl := m.TTL
	if ttl == 0 {
		ttl = transport.DefaultTTL // as ExpiresAt
	}
	// Seconds apart beyond maxApart (136 years) would overflow below; a
	// message that far from its timestamp is long expired, or far from it.
	const maxApart = 1 << 32
	secs := start.Unix() - m.Timestamp.Unix()
	switch {
	case secs > maxApart:
		return math.MinInt64
	case secs < -maxApart:
		return math.MaxInt64
	}
	left := int64(ttl) - (secs*int64(time.Second) + int64(start.Nanosecond()-m.Timestamp.Nanosecond()))
	switch {
	case left > 0 && now > math.MaxInt64-left:
		return math.MaxInt64
	case left < 0 && now < math.MinInt64-left:
		return math.MinInt64
	}
	return now + left
}
