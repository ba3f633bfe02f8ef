package bus

import (
	"math"
	"testing"
	"time"

	"github.com/batonhq/baton/transport"
)

// TestExpiryTick_TimeLeftByTheWallClock holds expiryTick to the wall-clock
// rule it replaces (the timestamp plus the TTL, at or before now, is
// expired), counted from the send's tick, and to saturation where the
// timestamp is too far off for nanoseconds.
func TestExpiryTick_TimeLeftByTheWallClock(t *testing.T) {
	start := time.Date(2026, 11, 27, 16, 0, 0, 123456789, time.UTC)
	const now = int64(5 * time.Second) // ticks at start
	for _, tc := range []struct {
		name string
		ts   time.Time
		ttl  time.Duration
		want int64
	}{
		{"filled at the send", start, time.Hour, now + int64(time.Hour)},
		{"no ttl: the default", start, 0, now + int64(transport.DefaultTTL)},
		{"sent 10 minutes after its timestamp", start.Add(-10 * time.Minute), time.Hour, now + int64(50*time.Minute)},
		{"older than its ttl", start.Add(-2 * time.Hour), time.Hour, now - int64(time.Hour)},
		{"timestamp ahead of the clock", start.Add(90 * time.Second), time.Minute, now + int64(150*time.Second)},
		{"nanoseconds apart", start.Add(-time.Nanosecond), time.Second, now + int64(time.Second) - 1},
		{"nanoseconds carry", time.Date(2026, 11, 27, 15, 59, 59, 999999999, time.UTC), time.Second, now + int64(time.Second) - int64(123456790)},
		{"the year 1", time.Time{}.Add(time.Second), time.Hour, math.MinInt64},
		{"the year 9999", time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC), time.Hour, math.MaxInt64},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := &transport.Message{Timestamp: tc.ts, TTL: tc.ttl}
			if got := expiryTick(m, start, now); got != tc.want {
				t.Errorf("got %d, want %d", got, tc.want)
			}
		})
	}
}

// TestExpiryTick_Saturates keeps the tick of a message that expires in a
// day from wrapping around near the ends of int64.
func TestExpiryTick_Saturates(t *testing.T) {
	start := time.Date(2026, 11, 27, 16, 0, 0, 0, time.UTC)
	m := &transport.Message{Timestamp: start, TTL: 24 * time.Hour}
	if got := expiryTick(m, start, math.MaxInt64-1); got != math.MaxInt64 {
		t.Errorf("got %d, want math.MaxInt64", got)
	}
	m.Timestamp = start.Add(-48 * time.Hour)
	if got := expiryTick(m, start, math.MinInt64+1); got != math.MinInt64 {
		t.Errorf("got %d, want math.MinInt64", got)
	}
}
